"""Report plots (matplotlib Agg + seaborn style), each returned as a PNG data URI.

Every axis says its unit. Inputs are the summaries of analysis.verdicts.run_data.RunData, never raw
tables, so a plot shows exactly the figures the tables next to it list (and their sources).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from xcbench.analysis.report.render import fig_to_data_uri, new_figure
from xcbench.figures.units import gbps

MAX_POINTS = 1500  # per line: more only costs rendering time


def _palette(n: int):
    import seaborn as sns
    return sns.color_palette("tab10" if n <= 10 else "husl", max(n, 1))


def _thin(x: np.ndarray, *ys: np.ndarray):
    if x.size <= MAX_POINTS:
        return (x, *ys)
    step = int(math.ceil(x.size / MAX_POINTS))
    return (x[::step], *(y[::step] for y in ys))


# one colour per role in every plot of the report (and the gateway's CPU line is the gateway's)
ROLE_COLORS = {"gateway": "#ea580c", "mount": "#a16207", "client": "#2563eb", "osd": "#059669",
               "mds": "#7c3aed", "mgr": "#db2777", "mon": "#0891b2", "probe": "#6b7280"}
OTHER_ROLES = ("#9333ea", "#65a30d", "#0f766e", "#be123c")


def role_color(role: str) -> str:
    if role in ROLE_COLORS:
        return ROLE_COLORS[role]
    return OTHER_ROLES[sum(map(ord, role)) % len(OTHER_ROLES)]  # stable across cells and runs


def _trim(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Buckets from the first to the last that moved bytes: a level's line ends where its last
    transfer ended, not in a drop to 0 after it (an empty bucket inside a level stays)."""
    moved = np.flatnonzero(np.nan_to_num(y) > 0)
    if not moved.size:
        return x[:0], y[:0]
    return x[moved[0]:moved[-1] + 1], y[moved[0]:moved[-1] + 1]


def cell_timeline(timeline: pd.DataFrame, steady: pd.DataFrame, telemetry: dict[str, pd.DataFrame],
                  title: str, cores: float = math.nan, roles: dict | None = None,
                  extra: Sequence[Callable[[Any, float], None]] = ()) -> str | None:
    """The PNG data URI of :func:`timeline_figure` (None without a timeline)."""
    fig = timeline_figure(timeline, steady, telemetry, title, cores, roles, extra)
    return fig_to_data_uri(fig, dpi=110) if fig is not None else None


NOT_STEADY = ("whole", "not steady")  # figures.steady: no steady window, or the maximum came first


