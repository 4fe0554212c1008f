"""Directions of a run's campaigns (write, read, mixed) and their per-direction timelines.

A campaign's direction comes from its CAMPAIGN row (``direction``), else (a level cut short
before its row was written) from its cell (RunData.cell_objects: a cell stored without settings
writes). A point of the analysis is (cell, concurrency, direction): a write or read campaign gives one, a
mixed campaign two, both over the same 1-s buckets:

- write / read: the campaign's timeline as it is (``bytes``, ``rate`` are that direction's);
- mixed: ``bytes`` = the bucket's ``bytes_read`` (or ``bytes_written``) and ``rate`` =
  ``rate`` x that share of the bucket's ``bytes``; ``active``, ``done`` and ``failed`` stay the
  campaign's (the slots are shared, so the steady window is the campaign's, see
  figures.steady.RULE). A mixed campaign whose timeline lacks the split columns is rebuilt from
  its transfer records (each row has a ``direction``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from xcbench.cell import DIRECTIONS as CAMPAIGN_DIRECTIONS
from xcbench.cell import Cell
from xcbench.figures.units import format_size

DIRECTIONS = ("write", "read")
SPLIT = {"read": "bytes_read", "write": "bytes_written"}


def campaign_directions(campaigns: pd.DataFrame, cells: Mapping[str, Cell],
                        timeline: pd.DataFrame) -> dict[str, str]:
    """{campaign_id: write | read | mixed} for every campaign of the timeline; ``cells``: the
    run's (RunData.cell_objects)."""
    out: dict[str, str] = {}
    if len(campaigns):
        for cid, d in zip(campaigns["campaign_id"], campaigns["direction"], strict=False):
            if isinstance(d, str) and d in CAMPAIGN_DIRECTIONS:  # NA: a row without one
                out[cid] = d
    if len(timeline):
        pairs = timeline[["campaign_id", "cell_id"]].drop_duplicates("campaign_id")
        for camp, cell in zip(pairs["campaign_id"], pairs["cell_id"], strict=True):
            if camp not in out:
                out[camp] = cells[cell].direction if cell in cells else "write"
    return out


def transfer_direction(transfers: pd.DataFrame) -> pd.Series:
    """Each transfer's direction (its row's: write | read)."""
    return transfers["direction"].astype(object)


def _split(g: pd.DataFrame, direction: str) -> pd.DataFrame:
    part = pd.to_numeric(g[SPLIT[direction]], errors="coerce").fillna(0.0).to_numpy(dtype=float)
    total = g["bytes"].to_numpy(dtype=float)
    rate = g["rate"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, part / total, 0.0)
    return g.assign(bytes=part, rate=np.where(total > 0, rate * share, part), direction=direction)


def _has_split(g: pd.DataFrame) -> bool:
    return all(c in g and pd.to_numeric(g[c], errors="coerce").notna().any() for c in SPLIT.values())


def directional_timeline(timeline: pd.DataFrame, directions: dict[str, str],
                         rebuild=None) -> pd.DataFrame:
    """The timeline with a ``direction`` column, mixed campaigns split in two (module doc).
    ``rebuild(campaign_id)``: the campaign's timeline rebuilt from its transfers, with the split
    columns (for a mixed campaign whose own timeline lacks them), or None."""
    if timeline.empty:
        return timeline.assign(direction=pd.Series(dtype=object))
    parts = []
    for camp, g in timeline.groupby("campaign_id", sort=False, dropna=False):
        d = directions.get(camp, "write")
        if d != "mixed":
            parts.append(g.assign(direction=d))
            continue
        if not _has_split(g) and rebuild is not None:
            g = rebuild(camp)
        if g is None or g.empty or not _has_split(g):
            continue  # no per-direction bytes: no point rather than a made-up split
        parts += [_split(g, "write"), _split(g, "read")]
    if not parts:
        return timeline.iloc[0:0].assign(direction=pd.Series(dtype=object))
    return pd.concat(parts, ignore_index=True)


def access_of(campaigns: pd.DataFrame, cell_id: str) -> str:
    """How a cell's read campaigns read each file ("full", "random 64 KiB x 16", ...), from
    their CAMPAIGN settings["access"]; "" when none is recorded."""
    if campaigns.empty or "settings" not in campaigns:
        return ""
    for text in campaigns.loc[campaigns["cell_id"] == cell_id, "settings"]:
        try:
            a = json.loads(text).get("access") if isinstance(text, str) else None
        except ValueError:
            continue
        if isinstance(a, dict) and a.get("pattern"):
            if a["pattern"] == "full" or not a.get("size"):
                return str(a["pattern"])
            return f"{a['pattern']} {format_size(int(a['size']))} x {a.get('count') or '?'}"
    return ""


class DirectionView:
    """A run seen in one direction: ``cells``, ``point(cell, conc)`` and ``levels_rate(cell)``
    as RunData has them, with the direction fixed (so code written for writes, such as the
    replicated-twin lookup of analysis.verdicts.attribution, finds the twin's points of that direction)."""

    def __init__(self, rd: Any, direction: str):
        self.rd, self.direction = rd, direction

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rd, name)

    def point(self, cell_id: str, concurrency: Any, direction: str | None = None):
        return self.rd.point(cell_id, concurrency, direction or self.direction)

    def levels_rate(self, cell_id: str, direction: str | None = None):
        return self.rd.levels_rate(cell_id, direction or self.direction)
