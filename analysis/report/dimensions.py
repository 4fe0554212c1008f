"""The experiment dimensions of a run (streams, file-size classes, origins x cores): each cell's
best steady rate, grouped by the settings the cells share, drawn the way the studies did
(rate vs streams, rate per size class, a heatmap of rate over origins x cores).

Inputs are the run's points (analysis.verdicts.run_data.RunData.points) and its cells
(RunData.cell_objects); a cell's figure is its best steady rate over its concurrency levels, the same figure
the layout table uses.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from xcbench.analysis.report.render import fig_to_data_uri, new_figure
from xcbench.cell import Cell
from xcbench.figures.units import GIB, fmt_num, gbps

CLASS_ORDER = ("small", "medium", "large")
AXES = {"streams": ("streams",), "size_class": ("size_class", "size_scale", "file_size",
                                                "size_dist", "files", "tmpfs_size"),
        "cores": ("origins", "cores")}


def frame(points: pd.DataFrame, cells: Mapping[str, Cell],
          campaigns: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per measured cell: its settings of interest and best steady rate (B/s); a cell
    with no steady window (a few large files) falls back to its best whole-campaign rate."""
    best = points.groupby("cell_id")["rate"].max() if not points.empty else pd.Series(dtype=float)
    whole = campaigns.groupby("cell_id")["rate"].max() \
        if campaigns is not None and len(campaigns) and "rate" in campaigns else pd.Series(dtype=float)
    rate_from = {cid: "steady" for cid in best.index}
    for cid in whole.index.difference(best.index):
        best[cid], rate_from[cid] = float(whole[cid]), "whole campaign"
    rows = []
    for cid, c in cells.items():
        if cid not in best.index:
            continue
        s = c.settings()  # what groups cells: all they share but the concurrency levels
        s.pop("concurrency")
        rows.append({"cell_id": cid, "label": c.label, "rate": float(best[cid]),
                     "rate_from": rate_from[cid], "streams": c.streams, "size_class": c.size_class,
                     "size_scale": c.size_scale or 1, "cores": c.cores, "origins": c.origins,
                     "file_size": c.file_size, "settings": s})
    return pd.DataFrame(rows)


def _groups(df: pd.DataFrame, axis: str) -> dict[str, pd.DataFrame]:
    """Cells that differ only in ``axis``'s settings, keyed by the label of what they share."""
    sub = df[df[AXES[axis][-1] if axis == "cores" else axis].notna()]
    out: dict[str, list] = {}
    for r in sub.itertuples():
        rest = {k: v for k, v in r.settings.items() if k not in AXES[axis]}
        key = json.dumps(rest, sort_keys=True, default=str)
        out.setdefault(key, []).append(r.Index)
    return {_shared_label(sub.loc[ix], axis): sub.loc[ix] for ix in out.values()}


def _shared_label(g: pd.DataFrame, axis: str) -> str:
    words = str(g["label"].iloc[0]).split()
    drop = {"streams": lambda w: w.startswith("s") and w[1:].isdigit(),
            "size_class": lambda w: w.split("/")[0] in CLASS_ORDER,
            "cores": lambda w: (w.endswith("c") and _isnum(w[:-1])) or
            (w.startswith("o") and w[1:].isdigit())}[axis]
    return " ".join(w for w in words if not drop(w))


def _isnum(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def streams_plot(groups: dict[str, pd.DataFrame]) -> str | None:
    if not groups:
        return None
    fig, ax = new_figure(6.5, 3.6)
    for label, g in groups.items():
        g = g.sort_values("streams")
        ax.plot(g["streams"], gbps(g["rate"]), marker="o", label=label)
    levels = sorted({int(s) for g in groups.values() for s in g["streams"]})
    if levels and max(levels) / min(levels) >= 8:
        ax.set_xscale("log", base=2)
    ax.set_xticks(levels, [str(s) for s in levels])
    ax.set_xlabel("TCP streams per transfer")
    ax.set_ylabel("best rate (Gb/s)")
    ax.legend(fontsize=7, frameon=False)
    return fig_to_data_uri(fig)


def classes_plot(groups: dict[str, pd.DataFrame]) -> str | None:
    if not groups:
        return None
    fig, ax = new_figure(6.5, 3.6)
    width = 0.8 / len(groups)
    for i, (label, g) in enumerate(groups.items()):
        rank = {c: n for n, c in enumerate(CLASS_ORDER)}
        g = g.assign(_r=g["size_class"].map(rank)).sort_values("_r")
        ax.bar(g["_r"] + i * width, gbps(g["rate"]), width, label=label)
    ax.set_xticks(np.arange(len(CLASS_ORDER)) + 0.4 - width / 2, CLASS_ORDER)
    ax.set_xlabel("file-size class (Fermilab 100GE study, scaled as the table says)")
    ax.set_ylabel("best rate (Gb/s)")
    ax.legend(fontsize=7, frameon=False)
    return fig_to_data_uri(fig)


def cores_heatmap(label: str, g: pd.DataFrame) -> str | None:
    table = g.pivot_table(index="origins", columns="cores", values="rate", aggfunc="max") * 8 / 1e9  # Gb/s
    if table.empty:
        return None
    fig, ax = new_figure(1.2 * len(table.columns) + 2.5, 0.7 * len(table.index) + 1.8)
    im = ax.imshow(table.to_numpy(dtype=float), cmap="viridis", aspect="auto", origin="lower")
    ax.set_xticks(range(len(table.columns)), [f"{c:g}" for c in table.columns])
    ax.set_yticks(range(len(table.index)), [str(o) for o in table.index])
    for (i, j), v in np.ndenumerate(table.to_numpy(dtype=float)):
        if math.isfinite(v):
            ax.text(j, i, fmt_num(v), ha="center", va="center", color="w", fontsize=8)
    ax.set_xlabel("cores per origin (cgroup CPU quota)")
    ax.set_ylabel("origins")
    ax.set_title(label, fontsize=9)
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="best rate (Gb/s)")
    return fig_to_data_uri(fig)


