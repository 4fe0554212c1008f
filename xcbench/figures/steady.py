"""Steady state of a campaign: trim ramp-up and ramp-down by a stated rule, then describe.

Input: a campaign's TIMELINE (1 s buckets, each labelled by its END: ``t`` s since the
campaign started, ``wall``, ``bytes`` moved in the bucket, ``rate`` = bytes / the bucket's
span, ``active`` transfers in flight, cumulative ``done``/``failed``). A bucket spans from the
previous one's end (the first from 0) to its ``t``: the last bucket of a campaign is often a
fraction of a second. When a run has no timeline table, :func:`timeline_from_transfers`
rebuilds one from the transfer records (bytes spread evenly over each transfer's
start..finish; ``active`` is the time-averaged number of transfers in flight in the bucket).

**A level's rate** (:func:`level_steady`, the one place it is computed: the progress line, the
report, the plots' shaded window and the rules all read it) is the bytes moved in its steady
window over the window's seconds; bytes inside a bucket count as spread evenly over its span,
so a window edge inside a bucket takes its share. Its spread (std, CV, median) is that of the
window cut into equal blocks of about 1 s, so a short bucket weighs by its duration, not as a
whole second (figures.buckets, which figures.level_rule.LevelRule.check reads the same way).

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

A time-based level (campaign.duration, figures.level_rule.LevelRule) has its own window: the one its
rule judged when the level ended (``steady_table(levels=...)``), named by the rule if it held,
or "not steady" if the maximum duration came first.

Mean (the rate), median, standard deviation and CV are given over the window and over the
whole run (both by the equal-block rule above). The rate's relative standard error
(``window_rel_se``, figures.buckets.window_rel_se) counts the blocks' autocorrelation (AR(1),
figures.stats.mean_rel_se) and the window's choice: a window picked because it was quiet (a
time-based level's rule ends the level at its first quiet window) has a spread smaller than the
level's, so the spread and correlation are also taken over the window and the equally long
stretch before it (after the ramp: from the first bucket at the concurrency limit), around
their trend, and the larger error is kept. Two more facts
feed the attribution:
``plateau_frac`` (share of buckets at the limit) and ``starved_frac`` (share of buckets where
slots were free while files were still queued: the client did not keep its transfers in
flight).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from xcbench.figures.buckets import (  # noqa: F401 - block_rates, window_bytes: public here too
    block_rates,
    bucket_bounds,
    bucket_bytes,
    window_bytes,
    window_rel_se,
    window_stats,
)
from xcbench.figures.stats import Stats

if TYPE_CHECKING:  # pandas is imported where a table is made
    import pandas as pd


RULE = ("steady window = the longest run of 1-s buckets in which the campaign holds its "
        "concurrency limit (active transfers >= limit), minus its first and last bucket, if >= 3 "
        "buckets remain; otherwise buckets whose smoothed rate changes by <= 10 % of the peak per "
        "second and is >= 50 % of the peak; otherwise the whole run (flagged); a time-based level's "
        "window is the one its rule judged; the rate is the bytes moved in the window over its "
        "seconds")
MIN_POINTS = 3
SLOPE_MAX = 0.10
LEVEL_MIN = 0.50
KEYS = ["cell_id", "campaign_id", "concurrency", "repeat"]


@dataclass(frozen=True)
class SteadyWindow:
    method: str  # plateau | slope | whole; a time-based level: its rule's name or "not steady"
    start: float  # the window's start (s since campaign start: the first bucket's beginning)
    end: float  # the window's end (the last bucket's end)
    limit: float
    plateau_frac: float
    starved_frac: float
    window: Stats  # window.mean is the level's rate: bytes in [start, end] / (end - start)
    run: Stats
    ended_by: str = "files"  # files | steady | max | stopped | failing | hosts
    steady_at: float = math.nan  # a time-based level ended steady: when (s)

    @property
    def rate(self) -> float:
        """Bytes/s over the window."""
        return self.window.mean


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
                  queued=None, nbytes=None) -> SteadyWindow:
    """Apply RULE to one campaign's buckets (arrays in time order; ``t`` each bucket's end,
    ``nbytes`` its bytes: without them, rate x the bucket's span)."""
    t = np.asarray(t, dtype=float)
    rate = np.asarray(rate, dtype=float)
    n = rate.size
    b0, b1, moved = bucket_bytes(t, nbytes, rate)
    run = window_stats(t, moved, b0[0], b1[-1], b0[0]) if n else Stats.of([])
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
        import pandas as pd
        s = pd.Series(rate).rolling(3, center=True, min_periods=1).median().to_numpy()
        peak = float(np.nanmax(s))
        if peak > 0:
            slope = np.abs(np.gradient(s)) / peak
            ok = np.flatnonzero((slope <= SLOPE_MAX) & (s >= LEVEL_MIN * peak))
            if ok.size >= 2 and ok[-1] - ok[0] + 1 >= 2:
                lo, hi, method = int(ok[0]), int(ok[-1]), "slope"
    if method == "whole":
        lo, hi = 0, n - 1
    if not n:
        return SteadyWindow(method, math.nan, math.nan, limit, plateau_frac, starved_frac, run, run)
    win = window_stats(t, moved, float(b0[lo]), float(b1[hi]), b0[0])
    return SteadyWindow(method, float(b0[lo]), float(b1[hi]), limit, plateau_frac, starved_frac,
                        win, run)