def timeline_figure(timeline: pd.DataFrame, steady: pd.DataFrame, telemetry: dict[str, pd.DataFrame],
                    title: str, cores: float = math.nan, roles: dict | None = None,
                    extra: Sequence[Callable[[Any, float], None]] = ()):
    """Rate over the cell's campaigns (Gb/s) with each steady window shaded; telemetry underneath.
    ``telemetry``: {"gateway cores": df(wall, value), "host busy": ..., "pool write op/s": ...}.
    ``roles``: {role: (cpu df, limit df)} (analysis.verdicts.roles.role_series): each role's CPU in its own
    colour (the same in every cell); each distinct limit drawn once, dashed, and labelled once
    (roles sharing the host's cores share one line); an unknown limit is said in the legend.
    ``extra``: more panels under these on the same time axis, each drawn by ``f(ax, t0)``
    (analysis.report.storageplots.panels: the storage hosts as Prometheus saw them)."""
    if timeline.empty:
        return None
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    t0 = float(timeline["wall"].min())
    panels = [k for k, v in telemetry.items() if v is not None and not v.empty]
    roles = {r: v for r, v in (roles or {}).items() if v[0] is not None and not v[0].empty}
    # with role telemetry one CPU panel: each role, the host's total and each limit once;
    # without it (older runs) the gateway's and the host's CPU
    cpu = [] if roles else [(k, telemetry[k]) for k in ("gateway cores", "host busy") if k in panels]
    host = telemetry.get("host busy") if roles and "host busy" in panels else None
    ratios = [2.0] + [1.1] * bool(cpu) + [1.5] * bool(roles) + [1.0] * ("pool write op/s" in panels) \
        + [1.1] * len(extra)
    fig, axes = new_figure(9.0, 2.0 + 1.25 * (len(ratios) - 1) + 0.5, nrows=len(ratios), sharex=True,
                           squeeze=False, gridspec_kw={"height_ratios": ratios})
    axes = axes[:, 0]
    ax = axes[0]
    levels = sorted(set(timeline["concurrency"].dropna()))
    colors = dict(zip(levels, _level_palette(len(levels)), strict=False))
    for (conc, _camp), g in timeline.groupby(["concurrency", "campaign_id"], sort=False):
        g = g.sort_values("wall")
        x, y = _trim(g["wall"].to_numpy(dtype=float) - t0, g["rate"].to_numpy(dtype=float) * 8 / 1e9)
        x, y = _thin(x, y)
        ax.plot(x, y, color=colors.get(conc), lw=1.3)
    unsteady = False
    for r in steady.itertuples():
        if str(getattr(r, "method", "")) in NOT_STEADY:  # the window the rate is over, not a steady one
            ax.axvspan(r.wall_start - t0, r.wall_end - t0, facecolor="none", edgecolor=colors.get(r.concurrency),
                       hatch="//", alpha=0.5, lw=0)
            unsteady = True
        else:
            ax.axvspan(r.wall_start - t0, r.wall_end - t0, color=colors.get(r.concurrency), alpha=0.15, lw=0)
    ax.set_ylabel("rate\n(Gb/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    handles: list = [Patch(color=colors[c], alpha=0.5, label=f"{int(c)} in flight (shaded: steady)")
                     for c in levels]
    if unsteady:
        handles.append(Patch(facecolor="none", edgecolor="#4b5563", hatch="//",
                             label="hatched: not steady (the rate's window, † in the tables)"))
    i = 1
    if cpu:
        a = axes[i]
        known = math.isfinite(cores)
        for k, df in cpu:
            x, y = _thin(df["wall"].to_numpy(dtype=float) - t0, df["value"].to_numpy(dtype=float))
            if k == "host busy":  # a fraction of the host: in cores when the core count is known
                a.plot(x, y * (cores if known else 100), color="#374151", lw=1.1)
                handles.append(Line2D([], [], color="#374151", lw=1.1, label="host CPU, all processes"))
            else:
                a.plot(x, y if known else y * 100, color=role_color("gateway"), lw=1.1, ls="-")
                handles.append(Line2D([], [], color=role_color("gateway"), lw=1.1,
                                      label="gateway processes' CPU"))
        if known:
            a.axhline(cores, color="black", ls=":", lw=1)
            a.annotate(f"host: {cores:g} cores", (1.0, cores), xycoords=("axes fraction", "data"),
                       ha="right", va="bottom", fontsize=7)
        a.set_ylabel("CPU\n(cores)" if known else "CPU\n(%)")
        a.set_ylim(0, (cores * 1.25) if known else None)
        i += 1
    if roles:
        handles += _role_panel(axes[i], roles, t0, host, cores)
        i += 1
    if "pool write op/s" in panels:
        a = axes[i]
        df = telemetry["pool write op/s"]
        x, y = _thin(df["wall"].to_numpy(dtype=float) - t0, df["value"].to_numpy(dtype=float))
        a.plot(x, y, color="#4b5563", lw=1)
        a.set_ylabel("pool writes\n(op/s)")
        a.set_ylim(bottom=0)
        i += 1
    for j, draw in enumerate(extra):
        draw(axes[i + j], t0)
        if j == 0:
            axes[i].set_title("storage hosts (the site's Prometheus)", fontsize=8.5, loc="left")
    for a in axes:
        a.tick_params(labelsize=8)
        a.yaxis.label.set_size(8.5)
    fig.align_ylabels(axes)
    axes[-1].set_xlabel("time since the cell's first campaign (s)")
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    return fig


def _level_palette(n: int):
    """Concurrency levels in shades of slate-teal: apart from every role's colour."""
    import seaborn as sns
    return sns.color_palette("crest", max(n, 1)) if n > 1 else [(0.12, 0.42, 0.55)]


