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
            to the first at or after its end
  pool      the pool's client read bytes (`df detail` rd_bytes) over the same campaigns, their
            end extended by LAG s (the PG stats reach the mgr a few seconds late): what the
            clients (ceph-fuse, libradosstriper) asked of the pool, readahead included

  amplification = osd / logical; pool_per_logical = pool / logical.

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

from xcbench.analysis.samples import labels_query

OSD_READ = ("osd.perf.bluestore.bluestore_buffer_hit_bytes",
            "osd.perf.bluestore.bluestore_buffer_miss_bytes")
POOL_READ = "pool.rd_bytes"
LAG = 6.0
CACHED = 0.1  # the OSDs read under a tenth of the bytes: served from a cache above them


def describe(a: float) -> str:
    """'1.52x', or '0.0001x (served from a cache above the OSDs)'."""
    from xcbench.analysis.render import fmt_num
    tail = " (served from a cache above the OSDs)" if 0 <= a < CACHED else ""
    return f"{fmt_num(a)}x{tail}"


def _increase(rows: pd.DataFrame, windows: list[tuple[float, float]], lag: float = 0.0) -> float:
    """Sum over windows of (first value at/after end+lag) - (last value at/before start) of one
    cumulative counter; NaN if a window has no sample on either side."""
    rows = rows.sort_values("wall", kind="stable")
    w, v = rows["wall"].to_numpy(dtype=float), rows["value"].to_numpy(dtype=float)
    total = 0.0
    for a, b in windows:
        i = np.searchsorted(w, a, side="right") - 1
        j = np.searchsorted(w, b + lag, side="left")
        if i < 0 or j >= w.size or not (np.isfinite(v[i]) and np.isfinite(v[j])):
            return math.nan
        total += max(v[j] - v[i], 0.0)  # a restarted OSD resets its counters
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
    osd_total, osds = 0.0, set()
    for metric in OSD_READ:
        for osd, rows in s.by_label(cell_id, metric, "osd").items():
            inc = _increase(rows, wins)
            if math.isfinite(inc):
                osd_total += inc
                osds.add(osd)
    if osds:
        out.update(osd_bytes=osd_total, osds=len(osds), amplification=osd_total / logical)
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