def level_steady(t, nbytes, rate, active=None, *, concurrency: float | None = None,
                 queued=None, level: dict | None = None) -> SteadyWindow:
    """A level's steady window and rate: THE function every figure of a level's rate comes
    from. ``level``: how a time-based level ended (the CAMPAIGN row's settings["level"]): its
    window is the one its LevelRule judged (``level["window"]``, s since the campaign
    started), named by the rule if it held, else "not steady"; otherwise RULE decides."""
    w = steady_window(t, rate, active, concurrency=concurrency, queued=queued, nbytes=nbytes)
    if not level or not level.get("window") or not np.asarray(t).size:
        return w
    w0, w1 = (float(x) for x in level["window"])
    t = np.asarray(t, dtype=float)
    b0, _, moved = bucket_bytes(t, nbytes, rate)
    w0, w1 = max(w0, float(b0[0])), min(w1, float(t[-1]))  # no bytes are known outside
    if not w1 > w0:  # no bucket recorded in the window (an interrupted level): RULE's window
        return w
    steady = level.get("ended_by") == "steady"
    method = level.get("rule", {}).get("rule", "level") if steady else "not steady"
    return dataclasses.replace(
        w, method=method, start=w0, end=w1,
        window=window_stats(t, moved, w0, w1, b0[0]),
        ended_by=str(level.get("ended_by")),
        steady_at=float(level["t_end"]) if steady and level.get("t_end") is not None else math.nan)


