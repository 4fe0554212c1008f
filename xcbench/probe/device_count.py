"""A probe's write jobs counted at the storage device: each job alone, the device's cumulative
write IOs and bytes read meanwhile, and its rate over the span the counter moved.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from xcbench.probe import fio

DeviceCounter = Callable[[], tuple[int, int]]  # cumulative (write IOs, write bytes) of a device
POLL = 0.1  # s between reads of the device's counters while a write job runs
WRITE_JOBS = ("randwrite", "write")  # the jobs counted at the device, each alone


def active_rate(samples: Sequence[tuple[float, int, int]]) -> tuple[float, float] | None:
    """(IOs/s, bytes/s) over the span in which the IO counter moved: from the last reading
    before it first rose to the first reading after it last rose (``samples``: (monotonic s,
    IOs, bytes), cumulative). fio's start (connecting, laying out objects) and end are thus not
    counted as idle time, nor is a burst at either end spread over a shorter runtime. None:
    the counter never moved."""
    up = [i for i in range(1, len(samples)) if samples[i][1] > samples[i - 1][1]]
    if not up:
        return None
    (t0, n0, b0), (t1, n1, b1) = samples[up[0] - 1], samples[up[-1]]
    return ((n1 - n0) / (t1 - t0), (b1 - b0) / (t1 - t0)) if t1 > t0 else None


def _counted(device: DeviceCounter, run: Callable[[], dict[str, Any]]
             ) -> tuple[dict[str, Any], tuple[float, float] | None]:
    """``run()`` (one fio job) with the device's counters read every POLL s meanwhile."""
    samples = [(time.monotonic(), *device())]
    done = threading.Event()

    def poll() -> None:
        while not done.wait(POLL):
            samples.append((time.monotonic(), *device()))
    t = threading.Thread(target=poll, name="xcb-probe-device", daemon=True)
    t.start()
    try:
        data = run()
    finally:
        done.set()
        t.join()
    samples.append((time.monotonic(), *device()))
    return data, active_rate(samples)


def counted_jobs(jobfiles: list[Path], output: Path, jobs: list[str], timeout: float,
                 device: DeviceCounter, user: tuple[int, int] | None = None
                 ) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
    """Each write job alone (the IOPS job, then the bandwidth job) with the storage device's
    write IOs and bytes counted while it runs, then the other jobs: (fio's JSON of all jobs,
    job -> the device's (write IO/s, write bytes/s) during it: :func:`active_rate`). The IOPS
    job's figures are the device's IO-count ceiling as fio's 4 KiB writes reach it, the
    bandwidth job's its bytes ceiling as large writes reach it (analysis.verdicts.rules)."""
    data: dict[str, Any] = {}
    found: dict[str, tuple[float, float]] = {}
    parts = []
    for job in (j for j in jobs if j in WRITE_JOBS):
        got, rate = _counted(device, functools.partial(
            fio.run_fio, jobfiles, output=output.with_suffix(f".{job}.json"), timeout=timeout,
            sections=[job], user=user))
        parts.append(got)
        if rate is not None:
            found[job] = rate
    rest = [j for j in jobs if j not in WRITE_JOBS]
    if rest:
        parts.append(fio.run_fio(jobfiles, output=output, timeout=timeout, sections=rest,
                                 user=user))
    data = dict(parts[0]) if parts else {}
    data["jobs"] = [j for part in parts for j in part.get("jobs") or []]
    return data, found