def rate_per_core(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Per cores cell: rate, cores in all (origins x cores) and rate per core (B/s per core),
    what `xcbench plan` reads to size gateways."""
    out = []
    for r in df[df["cores"].notna()].itertuples():
        total = float(r.origins) * float(r.cores)
        out.append({"cell_id": r.cell_id, "label": r.label, "origins": int(r.origins),
                    "cores": float(r.cores), "rate": r.rate, "rate_per_core": r.rate / total})
    return out


def _row(dimension: str, cells: str, value: str, r: Any, files_per_s: float = math.nan) -> dict[str, Any]:
    """One row of the block's table: a cell's best rate at one value of a dimension."""
    return {"dimension": dimension, "cells": cells, "value": value, "rate_gbps": gbps(r.rate),
            "rate_gib": r.rate / GIB, "files_per_s": files_per_s, "cell_id": r.cell_id,
            "rate_from": r.rate_from}


def _add_figure(figures: list[dict[str, Any]], uri: str | None, fig_id: str, title: str,
                caption: str) -> None:
    if uri:
        figures.append({"id": fig_id, "title": title, "uri": uri, "caption": caption})


def section(points: pd.DataFrame, cells: Mapping[str, Cell],
            campaigns: pd.DataFrame | None = None) -> dict[str, Any] | None:
    """The report's "Experiment dimensions" block, or None when the run sweeps none of them."""
    df = frame(points, cells, campaigns)
    if df.empty or df[["streams", "size_class", "cores"]].isna().all().all():
        return None
    figures: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    streams = _groups(df, "streams") if df["streams"].notna().any() else {}
    _add_figure(figures, streams_plot(streams), "fig-streams", "Rate vs TCP streams per transfer",
                "Best steady rate over concurrency levels of each cell (whole-campaign rate where no "
                "steady window was found: see the table); one line per set of cells that differ "
                "only in streams.")
    for label, g in streams.items():
        rows += [_row("streams", label, str(int(r.streams)), r)
                 for r in g.sort_values("streams").itertuples()]
    classes = _groups(df, "size_class") if df["size_class"].notna().any() else {}
    _add_figure(figures, classes_plot(classes), "fig-classes", "Rate per file-size class",
                "Small files pay the per-file protocol cost (open, checksum, close): compare files/s "
                "in the table.")
    rank = {c: n for n, c in enumerate(CLASS_ORDER)}
    for label, g in classes.items():
        for r in g.assign(_r=g["size_class"].map(rank)).sort_values("_r").itertuples():
            scale = f" /{int(r.size_scale)}" if r.size_scale and r.size_scale > 1 else ""
            rows.append(_row("size_class", label, f"{r.size_class}{scale}", r,
                             files_per_s=r.rate / float(r.file_size)))
    for label, g in (_groups(df, "cores") if df["cores"].notna().any() else {}).items():
        _add_figure(figures, cores_heatmap(label, g), f"fig-cores-{len(figures)}",
                    f"Rate over origins x cores: {label}", "Each origin (xrootd) in its own cgroup "
                    "with a CFS quota of the given cores (a Kubernetes CPU limit).")
        rows += [_row("origins x cores", label, f"o{int(r.origins)} x {r.cores:g}c", r)
                 for r in g.sort_values(["origins", "cores"]).itertuples()]
    return {"figures": figures, "rows": rows, "per_core": rate_per_core(df)}