def steady_table(timeline: pd.DataFrame, files: dict | None = None,
                 levels: dict | None = None) -> pd.DataFrame:
    """One row per campaign (cell_id, campaign_id, concurrency, repeat): the window and the
    stats (:func:`level_steady`). ``files``: {campaign_id: files in the campaign} to compute
    ``starved_frac``. ``levels``: {campaign_id: the level's end (the CAMPAIGN row's
    settings["level"])} of time-based levels, whose window is the one their LevelRule judged.
    ``t_start``/``t_end`` bound the window (s since the campaign started), ``wall_start``/
    ``wall_end`` the same instants in wall time (the plots shade them, the telemetry is
    averaged over them). A ``direction`` column (analysis.verdicts.directions) gives one row per
    campaign and direction."""
    import pandas as pd
    cols = ["method", "t_start", "t_end", "wall_start", "wall_end", "limit", "plateau_frac",
            "starved_frac", "buckets", "bytes", "ended_by", "steady_at", "whole_buckets",
            "window_rel_se", "steady"]
    stat_cols = [f"{p}_{k}" for p in ("window", "run") for k in ("n", "mean", "median", "std", "cv")]
    keys = KEYS + (["direction"] if "direction" in timeline else [])
    if timeline.empty:
        return pd.DataFrame(columns=keys + cols + stat_cols)
    tl = timeline.sort_values(KEYS[:2] + ["t"], kind="stable")
    out = []
    for key, g in tl.groupby(keys, sort=False, dropna=False):
        queued = None
        nfiles = (files or {}).get(key[1])
        if nfiles is not None and {"done", "failed", "active"} <= set(g.columns):
            queued = nfiles - g["done"].fillna(0).to_numpy() - g["failed"].fillna(0).to_numpy() \
                - g["active"].fillna(0).to_numpy()
        t = g["t"].to_numpy(dtype=float)
        nb, rt = g["bytes"].to_numpy(dtype=float), g["rate"].to_numpy(dtype=float)
        act = g["active"].to_numpy(dtype=float) if "active" in g else None
        w = level_steady(t, nb, rt, act, concurrency=float(key[2]) if pd.notna(key[2]) else None,
                         queued=queued, level=(levels or {}).get(key[1]))
        origin = float(g["wall"].iloc[0]) - float(t[0])  # the wall time of the campaign's t = 0
        edges = np.concatenate([bucket_bounds(t, g["bytes"], g["rate"])[0][:1], t])
        whole = bool(np.isclose(edges, w.start, rtol=0, atol=1e-6).any()
                     and np.isclose(edges, w.end, rtol=0, atol=1e-6).any())
        row = dict(zip(keys, key, strict=True))
        row.update(method=w.method, t_start=w.start, t_end=w.end,
                   wall_start=origin + w.start, wall_end=origin + w.end, limit=w.limit,
                   plateau_frac=w.plateau_frac, starved_frac=w.starved_frac, buckets=len(g),
                   bytes=float(g["bytes"].sum()), ended_by=w.ended_by, steady_at=w.steady_at,
                   whole_buckets=whole,  # the window holds whole buckets: a sum of rows
                   window_rel_se=window_rel_se(t, nb, rt, act, w.start, w.end, w.limit),
                   steady=is_steady(w.method))
        for p, s in (("window", w.window), ("run", w.run)):
            row.update({f"{p}_n": s.n, f"{p}_mean": s.mean, f"{p}_median": s.median,
                        f"{p}_std": s.std, f"{p}_cv": s.cv})
        out.append(row)
    return pd.DataFrame(out, columns=keys + cols + stat_cols)


NOT_STEADY = ("whole", "not steady")  # methods whose window is no steady state (RULE 3, max hit)


def is_steady(method: str) -> bool:
    """Did the level reach a steady state? False for the whole-run fallback (RULE 3) and for a
    time-based level that hit its maximum duration first ("not steady"): its rate is a mean
    over a window that was not steady, and every output marks it so."""
    return str(method) not in NOT_STEADY


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
    import pandas as pd
    cols = KEYS + ["t", "wall", "bytes", "rate", "active", "done", "failed"]
    split = "direction" in transfers and transfers["direction"].notna().any()
    if split:
        cols += ["bytes_read", "bytes_written"]
    tr = transfers.dropna(subset=["start_time", "finish_time"])
    if tr.empty:
        return pd.DataFrame(columns=cols)
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
        moved = g["_moved"].to_numpy()
        b = np.diff(_integral(s, e, moved / (e - s), edges))
        act = np.diff(_integral(s, e, np.ones_like(s), edges)) / bucket
        ends_sorted = np.sort(e[~g["_failed"].to_numpy()])
        fails_sorted = np.sort(e[g["_failed"].to_numpy()])
        df = pd.DataFrame({"t": edges[1:], "wall": t0 + edges[1:], "bytes": b, "rate": b / bucket,
                           "active": act,
                           "done": np.searchsorted(ends_sorted, edges[1:], side="right"),
                           "failed": np.searchsorted(fails_sorted, edges[1:], side="right")})
        if split:  # a transfer without a direction is a write
            read = g["direction"].eq("read").to_numpy()
            df["bytes_read"] = np.diff(_integral(s, e, np.where(read, moved, 0.0) / (e - s), edges))
            df["bytes_written"] = df["bytes"] - df["bytes_read"]
        for k, v in zip(KEYS, key, strict=True):
            df[k] = v
        parts.append(df)
    return pd.concat(parts, ignore_index=True)[cols]

