"""Report plots (matplotlib Agg + seaborn style), each returned as a PNG data URI.

Every axis says its unit. Inputs are the summaries of analysis.dataset.RunData, never raw
tables, so a plot shows exactly the figures the tables next to it list (and their sources).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from xcbench.analysis.render import GIB, fig_to_data_uri, new_figure

MIB = float(1 << 20)
BACKENDS = ("tmpfs", "cephfs", "rados")
MAX_POINTS = 1500  # per line: more only costs rendering time


def _palette(n: int):
    import seaborn as sns
    return sns.color_palette("tab10" if n <= 10 else "husl", max(n, 1))


def _thin(x: np.ndarray, *ys: np.ndarray):
    if x.size <= MAX_POINTS:
        return (x, *ys)
    step = int(math.ceil(x.size / MAX_POINTS))
    return (x[::step], *(y[::step] for y in ys))


def throughput_vs_concurrency(points: pd.DataFrame, cells: pd.DataFrame) -> str | None:
    """Steady rate (GiB/s, CI bars over repeats) vs concurrency, one panel per backend."""
    if points.empty:
        return None
    p = points.merge(cells[["label", "backend"]], left_on="cell_id", right_index=True, how="left")
    backends = [b for b in BACKENDS if (p["backend"] == b).any()] + \
        sorted(set(p["backend"].dropna()) - set(BACKENDS))
    fig, axes = new_figure(4.2 * len(backends) + 1.5, 3.8, ncols=len(backends), sharey=True,
                           squeeze=False)
    for ax, backend in zip(axes[0], backends, strict=True):
        sub = p[p["backend"] == backend]
        labels = list(dict.fromkeys(sub["label"]))
        for color, label in zip(_palette(len(labels)), labels, strict=False):
            s = sub[sub["label"] == label].sort_values("concurrency")
            y = s["rate"].to_numpy(dtype=float) / GIB
            lo = np.where(np.isfinite(s["ci_low"]), y - s["ci_low"] / GIB, 0)
            hi = np.where(np.isfinite(s["ci_high"]), s["ci_high"] / GIB - y, 0)
            ax.errorbar(s["concurrency"], y, yerr=[np.maximum(lo, 0), np.maximum(hi, 0)], marker="o",
                        ms=4, capsize=3, lw=1.4, color=color, label=label.removeprefix(backend + " "))
        levels = sorted(set(sub["concurrency"]))
        if levels and max(levels) / max(min(levels), 1) >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xticks(levels, [str(int(c)) for c in levels])
        ax.set_title(backend)
        ax.set_xlabel("concurrency (transfers in flight)")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False,
                  ncol=1 if len(labels) > 4 else 2)
    axes[0][0].set_ylabel("steady rate (GiB/s)")
    axes[0][0].set_ylim(bottom=0)
    return fig_to_data_uri(fig)


def cell_timeline(timeline: pd.DataFrame, steady: pd.DataFrame, telemetry: dict[str, pd.DataFrame],
                  title: str, cores: float = math.nan, roles: dict | None = None) -> str | None:
    """Rate over the cell's campaigns with each steady window shaded; telemetry underneath.
    ``telemetry``: {"gateway cores": df(wall, value), "host busy": ..., "pool write op/s": ...}.
    ``roles``: {role: (cpu df, limit df)} (analysis.roles.role_series): each role's CPU against
    its limit (dashed, same colour; an unknown limit is drawn as none and says so)."""
    if timeline.empty:
        return None
    t0 = float(timeline["wall"].min())
    panels = [k for k, v in telemetry.items() if v is not None and not v.empty]
    roles = {r: v for r, v in (roles or {}).items() if v[0] is not None and not v[0].empty}
    ratios = [2.2] + [1.0] * (1 if any(k != "pool write op/s" for k in panels) else 0) + \
        [1.2] * bool(roles) + [1.0] * ("pool write op/s" in panels)
    fig, axes = new_figure(9.5, 2.2 + 1.3 * (len(ratios) - 1), nrows=len(ratios), sharex=True,
                           squeeze=False, gridspec_kw={"height_ratios": ratios})
    axes = axes[:, 0]
    ax = axes[0]
    levels = sorted(set(timeline["concurrency"].dropna()))
    colors = dict(zip(levels, _palette(len(levels)), strict=False))
    for (conc, _camp), g in timeline.groupby(["concurrency", "campaign_id"], sort=False):
        x, y = _thin(g["wall"].to_numpy(dtype=float) - t0, g["rate"].to_numpy(dtype=float) / GIB)
        ax.plot(x, y, color=colors.get(conc), lw=1.1)
    for r in steady.itertuples():
        ax.axvspan(r.wall_start - t0, r.wall_end - t0, color=colors.get(r.concurrency), alpha=0.15, lw=0)
    handles = [__import__("matplotlib.patches", fromlist=["Patch"]).Patch(color=colors[c], alpha=0.6,
                                                                          label=f"{int(c)} in flight")
               for c in levels]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              title="concurrency\n(shaded: steady)", title_fontsize=7, frameon=False)
    ax.set_ylabel("rate (GiB/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    i = 1
    cpu = [(k, telemetry[k]) for k in ("gateway cores", "host busy") if k in panels]
    if cpu:
        a = axes[i]
        known = math.isfinite(cores)
        for (k, df), c in zip(cpu, ("tab:red", "tab:gray"), strict=False):
            x, y = _thin(df["wall"].to_numpy(dtype=float) - t0, df["value"].to_numpy(dtype=float))
            if k == "host busy":  # a fraction of the host: in cores when the core count is known
                a.plot(x, y * (cores if known else 100), color=c, lw=1, label="host, all processes")
            else:
                a.plot(x, y if known else y * 100, color=c, lw=1, label="gateway processes")
        if known:
            a.axhline(cores, color="black", ls=":", lw=1, label=f"host capacity ({cores:g} cores)")
        a.set_ylabel("CPU (cores busy)" if known else "CPU (%)")
        a.set_ylim(bottom=0)
        a.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        i += 1
    if roles:
        _role_panel(axes[i], roles, t0)
        i += 1
    if "pool write op/s" in panels:
        a = axes[i]
        df = telemetry["pool write op/s"]
        x, y = _thin(df["wall"].to_numpy(dtype=float) - t0, df["value"].to_numpy(dtype=float))
        a.plot(x, y, color="tab:purple", lw=1)
        a.set_ylabel("pool write (op/s)")
        a.set_ylim(bottom=0)
    axes[-1].set_xlabel("time since the cell's first campaign (s)")
    return fig_to_data_uri(fig, dpi=90)


def _role_panel(a, roles: dict, t0: float) -> None:
    """Each role's CPU (solid) and its CPU limit (dashed, same colour) in cores; the y range
    ends above the busiest role and the tightest limit (higher limits are in the legend)."""
    top, tight = 0.0, math.inf
    for (role, (cpu, lim)), c in zip(roles.items(), _palette(len(roles)), strict=False):
        x, y = _thin(cpu["wall"].to_numpy(dtype=float) - t0, cpu["value"].to_numpy(dtype=float))
        label = role
        if lim is not None and not lim.empty:
            v = lim["value"].to_numpy(dtype=float)
            if np.isfinite(v).any():
                tight = min(tight, float(np.nanmin(v)))
                lx, ly = _thin(lim["wall"].to_numpy(dtype=float) - t0, v)
                a.step(lx, ly, where="post", color=c, ls="--", lw=1)
                src = str((lim["labels"].iloc[-1] or {}).get("source", ""))
                label += f" (limit {np.nanmax(v):g}: {src.split(' at ')[0][:40]})"
            else:
                label += " (limit unknown)"
        a.plot(x, y, color=c, lw=1, label=label)
        if np.isfinite(y).any():
            top = max(top, float(np.nanmax(y)))
    a.set_ylabel("role CPU (cores)")
    a.set_ylim(0, max(top * 1.3, (tight * 1.15) if math.isfinite(tight) else 0, 0.1))
    a.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
             title="solid: busy, dashed: limit", title_fontsize=6)


def transfer_distributions(q: pd.DataFrame, labels: dict[str, str]) -> str | None:
    """Per-transfer throughput (MiB/s): box q25-q75, median, whiskers q05-q95."""
    if q.empty:
        return None
    stats = [{"label": f"{labels.get(r.cell_id, r.cell_id)} c={int(r.concurrency)}"
              + ("" if getattr(r, "direction", "write") == "write" else f" {r.direction}"),
              "med": r.q50 / MIB, "q1": r.q25 / MIB, "q3": r.q75 / MIB, "whislo": r.q05 / MIB,
              "whishi": r.q95 / MIB, "mean": r.mean / MIB, "fliers": []} for r in q.itertuples()]
    fig, ax = new_figure(9.0, 0.8 + 0.28 * len(stats))
    ax.bxp(stats, orientation="horizontal", showmeans=True, showfliers=False,
           meanprops={"marker": "d", "markersize": 4, "markerfacecolor": "white"})
    ax.invert_yaxis()
    ax.set_xlabel("per-transfer throughput (MiB/s); box 25-75 %, whiskers 5-95 %, ◆ mean")
    ax.tick_params(axis="y", labelsize=7)
    return fig_to_data_uri(fig)


def fio_iops(jobs: pd.DataFrame, labels: dict[str, str]) -> str | None:
    """fio IOPS per cell (layout and pool) and job (RunData.probe_jobs), log scale."""
    if jobs.empty:
        return None
    per = jobs.assign(job=(jobs["job"] + " " + jobs["rw"].where(jobs["rw"] != jobs["job"], "")).str.strip())
    per = per[per["iops"].notna() & (per["iops"] > 0)]
    if per.empty:
        return None
    cells = list(dict.fromkeys(per["cell_id"]))
    jobs = list(dict.fromkeys(per["job"]))
    fig, ax = new_figure(max(6.0, 0.55 * len(cells) * max(1, len(jobs)) ** 0.5 + 3), 4.2)
    width = 0.8 / len(jobs)
    x = np.arange(len(cells))
    for j, (job, color) in enumerate(zip(jobs, _palette(len(jobs)), strict=False)):
        s = per[per["job"] == job].set_index("cell_id")["iops"].reindex(cells)
        ax.bar(x + (j - (len(jobs) - 1) / 2) * width, s.to_numpy(dtype=float), width, label=job, color=color)
    ax.set_yscale("log")
    ax.set_xticks(x, [labels.get(c, c) for c in cells], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("fio IOPS (op/s, log scale)")
    ax.legend(fontsize=7, title="fio job", title_fontsize=7)
    return fig_to_data_uri(fig)
