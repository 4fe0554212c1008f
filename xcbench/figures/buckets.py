"""A campaign's 1-s buckets as time: where each begins and ends, the bytes moved in any span
of them, its rate cut into equal blocks. Pure figures (numbers in, numbers out).

A TIMELINE bucket is labelled by its END (``t`` s since the campaign started) and spans from
the previous bucket's end; bytes inside a bucket count as spread evenly over its span, so a
span's edge inside a bucket takes its share. figures.steady's level rate and the campaign's
LevelRule both read buckets through these functions: the window a level is judged on is the
window its rate is measured over.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from xcbench.figures.stats import Stats, mean_rel_se


def bucket_bounds(t, nbytes=None, rate=None) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each bucket (s): a bucket ends at its ``t`` and starts where the previous
    one ended. The first starts at ``t - bytes / rate`` (its recorded span) when both are known,
    else at 0 (the timeline's clock starts with the campaign), else one bucket before its end."""
    end = np.asarray(t, dtype=float)
    if end.size == 0:
        return end, end
    first = math.nan
    if nbytes is not None and rate is not None:
        b, r = float(np.asarray(nbytes, dtype=float)[0]), float(np.asarray(rate, dtype=float)[0])
        if b > 0 and r > 0 and math.isfinite(b / r):
            first = b / r
    if not math.isfinite(first):
        first = end[0] if end[0] > 0 else (end[1] - end[0] if end.size > 1 else 1.0)
    elif abs(end[0] - first) <= 1e-3:  # t is kept to the ms: the bucket began with the clock
        first = end[0]
    start = np.concatenate([[end[0] - first], end[:-1]])
    return start, end


def bucket_bytes(t, nbytes, rate) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, bytes) of each bucket; a bucket without a byte count: rate x its span."""
    rate = np.asarray(rate, dtype=float)
    nb = np.full(rate.shape, np.nan) if nbytes is None else np.asarray(nbytes, dtype=float)
    b0, b1 = bucket_bounds(t, nb, rate)
    moved = np.where(np.isfinite(nb), nb, rate * (b1 - b0))
    return b0, b1, np.where(np.isfinite(moved), moved, 0.0)


def window_stats(t, nbytes, start: float, end: float, first_start: float | None = None) -> Stats:
    """Stats of the rate over [start, end] from per-bucket bytes (buckets ending at ``t``):
    mean = the bytes in the window / its seconds; std, CV, median of the window cut into
    equal blocks of about 1 s (at least one), so every second weighs the same."""
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        return Stats.of([])
    points = max(1, int(round(end - start)))
    rates = block_rates(t, nbytes, start, end, points, first_start)
    st = Stats.of(rates)
    moved = window_bytes(t, nbytes, start, end, first_start)
    return dataclasses.replace(st, mean=moved / (end - start),
                               cv=st.std / (moved / (end - start)) if moved > 0 else math.nan)


def _cumulative(t, nbytes, first_start: float | None) -> tuple[np.ndarray, np.ndarray]:
    """(instants, bytes moved by then): 0 at the first bucket's start (default: t = 0, where
    the campaign's clock starts), then each bucket's end."""
    t = np.asarray(t, dtype=float)
    cum = np.concatenate([[0.0], np.cumsum(np.nan_to_num(np.asarray(nbytes, dtype=float)))])
    x0 = 0.0 if first_start is None else min(float(first_start), float(t[0]) if t.size else 0.0)
    return np.concatenate([[x0], t]), cum


def window_bytes(t, nbytes, start: float, end: float, first_start: float | None = None) -> float:
    """Bytes moved in [start, end], from per-bucket byte counts (buckets ending at ``t``; the
    bytes of a bucket spread evenly over it)."""
    x, cum = _cumulative(t, nbytes, first_start)
    return float(np.diff(np.interp([start, end], x, cum))[0])


def block_rates(t, nbytes, start: float, end: float, points: int,
                first_start: float | None = None) -> np.ndarray:
    """Mean rate in ``points`` equal blocks of [start, end], from per-bucket byte counts
    (bytes spread evenly over each bucket: cumulative bytes interpolated at the block edges)."""
    x, cum = _cumulative(t, nbytes, first_start)
    edges = np.linspace(start, end, points + 1)
    c = np.interp(edges, x, cum)
    return np.diff(c) / np.diff(edges)


def ramp_end(t, nbytes, rate, active, limit: float) -> float:
    """Where a level's ramp ends (s since the campaign started): the start of its first bucket
    at the concurrency limit (time-averaged ``active`` within 0.5 of it), else the end of its
    first bucket (no ``active``: the first second holds the transfers' opening)."""
    b0, b1 = bucket_bounds(t, nbytes, rate)
    if not b0.size:
        return math.nan
    act = np.asarray(active, dtype=float) if active is not None else np.array([])
    if act.size == b0.size and math.isfinite(limit):
        at = np.flatnonzero(act >= limit - 0.5)
        if at.size:
            return float(b0[at[0]])
    return float(b1[0])


def window_rel_se(t, nbytes, rate, active, start: float, end: float, limit: float) -> float:
    """The relative standard error of the rate over the window [start, end] of a level whose
    concurrency limit is ``limit``: its ~1-s blocks' mean error, autocorrelation counted and
    the window's choice too (the spread of the window and the equally long stretch before it,
    after the level's ramp, around their trend, where that is larger: figures.stats.mean_rel_se).
    NaN for fewer than 3 blocks."""
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        return math.nan
    t = np.asarray(t, dtype=float)
    b0, _, moved = bucket_bytes(t, nbytes, rate)
    win = block_rates(t, moved, start, end, max(1, int(round(end - start))), b0[0])
    # the window's choice: what the equally long stretch before it would have said (after the
    # ramp), pooled with it: a quiet window picked after a loud one takes the loud one's spread
    r0 = ramp_end(t, nbytes, rate, active, limit)
    r0 = min(max(r0, start - (end - start)), start) if math.isfinite(r0) else start
    pool = block_rates(t, moved, r0, end, max(1, int(round(end - r0))), b0[0])
    return mean_rel_se(win, pool)