def _role_panel(a, roles: dict, t0: float, host: pd.DataFrame | None = None,
                cores: float = math.nan) -> list:
    """Each role's CPU (solid, its own colour) in cores, the host's total (grey), and each
    distinct limit once (dashed, labelled on the line); the y range ends above the busiest line
    and the tightest limit. Returns the legend handles (one per line kind)."""
    from matplotlib.lines import Line2D
    top, tight = 0.0, math.inf
    handles: list = []
    limits: dict[float, dict[str, Any]] = {}
    if host is not None and math.isfinite(cores):
        x, y = _thin(host["wall"].to_numpy(dtype=float) - t0, host["value"].to_numpy(dtype=float) * cores)
        a.plot(x, y, color="#9ca3af", lw=1.6, alpha=0.9, zorder=3)
        handles.append(Line2D([], [], color="#9ca3af", lw=1.6, label="host CPU, all processes"))
        top = max(top, float(np.nanmax(y))) if np.isfinite(y).any() else top
    for role, (cpu, lim) in roles.items():
        c = role_color(role)
        x, y = _thin(cpu["wall"].to_numpy(dtype=float) - t0, cpu["value"].to_numpy(dtype=float))
        label = f"{role} CPU"
        if lim is not None and not lim.empty:
            v = lim["value"].to_numpy(dtype=float)
            if np.isfinite(v).any():
                tight = min(tight, float(np.nanmin(v)))
                src = str((lim["labels"].iloc[-1] or {}).get("source", ""))
                key = round(float(np.nanmax(v)), 3)
                limits.setdefault(key, {"roles": [], "host": src.startswith("host"), "lim": lim,
                                        "source": src.split(" at ")[0][:40]})
                limits[key]["roles"].append(role)
            else:
                label += " (limit unknown)"
        a.plot(x, y, color=c, lw=1.1)
        handles.append(Line2D([], [], color=c, lw=1.1, label=label))
        if np.isfinite(y).any():
            top = max(top, float(np.nanmax(y)))
    ymax = max(top * 1.3, (tight * 1.2) if math.isfinite(tight) else 0, 0.1)
    above = []
    for value, lm in sorted(limits.items()):
        one = len(lm["roles"]) == 1 and not lm["host"]
        color = role_color(lm["roles"][0]) if one else "black"
        who = f"{lm['roles'][0]} ({lm['source']})" if one else \
            ("host cores" if lm["host"] else ", ".join(lm["roles"]))
        if value > ymax:  # off the panel: said in the legend, once
            above.append(f"{value:g} ({who})")
            continue
        lx, ly = _thin(lm["lim"]["wall"].to_numpy(dtype=float) - t0, lm["lim"]["value"].to_numpy(dtype=float))
        a.step(lx, ly, where="post", color=color, ls="--", lw=1, zorder=2)
        a.annotate(f"limit {value:g}: {who}", (1.0, value), xycoords=("axes fraction", "data"),
                   ha="right", va="bottom", fontsize=7, color=color, annotation_clip=True)
    a.set_ylabel("role CPU\n(cores)")
    a.set_ylim(0, ymax)
    handles.append(Line2D([], [], color="black", ls="--", lw=1, label="CPU limit (labelled on its line)"))
    if above:
        handles.append(Line2D([], [], color="none", label="limits above: " + ", ".join(above)))
    return handles


def transfer_distributions(q: pd.DataFrame, labels: dict[str, str]) -> str | None:
    """Per-transfer throughput (Gb/s): box q25-q75, median, whiskers q05-q95."""
    if q.empty:
        return None
    stats = [{"label": f"{labels.get(r.cell_id, r.cell_id)} c={int(r.concurrency)}"
              + ("" if getattr(r, "direction", "write") == "write" else f" {r.direction}"),
              "med": gbps(r.q50), "q1": gbps(r.q25), "q3": gbps(r.q75), "whislo": gbps(r.q05),
              "whishi": gbps(r.q95), "mean": gbps(r.mean), "fliers": []} for r in q.itertuples()]
    fig, ax = new_figure(9.0, 0.8 + 0.28 * len(stats))
    ax.bxp(stats, orientation="horizontal", showmeans=True, showfliers=False,
           meanprops={"marker": "d", "markersize": 4, "markerfacecolor": "white"})
    ax.invert_yaxis()
    ax.set_xlabel("per-transfer throughput (Gb/s); box 25-75 %, whiskers 5-95 %, ◆ mean")
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
