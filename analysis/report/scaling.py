"""Throughput vs concurrency, one panel per cell, with every ceiling the run measured drawn in:
the fio probe of the cell's layout and pool, the tmpfs gateway at each level, the iperf3
baseline, the rate a role's CPU quota allows at the CPU per byte it used, and the target.

The ceilings come from the verdicts' evidence (analysis.verdicts.attribution), so the plot shows the
figures the verdicts compared. Rates in Gb/s (10^9 bit/s) on a log axis: a 2-core test box and a
100 Gb/s target differ by two orders of magnitude, and every line stays readable.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

import numpy as np
import pandas as pd

from xcbench.analysis.report.glance import evidence_of
from xcbench.analysis.report.render import fig_to_data_uri, new_figure

# one style per kind of ceiling, the same in every panel, labelled once in the figure's legend
STYLE: dict[str, dict[str, Any]] = {
    "chain": {"color": "#1d4ed8", "lw": 2.0, "marker": "o", "ms": 5},
    "fio": {"color": "#7c3aed", "ls": "--", "lw": 1.3},
    "tmpfs": {"color": "#ea580c", "ls": "-.", "lw": 1.3, "marker": "s", "ms": 3},
    "iperf3": {"color": "#059669", "ls": ":", "lw": 1.6},
    "quota": {"color": "#b91c1c", "ls": (0, (5, 2, 1, 2)), "lw": 1.3},
    "target": {"color": "#111827", "ls": "-", "lw": 0.9},
}
NAMES = {"chain": "the chain (steady rate; bars: 95 % CI)", "fio": "fio probe of the layout and pool",
         "tmpfs": "tmpfs gateway at each level", "iperf3": "iperf3 baseline",
         "quota": "a role's CPU quota (at its CPU per byte)", "target": "target"}
QUOTA_SOURCES = ("cgroup", "cpuset")  # a limit set on the role, not the host's cores


def _ok(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float, np.floating, np.integer)) and math.isfinite(float(v))


def ceilings(verdicts: pd.DataFrame, direction: str = "write") -> dict[str, dict[str, Any]]:
    """{cell_id: {fio, iperf3, tmpfs: {level: B/s}, quota: {role: B/s}}} from the evidence."""
    out: dict[str, dict[str, Any]] = {}
    for v in verdicts.to_dict("records"):
        if (v.get("direction") if isinstance(v.get("direction"), str) else "write") != direction:
            continue
        ev = evidence_of(v.get("evidence"))
        c = out.setdefault(v["cell_id"], {"fio": None, "iperf3": None, "tmpfs": {}, "quota": {}})
        if _ok(ev.get("fio_bw")):
            c["fio"] = float(ev["fio_bw"])
        if _ok(ev.get("network_bps")):
            c["iperf3"] = float(ev["network_bps"])
        if _ok(ev.get("gateway_ceiling")):
            c["tmpfs"][float(v["concurrency"])] = float(ev["gateway_ceiling"])
        rate = ev.get("rate")
        for role, x in (ev.get("roles") or {}).items():
            src = str(x.get("source") or "")
            if not (src.startswith(QUOTA_SOURCES) and _ok(x.get("limit")) and _ok(x.get("cpu"))
                    and x["cpu"] > 0 and _ok(rate)):
                continue
            allowed = float(rate) * float(x["limit"]) / float(x["cpu"])
            c["quota"][role] = min(allowed, c["quota"].get(role, math.inf))
    return out


def plot(points: pd.DataFrame, cells: pd.DataFrame, ceil: dict[str, dict[str, Any]],
         target_bps: float, direction: str = "write") -> str | None:
    """Small multiples: one panel per cell (in ``cells``' order), every ceiling drawn."""
    p = points[points["direction"] == direction] if "direction" in points else points
    ids = [c for c in cells.index if (p["cell_id"] == c).any()]
    if not ids:
        return None
    ncols = min(3, len(ids))
    nrows = math.ceil(len(ids) / ncols)
    fig, axes = new_figure(4.3 * ncols, 2.9 * nrows + 0.7, nrows=nrows, ncols=ncols, sharey=True,
                           squeeze=False)
    gb = 8 / 1e9
    ys: list[float] = [target_bps * gb]
    used: set[str] = set()
    for ax, cid in zip(axes.flat, ids, strict=False):
        s = p[p["cell_id"] == cid].sort_values("concurrency")
        x = s["concurrency"].to_numpy(dtype=float)
        y = s["rate"].to_numpy(dtype=float) * gb
        lo = np.where(np.isfinite(s["ci_low"]), y - s["ci_low"].to_numpy(dtype=float) * gb, 0)
        hi = np.where(np.isfinite(s["ci_high"]), s["ci_high"].to_numpy(dtype=float) * gb - y, 0)
        ax.errorbar(x, y, yerr=[np.maximum(lo, 0), np.maximum(hi, 0)], capsize=3, **STYLE["chain"])
        used.add("chain")
        ys += [v for v in y if v > 0]
        c = ceil.get(cid, {})
        for kind in ("fio", "iperf3"):
            if c.get(kind):
                ax.axhline(c[kind] * gb, **STYLE[kind])
                ys.append(c[kind] * gb)
                used.add(kind)
        if c.get("tmpfs") and cells.loc[cid, "backend"] != "tmpfs":
            lv = sorted(c["tmpfs"])
            ax.plot(lv, [c["tmpfs"][k] * gb for k in lv], **STYLE["tmpfs"])
            ys += [c["tmpfs"][k] * gb for k in lv]
            used.add("tmpfs")
        for role, v in (c.get("quota") or {}).items():
            ax.axhline(v * gb, **STYLE["quota"])
            ax.annotate(f"{role} quota", (1.0, v * gb), xycoords=("axes fraction", "data"),
                        ha="right", va="bottom", fontsize=7, color=STYLE["quota"]["color"])
            ys.append(v * gb)
            used.add("quota")
        ax.axhline(target_bps * gb, **STYLE["target"])
        levels = sorted(set(x))
        if levels and max(levels) / max(min(levels), 1) >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xticks(levels, [str(int(v)) for v in levels])
        ax.set_title(str(cells.loc[cid, "label"]), fontsize=8.5)
        ax.set_xlabel("concurrency (transfers in flight)", fontsize=8)
    for ax in axes.flat[len(ids):]:
        ax.set_visible(False)
    ax0 = axes[0][0]
    ax0.set_yscale("log")
    good = [v for v in ys if v > 0 and math.isfinite(v)]
    ax0.set_ylim(min(good) / 1.6, max(good) * 1.6)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax0.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax0.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax0.yaxis.set_minor_formatter(NullFormatter())
    for row in axes:
        row[0].set_ylabel("rate (Gb/s, log)", fontsize=8)
    from matplotlib.lines import Line2D
    names = dict(NAMES, target=f"target {target_bps * gb:g} Gb/s")
    handles = [Line2D([], [], **{k: v for k, v in STYLE[k2].items() if k != "capsize"}, label=names[k2])
               for k2 in STYLE if k2 in used or k2 == "target"]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    return fig_to_data_uri(fig)
