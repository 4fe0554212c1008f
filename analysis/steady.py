"""Steady state of a campaign: trim ramp-up and ramp-down by a stated rule, then describe.

Input: a campaign's TIMELINE (1 s buckets: ``t`` s since the campaign started, ``wall``,
``bytes``, ``rate`` bytes/s, ``active`` transfers in flight, cumulative ``done``/``failed``).
When a run has no timeline table, :func:`timeline_from_transfers` rebuilds one from the
transfer records (bytes spread evenly over each transfer's start..finish; ``active`` is the
time-averaged number of transfers in flight in the bucket).

The rule (RULE, quoted in every report):

1. **Plateau** (preferred). The concurrency limit L is the campaign's ``concurrency``, or the
   highest ``active`` reached if the campaign never got there (fewer files than slots). The
   steady window is the longest contiguous run of buckets with ``active >= L`` (``L - 0.5``
   for time-averaged ``active``), minus its first and last bucket (partial seconds in which
   transfers open or close), provided at least 3 buckets remain.
2. **Slope** (fallback, when the plateau is shorter than 3 buckets). Smooth ``rate`` with a
   centred 3-bucket median; keep buckets whose centred slope is at most 10 % of the peak per
   second and whose rate is at least half the peak; the window spans the first to the last
   such bucket (at least 2).
3. **Whole run** (last resort): every bucket, flagged ``method = "whole"`` (no steady state).

Mean, median, standard deviation and CV of ``rate`` are given over the window and over the
whole run. Two more facts feed the attribution: ``plateau_frac`` (share of buckets at the
limit) and ``starved_frac`` (share of buckets where slots were free while files were still
queued: the client did not keep its transfers in flight).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from xcbench.analysis.stats import Stats

RULE = ("steady window = the longest run of 1-s buckets in which the campaign holds its "
        "concurrency limit (active transfers >= limit), minus its first and last bucket, if >= 3 "
        "buckets remain; otherwise buckets whose smoothed rate changes by <= 10 % of the peak per "
        "second and is >= 50 % of the peak; otherwise the whole run (flagged)")
MIN_POINTS = 3
SLOPE_MAX = 0.10
LEVEL_MIN = 0.50
KEYS = ["cell_id", "campaign_id", "concurrency", "repeat"]


@dataclass(frozen=True)
class SteadyWindow:
    method: str  # plateau | slope | whole
    start: float  # t of the first bucket in the window (s since campaign start)
    end: float  # t of the last bucket in the window (inclusive)
    limit: float
    plateau_frac: float
    starved_frac: float
    window: Stats
    run: Stats


def _longest_true_run(mask: np.ndarray) -> tuple[int, int]:
    """(first, last) index of the longest run of True; (-1, -2) if none."""
    if not mask.any():
        return (-1, -2)
    m = np.concatenate([[False], mask, [False]]).astype(np.int8)
    d = np.diff(m)
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1) - 1
    i = int(np.argmax(ends - starts))
    return int(starts[i]), int(ends[i])


def steady_window(t, rate, active=None, *, concurrency: float | None = None,
                  queued=None) -> SteadyWindow:
    """Apply RULE to one campaign's buckets (arrays in time order)."""
    t = np.asarray(t, dtype=float)
    rate = np.asarray(rate, dtype=float)
    n = rate.size
    run = Stats.of(rate)
    limit, plateau_frac, starved_frac = math.nan, math.nan, math.nan
    lo, hi, method = -1, -2, "whole"
    act = np.asarray(active, dtype=float) if active is not None else np.array([])
    if n and act.size == n and np.isfinite(act).any():
        peak = float(np.nanmax(act))
        limit = min(float(concurrency), peak) if concurrency and math.isfinite(concurrency) else peak
        fractional = not np.allclose(act[np.isfinite(act)], np.round(act[np.isfinite(act)]))
        at = act >= (limit - 0.5 if fractional else limit)
        plateau_frac = float(at.mean())
        if queued is not None:
            starved_frac = float(((np.asarray(queued) > 0) & ~at).mean())
        a, b = _longest_true_run(at)
        if b - a + 1 >= MIN_POINTS + 2:
            lo, hi, method = a + 1, b - 1, "plateau"
        elif b - a + 1 >= MIN_POINTS and a == 0 and b == n - 1:
            lo, hi, method = a, b, "plateau"  # the whole run is at the limit: nothing to trim
    if method == "whole" and n >= 3:
        s = pd.Series(rate).rolling(3, center=True, min_periods=1).median().to_numpy()
        peak = float(np.nanmax(s))
        if peak > 0:
            slope = np.abs(np.gradient(s)) / peak
            ok = np.flatnonzero((slope <= SLOPE_MAX) & (s >= LEVEL_MIN * peak))
            if ok.size >= 2 and ok[-1] - ok[0] + 1 >= 2:
                lo, hi, method = int(ok[0]), int(ok[-1]), "slope"
    if method == "whole":
        lo, hi = 0, n - 1
    win = Stats.of(rate[lo:hi + 1]) if n else run
    return SteadyWindow(method, float(t[lo]) if n else math.nan, float(t[hi]) if n else math.nan,
                        limit, plateau_frac, starved_frac, win, run)


