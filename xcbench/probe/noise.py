"""A probe's own noise, from fio's interval samples.

fio writes one bandwidth log per job process (``write_bw_log=<stem>`` -> ``<stem>_bw.<n>.log``,
lines ``msec, KiB/s, ddir, bs, offset``); with ``log_avg_msec`` each line is the mean over that
interval. fio writes a line only for an interval in which the job completed some I/O ("No
entries for interval" in fio's stat.c): a job writing large blocks slowly (4 MiB objects at a few
per second) has no line for many intervals, and each missing line is a zero of that job, not a
gap. The probe's rate in one interval is the sum over its jobs, zeros included (keeping only the
intervals every job logged kept the busy ones: 81 MB/s from jobs fio itself measured at 66); the
ceiling is the mean of those sums after the ramp, and its relative standard error is the
samples' spread over the square root of their effective number: successive intervals are
correlated (a page-cache flush spans several), so n is shrunk by the lag-1 autocorrelation,
n (1 - r) / (1 + r) (r >= 0), the usual AR(1) correction (figures.stats.mean_rel_se: the same
function the level rates use).

The series runs to the job's end (its runtime in fio's JSON), not to its last line: a job whose
writes stall before it ends logs nothing for the stall, and fio's ``ss=bw:10%`` can stop a job on
a stall (two equal readings are "steady"). Ending at the last line read the ceiling from the
seconds before the stall. A line off an interval boundary is an interval cut short by the job's
end, and is left out.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from xcbench.figures.stats import MIN_SAMPLES, mean_rel_se

KIB = 1024


def read_log(path: str | os.PathLike) -> list[tuple[int, float]]:
    """(msec, bytes/s) of the write lines of one fio bandwidth log."""
    out = []
    for line in Path(path).read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        if parts[2] not in ("1", ""):  # ddir: 0 read, 1 write, 2 trim
            continue
        out.append((int(parts[0]), float(parts[1]) * KIB))
    return out


def logs(stem: str | os.PathLike) -> list[Path]:
    """The per-job bandwidth logs fio wrote for ``write_bw_log=<stem>``."""
    stem = Path(stem)
    return sorted(stem.parent.glob(f"{stem.name}_bw.*.log"))


def series(paths: list[Path], interval_ms: int, end_ms: float | None = None) -> list[float]:
    """Per interval, the sum over jobs of their bytes/s. A job's interval i is its line at
    (i + 1) x interval (within a quarter interval: fio's timer drifts a few ms), and an interval
    it has no line for is a zero (fio logs none when no I/O completed in it). A line off a
    boundary was cut short by the job's end and is left out. The series runs to ``end_ms``, the
    jobs' runtime, where it is known (the whole intervals before it), else to the first job's
    last line. A job with no line at all completed nothing in its whole run and cannot be placed
    in time: it is left out."""
    slack = interval_ms / 4
    jobs: list[dict[int, float]] = []
    for p in paths:
        per: dict[int, float] = {}
        for ms, bytes_per_s in read_log(p):
            k = round(ms / interval_ms)
            if k >= 1 and abs(ms - k * interval_ms) <= slack:
                per.setdefault(k - 1, bytes_per_s)  # a short last interval at a boundary: the first wins
        if per:
            jobs.append(per)
    if not jobs:
        return []
    logged = [max(per) + 1 for per in jobs]
    if end_ms is None:
        n = min(logged)
    else:  # the whole intervals before the end; never fewer than a job logged
        n = max(int(end_ms // interval_ms), max(logged))
    return [sum(per.get(i, 0.0) for per in jobs) for i in range(n)]


def summary(samples: list[float], interval_ms: int, ramp_s: float = 0.0) -> dict[str, Any]:
    """{bw_steady, bw_cv, bw_n, bw_rel_se} of the samples after ``ramp_s`` (NaN when too few)."""
    skip = int(math.ceil(ramp_s * 1000 / interval_ms)) if ramp_s > 0 else 0
    x = np.asarray(samples[skip:], dtype=float)
    n = len(x)
    out: dict[str, Any] = {"bw_steady": math.nan, "bw_cv": math.nan, "bw_n": n,
                           "bw_rel_se": math.nan}
    if n == 0:
        return out
    mean = float(x.mean())
    out["bw_steady"] = mean
    if n < MIN_SAMPLES or mean <= 0:
        return out
    out["bw_cv"] = float(x.std(ddof=1)) / mean
    out["bw_rel_se"] = mean_rel_se(x)
    return out


def from_logs(stem: str | os.PathLike, interval_ms: int, ramp_s: float = 0.0,
              end_ms: float | None = None) -> dict[str, Any]:
    """:func:`summary` of the logs fio wrote for ``write_bw_log=<stem>``, to ``end_ms``."""
    return summary(series(logs(stem), interval_ms, end_ms), interval_ms, ramp_s)
