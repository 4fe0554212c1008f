"""Throughput vs concurrency, one panel per cell, with every ceiling the run measured drawn in:
the fio probe of the cell's layout and pool (bandwidth, and IOPS at the chain's bytes per op
where that counts), the tmpfs gateway at each level, the iperf3 baseline, the rate a role's CPU
quota allows and the rate the host's cores allow at the CPU per byte used, the replicated twin
of an EC cell, and the target. Each point is coloured and labelled by its verdict, and the
ceiling that decided it is marked (a hollow diamond on that ceiling, a dotted line to it).

The ceilings come from the verdicts' evidence (analysis.verdicts.attribution), so the plot shows the
figures the verdicts compared. Rates in Gb/s (10^9 bit/s) on a log axis that spans the chain's rates and
the ceilings that decided them: a ceiling far off (a 100 Gb/s target, iperf3 over loopback on a
2-core box) is named in the legend with its figure, not drawn at the edge of an axis it stretches.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from xcbench.analysis.report.glance import evidence_of
from xcbench.analysis.report.plotlabels import place
from xcbench.analysis.report.render import fig_to_data_uri, new_figure
from xcbench.figures.numbers import is_finite

# one style per kind of ceiling, the same in every panel, labelled once in the figure's legend
STYLE: dict[str, dict[str, Any]] = {
    "chain": {"color": "#1d4ed8", "lw": 2.0, "marker": "o", "ms": 5},
    "fio": {"color": "#7c3aed", "ls": "--", "lw": 1.3},
    "tmpfs": {"color": "#ea580c", "ls": "-.", "lw": 1.3, "marker": "s", "ms": 3},
    "iperf3": {"color": "#059669", "ls": ":", "lw": 1.6},
    "quota": {"color": "#b91c1c", "ls": (0, (5, 2, 1, 2)), "lw": 1.3},
    "iops": {"color": "#6d28d9", "ls": (0, (1, 1.5)), "lw": 1.4, "marker": "v", "ms": 3},
    "host": {"color": "#92400e", "ls": (0, (4, 1.5)), "lw": 1.2, "marker": "^", "ms": 3},
    "rep": {"color": "#be185d", "ls": (0, (2, 2)), "lw": 1.2, "marker": "D", "ms": 2.5},
    "target": {"color": "#111827", "ls": "-", "lw": 0.9},
}
NAMES = {"chain": "the chain (steady rate; bars: 95 % CI)", "fio": "fio probe of the layout and pool",
         "tmpfs": "tmpfs gateway at each level", "iperf3": "iperf3 baseline",
         "quota": "a role's CPU quota (at its CPU per byte)",
         "iops": "fio IOPS at the chain's bytes per op", "host": "host's cores (at the CPU per byte used)",
         "rep": "replicated twin (EC cells)", "target": "target"}
# a verdict's colour, the same as the report's grid (base.html.j2 .b-*)
VERDICT_COLORS = {"gateway": "#e8833a", "storage-bandwidth": "#3b82f6", "storage-iops": "#7c5cff",
                  "ec-overhead": "#e0457b", "host-cpu": "#f59e0b", "client": "#22a35a", "concurrency": "#65a30d",
                  "network": "#d4b106", "inconclusive": "#9ca3af", "storage-network": "#0891b2",
                  "storage-disk": "#0f766e", "storage-host-cpu": "#a16207"}
RUN_STYLES = ({"ls": "-", "marker": "o"}, {"ls": "--", "marker": "s"}, {"ls": ":", "marker": "^"},
              {"ls": "-.", "marker": "P"})
RUN_LINES = ("#374151", "#0e7490", "#7e22ce", "#4d7c0f")
QUOTA_SOURCES = ("cgroup", "cpuset")  # a limit set on the role, not the host's cores


def ceilings(verdicts: pd.DataFrame, direction: str = "write") -> dict[str, dict[str, Any]]:
    """{cell_id: {fio, iperf3, tmpfs|iops|host|rep: {level: B/s}, quota: {role: B/s},
    verdict: {level: name}, decided: {level: (B/s, what)}}} from the evidence."""
    out: dict[str, dict[str, Any]] = {}
    for v in verdicts.to_dict("records"):
        if v["direction"] != direction:
            continue
        ev = evidence_of(v.get("evidence"))
        c = out.setdefault(v["cell_id"], {"fio": None, "iperf3": None, "tmpfs": {}, "quota": {},
                                          "iops": {}, "host": {}, "rep": {}, "verdict": {}, "decided": {}})
        level = float(v["concurrency"])
        c["verdict"][level] = str(v.get("verdict") or "inconclusive")
        d = decided(c["verdict"][level], ev)
        if d:
            c["decided"][level] = d
        r, u = ev.get("rate"), ev.get("utilisation") or {}
        if is_finite(r) and is_finite(u.get("storage-iops")) and u["storage-iops"] > 0:
            c["iops"][level] = float(r) / float(u["storage-iops"])
        if is_finite(r) and is_finite(ev.get("host_busy")) and ev["host_busy"] > 0:
            c["host"][level] = float(r) / float(ev["host_busy"])
        if is_finite(ev.get("rep_rate")):
            c["rep"][level] = float(ev["rep_rate"])
        if is_finite(ev.get("fio_bw")):
            c["fio"] = float(ev["fio_bw"])
        if is_finite(ev.get("network_bytes_per_s")):
            c["iperf3"] = float(ev["network_bytes_per_s"])
        if is_finite(ev.get("gateway_ceiling")):
            c["tmpfs"][float(v["concurrency"])] = float(ev["gateway_ceiling"])
        rate = ev.get("rate")
        for role, x in (ev.get("roles") or {}).items():
            src = str(x.get("source") or "")
            if not (src.startswith(QUOTA_SOURCES) and is_finite(x.get("limit")) and is_finite(x.get("cpu"))
                    and x["cpu"] > 0 and is_finite(rate)):
                continue
            allowed = float(rate) * float(x["limit"]) / float(x["cpu"])
            c["quota"][role] = min(allowed, c["quota"].get(role, math.inf))
    return out




def decided(verdict: str, ev: dict[str, Any]) -> tuple[float, str] | None:
    """(B/s, what) of the ceiling that decided ``verdict``, in rate terms: the rate over the
    deciding utilisation (analysis.verdicts.attribution's figures); None for a verdict no ceiling decided
    (client concurrency, inconclusive, a storage host seen through Prometheus)."""
    r, u = ev.get("rate"), ev.get("utilisation") or {}
    if not is_finite(r) or r <= 0:
        return None
    role = ev.get("limited_role")
    x = (ev.get("roles") or {}).get(role) if role else None
    if x and is_finite(x.get("cpu")) and is_finite(x.get("limit")) and x["cpu"] > 0:
        return float(r) * float(x["limit"]) / float(x["cpu"]), f"{role} CPU limit"
    link = ev.get("link_use")
    pick: dict[str, tuple[Any, str]] = {
        "network": ((float(r) / link) if is_finite(link) and link >= (ev.get("thresholds") or {}).get("near", 0.85)
                    and link > 0 else ev.get("network_bytes_per_s"), "shaped link" if is_finite(link) else "iperf3"),
        "storage-iops": ((float(r) / u["storage-iops"]) if is_finite(u.get("storage-iops")) and u["storage-iops"] > 0
                         else None, "fio IOPS"),
        "storage-bandwidth": (ev.get("fio_bw"), "fio bandwidth"),
        "ec-overhead": (ev.get("rep_rate"), "replicated twin"),
        "host-cpu": ((float(r) / ev["host_busy"]) if is_finite(ev.get("host_busy")) and ev["host_busy"] > 0
                     else None, "host CPU"),
    }
    if verdict == "gateway":
        g, cpu = ev.get("gateway_ceiling"), ev.get("cpu")
        if is_finite(g) and g > 0 and (not is_finite(cpu) or float(r) / g >= cpu):
            pick["gateway"] = (g, "tmpfs gateway")
        elif is_finite(cpu) and cpu > 0:
            pick["gateway"] = (float(r) / cpu, "gateway CPU")
    value, what = pick.get(verdict, (None, ""))
    return (float(value), what) if is_finite(value) and value > 0 else None


def plot(points: pd.DataFrame, cells: pd.DataFrame, ceil: dict[str, dict[str, Any]],
         target_bytes_per_s: float, direction: str = "write") -> str | None:
    """Small multiples: one panel per cell (in ``cells``' order), every ceiling drawn."""
    fig = figure([("", points, ceil)], cells, target_bytes_per_s, direction)
    return fig_to_data_uri(fig) if fig is not None else None


def overlay(runs: list[tuple[str, pd.DataFrame, dict[str, dict[str, Any]]]], cells: pd.DataFrame,
            target_bytes_per_s: float, direction: str = "write") -> str | None:
    """Several runs in one figure: a panel per cell of any run, each run's chain in its own
    line and marker, the ceilings of the first run (the base)."""
    fig = figure(runs, cells, target_bytes_per_s, direction)
    return fig_to_data_uri(fig) if fig is not None else None


def _has_ci(s: pd.DataFrame) -> bool:
    return bool((np.isfinite(s["ci_low"].to_numpy(dtype=float)) & np.isfinite(s["ci_high"].to_numpy(dtype=float))
                 & (s["ci_high"].to_numpy(dtype=float) > s["ci_low"].to_numpy(dtype=float))).any())


def figure(runs: list[tuple[str, pd.DataFrame, dict[str, dict[str, Any]]]], cells: pd.DataFrame,
           target_bytes_per_s: float, direction: str = "write"):
    """The figure of :func:`plot` / :func:`overlay` (None when no run has a point)."""
    from matplotlib.lines import Line2D
    pts = [(name, p[p["direction"] == direction], c) for name, p, c in runs]
    ids = [c for c in cells.index if any((p["cell_id"] == c).any() for _, p, _ in pts)]
    if not ids:
        return None
    ncols = min(3, len(ids))
    nrows = math.ceil(len(ids) / ncols)
    fig, axes = new_figure(4.3 * ncols, 3.0 * nrows + 1.0, nrows=nrows, ncols=ncols, sharey=True,
                           squeeze=False)
    gb = 8 / 1e9
    ys: list[float] = []  # the axis spans the chain's rates and the ceilings that decided them
    flat: dict[str, list[float]] = {"target": [target_bytes_per_s * gb]}  # level-wide lines, in Gb/s
    used: set[str] = set()
    verdicts: dict[str, None] = {}
    ci_any, marked = False, False
    labels: list[dict[str, Any]] = []
    base = pts[0][2]
    for ax, cid in zip(axes.flat, ids, strict=False):
        c = base.get(cid, {})
        levels: set[float] = set()
        panel_levels = {float(x) for _, p, _ in pts for x in p.loc[p["cell_id"] == cid, "concurrency"]}
        for kind in ("fio", "iperf3"):
            if c.get(kind):
                ax.axhline(c[kind] * gb, **STYLE[kind])
                flat.setdefault(kind, []).append(c[kind] * gb)
                used.add(kind)
        for kind in ("tmpfs", "iops", "host", "rep"):
            line = c.get(kind) or {}
            if not line or (kind == "tmpfs" and cells.loc[cid, "backend"] == "tmpfs"):
                continue
            lv = sorted(line)
            if len(lv) == 1 and len(panel_levels) > 1:  # known at one level of several: a marker
                ax.plot(lv, [line[lv[0]] * gb], ls="none", marker=STYLE[kind].get("marker", "o"), ms=5,
                        color=STYLE[kind]["color"])
            elif len(lv) == 1:  # a one-level panel: a short segment, not a lone marker under the point
                st = {k: v for k, v in STYLE[kind].items() if k not in ("marker", "ms")}
                ax.hlines(line[lv[0]] * gb, lv[0] * 0.8, lv[0] * 1.25, colors=st.pop("color"),
                          linestyles=st.pop("ls", "-"), **st)
            else:
                ax.plot(lv, [line[k] * gb for k in lv], **STYLE[kind])
            used.add(kind)
        for role, v in (c.get("quota") or {}).items():
            ax.axhline(v * gb, **STYLE["quota"])
            ax.annotate(f"{role} quota", (1.0, v * gb), xycoords=("axes fraction", "data"),
                        ha="right", va="bottom", fontsize=7, color=STYLE["quota"]["color"],
                        annotation_clip=True)
            flat.setdefault("quota", []).append(v * gb)
            used.add("quota")
        ax.axhline(target_bytes_per_s * gb, **STYLE["target"])
        for i, (_name, p, ceil) in enumerate(pts):
            s = p[p["cell_id"] == cid].sort_values("concurrency")
            if s.empty:
                continue
            x = s["concurrency"].to_numpy(dtype=float)
            y = s["rate"].to_numpy(dtype=float) * gb
            levels |= set(x)
            st = RUN_STYLES[i % len(RUN_STYLES)]
            line_color = RUN_LINES[i % len(RUN_LINES)]
            if _has_ci(s):
                lo = np.where(np.isfinite(s["ci_low"]), y - s["ci_low"].to_numpy(dtype=float) * gb, 0)
                hi = np.where(np.isfinite(s["ci_high"]), s["ci_high"].to_numpy(dtype=float) * gb - y, 0)
                ax.errorbar(x, y, yerr=[np.maximum(lo, 0), np.maximum(hi, 0)], fmt="none", capsize=3,
                            ecolor=line_color, elinewidth=1, zorder=3)
                ci_any = True
            ax.plot(x, y, color=line_color, lw=1.8, ls=st["ls"], zorder=3)
            used.add("chain")
            ys += [v for v in y if v > 0]
            cc = ceil.get(cid, {})
            for xi, yi in zip(x, y, strict=True):
                verdict = (cc.get("verdict") or {}).get(float(xi), "inconclusive")
                color = VERDICT_COLORS.get(verdict, "#6b7280")
                verdicts[verdict] = None
                ax.plot([xi], [yi], ls="none", marker=st["marker"], ms=7, mfc=color, mec="black",
                        mew=0.6, zorder=5)
                dec = (cc.get("decided") or {}).get(float(xi))
                if dec and yi > 0:
                    ax.plot([xi, xi], [yi, dec[0] * gb], color=color, ls=":", lw=1.1, zorder=4)
                    ax.plot([xi], [dec[0] * gb], ls="none", marker="D", ms=7, mfc="none", mec=color,
                            mew=1.6, zorder=5)
                    ys.append(dec[0] * gb)
                    marked = True
                if yi > 0:
                    labels.append({"ax": ax, "xy": (xi, yi), "text": verdict, "color": "black",
                                   "bg": _tint(color)})
        lv = sorted(levels)
        if lv and max(lv) / max(min(lv), 1) >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xticks(lv, [str(int(v)) for v in lv])
        if len(lv) == 1:
            ax.set_xlim(lv[0] * 0.6, lv[0] * 1.4)
        ax.set_title(str(cells.loc[cid, "label"]), fontsize=8.5)
        ax.set_xlabel("concurrency (transfers in flight)", fontsize=8)
    for ax in axes.flat[len(ids):]:
        ax.set_visible(False)
    ax0 = axes[0][0]
    ax0.set_yscale("log")
    good = [v for v in ys if v > 0 and math.isfinite(v)] or \
        [v for vs in flat.values() for v in vs if v > 0 and math.isfinite(v)]
    y_lo, y_hi = min(good) / 2.2, max(good) * 2.2  # room above and below for the verdict labels
    ax0.set_ylim(y_lo, y_hi)
    # a ceiling far from the data (the target, iperf3 over loopback) is named, not drawn: the
    # axis stays on the data
    off = {k: [v for v in vs if not y_lo <= v <= y_hi] for k, vs in flat.items()}
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax0.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax0.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax0.yaxis.set_minor_formatter(NullFormatter())
    for row in axes:
        row[0].set_ylabel("rate (Gb/s, log)", fontsize=8)
    names = dict(NAMES, target=f"target {target_bytes_per_s * gb:g} Gb/s")
    for k, vs in off.items():
        if vs and len(vs) == len(flat[k]):  # every line of the kind off the plot
            where = "above" if min(vs) > y_hi else "below"
            figs = ", ".join(f"{v:.3g}" for v in sorted(set(vs)))
            names[k] = (f"target {figs} Gb/s" if k == "target" else f"{names[k]}: {figs} Gb/s") + \
                f", {where} the plot"
            used.add(k)
    if not ci_any:
        names["chain"] = "the chain (steady rate; one repeat or no spread: no CI bars)"
    handles = []
    if len(pts) > 1:
        handles += [Line2D([], [], color=RUN_LINES[i % len(RUN_LINES)], ls=RUN_STYLES[i % len(RUN_STYLES)]["ls"],
                           marker=RUN_STYLES[i % len(RUN_STYLES)]["marker"], mfc="white", mec="black",
                           lw=1.8, label=f"run {name}" + (" (its ceilings drawn)" if i == 0 else ""))
                    for i, (name, _, _) in enumerate(pts)]
        used.discard("chain")
    handles += [Line2D([], [], **{k: v for k, v in STYLE[k2].items()}, label=names[k2])
                for k2 in STYLE if (k2 in used or k2 == "target") and k2 != "chain"]
    if "chain" in used:
        handles.insert(0, Line2D([], [], color=RUN_LINES[0], lw=1.8, marker="o", mfc="white", mec="black",
                                 label=names["chain"]))
    if marked:
        handles.append(Line2D([], [], ls="none", marker="D", ms=7, mfc="none", mec="black", mew=1.4,
                              label="the ceiling that decided the point's verdict"))
    handles += [Line2D([], [], ls="none", marker="o", ms=7, mfc=VERDICT_COLORS.get(v, "#6b7280"), mec="black",
                       mew=0.6, label=f"verdict: {v}") for v in verdicts]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    place(fig, labels)
    return fig


def _tint(color: str) -> tuple[float, float, float]:
    """A verdict's colour lightened for a label's background (black text stays readable)."""
    from matplotlib.colors import to_rgb
    r, g, b = to_rgb(color)
    return (1 - 0.45 * (1 - r), 1 - 0.45 * (1 - g), 1 - 0.45 * (1 - b))