def steady_table(timeline: pd.DataFrame, files: dict | None = None) -> pd.DataFrame:
    """One row per campaign (cell_id, campaign_id, concurrency, repeat): the window and the
    stats. ``files``: {campaign_id: files in the campaign} to compute ``starved_frac``."""
    cols = ["method", "t_start", "t_end", "wall_start", "wall_end", "limit", "plateau_frac",
            "starved_frac", "buckets", "bytes"]
    stat_cols = [f"{p}_{k}" for p in ("window", "run") for k in ("n", "mean", "median", "std", "cv")]
    if timeline.empty:
        return pd.DataFrame(columns=KEYS + cols + stat_cols)
    tl = timeline.sort_values(KEYS[:2] + ["t"], kind="stable")
    out = []
    for key, g in tl.groupby(KEYS, sort=False, dropna=False):
        queued = None
        nfiles = (files or {}).get(key[1])
        if nfiles is not None and {"done", "failed", "active"} <= set(g.columns):
            queued = nfiles - g["done"].fillna(0).to_numpy() - g["failed"].fillna(0).to_numpy() \
                - g["active"].fillna(0).to_numpy()
        w = steady_window(g["t"].to_numpy(), g["rate"].to_numpy(),
                          g["active"].to_numpy(dtype=float) if "active" in g else None,
                          concurrency=float(key[2]) if pd.notna(key[2]) else None, queued=queued)
        wall = g["wall"].to_numpy(dtype=float)
        t = g["t"].to_numpy(dtype=float)
        i0, i1 = np.searchsorted(t, w.start), np.searchsorted(t, w.end)
        row = dict(zip(KEYS, key, strict=True))
        row.update(method=w.method, t_start=w.start, t_end=w.end,
                   wall_start=wall[i0], wall_end=wall[i1] + 1.0, limit=w.limit,
                   plateau_frac=w.plateau_frac, starved_frac=w.starved_frac, buckets=len(g),
                   bytes=float(g["bytes"].sum()))
        for p, s in (("window", w.window), ("run", w.run)):
            row.update({f"{p}_n": s.n, f"{p}_mean": s.mean, f"{p}_median": s.median,
                        f"{p}_std": s.std, f"{p}_cv": s.cv})
        out.append(row)
    return pd.DataFrame(out, columns=KEYS + cols + stat_cols)


def _integral(starts: np.ndarray, ends: np.ndarray, weights: np.ndarray, edges: np.ndarray):
    """sum_i w_i * |[s_i, e_i] ∩ (-inf, T]| for each T in edges (O((n + m) log n))."""
    order_s, order_e = np.argsort(starts), np.argsort(ends)
    s, ws = starts[order_s], weights[order_s]
    e, we = ends[order_e], weights[order_e]
    cs_w, cs_ws = np.concatenate([[0], np.cumsum(ws)]), np.concatenate([[0], np.cumsum(ws * s)])
    ce_w, ce_we = np.concatenate([[0], np.cumsum(we)]), np.concatenate([[0], np.cumsum(we * e)])
    i = np.searchsorted(s, edges, side="right")
    j = np.searchsorted(e, edges, side="right")
    return (edges * cs_w[i] - cs_ws[i]) - (edges * ce_w[j] - ce_we[j])


def timeline_from_transfers(transfers: pd.DataFrame, bucket: float = 1.0) -> pd.DataFrame:
    """TIMELINE rows rebuilt from TRANSFER rows, per campaign (see the module docstring)."""
    cols = KEYS + ["t", "wall", "bytes", "rate", "active", "done", "failed"]
    if transfers.empty:
        return pd.DataFrame(columns=cols)
    tr = transfers.dropna(subset=["start_time", "finish_time"])
    moved = tr["transferred"] if "transferred" in tr else tr["file_size"]
    moved = pd.to_numeric(moved, errors="coerce")
    finished = tr["file_state"].eq("FINISHED") if "file_state" in tr else True
    moved = moved.fillna(pd.to_numeric(tr["file_size"], errors="coerce").where(finished)).fillna(0)
    tr = tr.assign(_moved=moved.to_numpy(dtype=float), _failed=~np.asarray(finished, dtype=bool))
    parts = []
    for key, g in tr.groupby(KEYS, sort=False, dropna=False):
        t0 = float(g["start_time"].min())
        s = g["start_time"].to_numpy(dtype=float) - t0
        e = np.maximum(g["finish_time"].to_numpy(dtype=float) - t0, s + 1e-9)
        nb = max(1, math.ceil(float(e.max()) / bucket))
        edges = np.arange(nb + 1, dtype=float) * bucket
        b = np.diff(_integral(s, e, g["_moved"].to_numpy() / (e - s), edges))
        act = np.diff(_integral(s, e, np.ones_like(s), edges)) / bucket
        ends_sorted = np.sort(e[~g["_failed"].to_numpy()])
        fails_sorted = np.sort(e[g["_failed"].to_numpy()])
        df = pd.DataFrame({"t": edges[:-1], "wall": t0 + edges[:-1], "bytes": b, "rate": b / bucket,
                           "active": act,
                           "done": np.searchsorted(ends_sorted, edges[1:], side="right"),
                           "failed": np.searchsorted(fails_sorted, edges[1:], side="right")})
        for k, v in zip(KEYS, key, strict=True):
            df[k] = v
        parts.append(df)
    return pd.concat(parts, ignore_index=True)[cols]
