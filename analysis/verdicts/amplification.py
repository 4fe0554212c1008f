"""Read amplification: bytes the OSDs read for a level's reads over the bytes the campaign read.

An EC pool serves a read from k shards (a replicated pool from one copy), so the same logical
read can cost the OSDs more: reading a 4 KiB piece of an EC object reads at least one stripe
unit from each shard it touches. Measured per (cell, concurrency) over the level's read
campaigns (CAMPAIGN start_time..finish_time, all repeats):

  logical   sum of ``transferred`` of the level's read transfers (TRANSFER rows, direction read)
  osd       bytes the object stores read: the increase of BlueStore's
            bluestore_buffer_hit_bytes + bluestore_buffer_miss_bytes (cache hits and device
            reads: every object read, the shard reads of EC included), summed over the OSDs
            whose admin socket was sampled, from the last sample at or before a campaign's start
            to the first at or after its end (or the cell's last sample, if within TAIL s of
            the end: the sampler stops with the cell)
  pool      the pool's client read bytes (`df detail` rd_bytes) over the same campaigns, their
            end extended by LAG s (the PG stats reach the mgr a few seconds late): what the
            clients (ceph-fuse, libradosstriper) asked of the pool, readahead included

  amplification = osd / the logical bytes moved between those same samples (each transfer's
  bytes spread evenly over its duration); pool_per_logical = pool / logical.

A counter the run did not sample gives NaN, shown as "not measured" — never a guess. An
amplification below CACHED says the OSDs hardly read at all: the bytes came from a cache above
them (the gateway's ceph-fuse object cacher or page cache, which holds a dataset it has just
written when that fits), so the read figures are no storage figures.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from xcbench.analysis.verdicts.samples import labels_query
from xcbench.figures.units import fmt_num

OSD_READ = ("osd.perf.bluestore.bluestore_buffer_hit_bytes",
            "osd.perf.bluestore.bluestore_buffer_miss_bytes")
POOL_READ = "pool.rd_bytes"
LAG = 6.0
TAIL = 2.0  # the sampler stops with the cell: its last sample may come up to ~1 interval early
CACHED = 0.1  # the OSDs read under a tenth of the bytes: served from a cache above them


def describe(a: float) -> str:
    """'1.52x', or '0.0001x (served from a cache above the OSDs)'."""
    tail = " (served from a cache above the OSDs)" if 0 <= a < CACHED else ""
    return f"{fmt_num(a)}x{tail}"


def _span(w: np.ndarray, a: float, b: float, lag: float = 0.0) -> tuple[int, int] | None:
    """Indices of the last sample at/before ``a`` and the first at/after ``b + lag`` (or, when
    the sampling stopped with the cell, the last one if it is within TAIL s of ``b``)."""
    i = int(np.searchsorted(w, a, side="right")) - 1
    j = int(np.searchsorted(w, b + lag, side="left"))
    if j >= w.size and not lag and w.size and w[-1] >= b - TAIL:
        j = w.size - 1
    return (i, j) if 0 <= i < j < w.size else None


def _increase(rows: pd.DataFrame, windows: list[tuple[float, float]], lag: float = 0.0,
              spans: list | None = None) -> float:
    """Sum over windows of (value at the span's end) - (value at its start) of one cumulative
    counter (_span); NaN if a window has no span. ``spans`` collects the (wall0, wall1) used."""
    rows = rows.sort_values("wall", kind="stable")
    w, v = rows["wall"].to_numpy(dtype=float), rows["value"].to_numpy(dtype=float)
    total = 0.0
    for a, b in windows:
        ij = _span(w, a, b, lag)
        if ij is None or not (np.isfinite(v[ij[0]]) and np.isfinite(v[ij[1]])):
            return math.nan
        total += max(v[ij[1]] - v[ij[0]], 0.0)  # a restarted OSD resets its counters
        if spans is not None:
            spans.append((float(w[ij[0]]), float(w[ij[1]])))
    return total


def _prorated(tr: pd.DataFrame, spans: list[tuple[float, float]]) -> float:
    """Bytes the transfers moved inside the spans (each transfer's bytes spread evenly over its
    start..finish, as figures.steady rebuilds timelines)."""
    s = pd.to_numeric(tr["start_time"], errors="coerce").to_numpy(dtype=float)
    e = pd.to_numeric(tr["finish_time"], errors="coerce").to_numpy(dtype=float)
    n = pd.to_numeric(tr["transferred"], errors="coerce").fillna(0).to_numpy(dtype=float)
    dur = np.maximum(e - s, 1e-9)
    total = 0.0
    for a, b in spans:
        total += float((np.clip(np.minimum(e, b) - np.maximum(s, a), 0, None) / dur * n).sum())
    return total


def _windows(campaigns: pd.DataFrame, transfers: pd.DataFrame, cell_id: str, conc: float
             ) -> tuple[list[tuple[float, float]], float, list[str]]:
    tr = transfers[(transfers["cell_id"] == cell_id) & (transfers["concurrency"] == conc)
                   & (transfers["direction"] == "read")]
    camps = list(dict.fromkeys(tr["campaign_id"]))
    logical = float(pd.to_numeric(tr["transferred"], errors="coerce").fillna(0).sum())
    wins = []
    cp = campaigns[campaigns["campaign_id"].isin(camps)] if len(campaigns) else campaigns
    for camp in camps:
        row = cp[cp["campaign_id"] == camp] if len(cp) else cp
        t = tr[tr["campaign_id"] == camp]
        a = pd.to_numeric(row["start_time"], errors="coerce").min() if len(row) else math.nan
        b = pd.to_numeric(row["finish_time"], errors="coerce").max() if len(row) else math.nan
        if not (math.isfinite(a) and math.isfinite(b)):
            a, b = float(t["start_time"].min()), float(t["finish_time"].max())
        wins.append((float(a), float(b)))
    return wins, logical, camps


def read_amplification(rd: Any, cell_id: str, conc: float, pool: str | None) -> dict[str, Any]:
    """{logical, osd_bytes, osds, amplification, pool_bytes, pool_per_logical, windows, source}."""
    out: dict[str, Any] = {"logical": math.nan, "osd_bytes": math.nan, "osds": 0,
                           "amplification": math.nan, "pool_bytes": math.nan,
                           "pool_per_logical": math.nan}
    wins, logical, camps = _windows(rd.campaigns, rd.transfers, cell_id, conc)
    if not wins or not logical > 0:
        return out
    out.update(logical=logical, windows=wins)
    s = rd.samples
    osd_total, osds, spans = 0.0, set(), None
    for metric in OSD_READ:
        for osd, rows in s.by_label(cell_id, metric, "osd").items():
            got: list = []
            inc = _increase(rows, wins, spans=got)
            if math.isfinite(inc):
                osd_total += inc
                osds.add(osd)
                spans = spans or got
    if osds and spans:
        tr = rd.transfers
        tr = tr[(tr["cell_id"] == cell_id) & (tr["concurrency"] == conc) & (tr["direction"] == "read")]
        inside = _prorated(tr, spans)  # the bytes read between the very samples compared
        if inside > 0:
            out.update(osd_bytes=osd_total, osds=len(osds), amplification=osd_total / inside,
                       logical_sampled=inside)
    if pool:
        rows = s.by_label(cell_id, POOL_READ, "pool").get(pool)
        if rows is not None:
            inc = _increase(rows, wins, LAG)
            if math.isfinite(inc):
                out.update(pool_bytes=inc, pool_per_logical=inc / logical)
    w = " | ".join(f"(wall >= {a!r} & wall <= {b!r})" for a, b in wins)
    out["source"] = {
        "run": rd.run_id, "table": "samples", "column": "value", "agg": "increase per window",
        "query": f"cell_id == {json.dumps(cell_id)} & metric in {list(OSD_READ)!r}",
        "query_logical": f"transfers: cell_id == {json.dumps(cell_id)} & concurrency == {conc!r} "
                         f"& direction == 'read' [transferred].sum()",
        "note": f"campaigns {', '.join(camps)}; windows {w}; per OSD: last sample <= start to first "
                f">= end (pool {POOL_READ}" + (f" {labels_query({'pool': pool})}" if pool else "")
                + f": end + {LAG:g} s)", "recompute": False}
    return out
