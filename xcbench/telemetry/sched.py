"""What the scheduler says about waiting for a CPU: pressure (PSI) and per-thread run-queue wait.

    read_pressure("/proc/pressure/cpu") -> {"some": 35.6, "full": 0.0}   cumulative stall seconds
    thread_times(pid) -> {tid: (run_s, wait_s, comm)}                   from /proc/PID/task/*/schedstat
    cgroup_pressure_file(pid) -> (Path | None, why)                     the role's own PSI, if any

Busy cores alone do not say a CPU is saturated: a 2-core host 81 % busy may or may not have
work queued. Pressure ``some`` is the share of time at least one runnable task waited for a
CPU; schedstat's second field is the time a thread spent runnable on a runqueue without running
(CFS throttling included: measured on kernel 6.18, a spinning thread under a 0.25-core v1 quota
waits 0.75 s per second). Cumulative counters: the samplers turn them into shares of a tick.

Per-cgroup PSI exists only in cgroup v2 groups (``cpu.pressure``); cgroup v1 hierarchies have
none, and a process in the v2 root group has only the system figure. The samplers then fall
back to the per-task figures, and say so.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from xcbench.system.limits import CGROUP_ROOT, PROC, proc_cgroups, v2_mount

PRESSURE = Path("/proc/pressure/cpu")


def read_pressure(path: str | Path = PRESSURE) -> dict[str, float]:
    """{"some": seconds, "full": seconds} stalled since boot (PSI ``total=`` is in µs); {} when
    the file is absent (a kernel without PSI, or booted with psi=0)."""
    out: dict[str, float] = {}
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        for field in rest.split():
            key, _, value = field.partition("=")
            if key == "total":
                try:
                    out[kind] = int(value) / 1e6
                except ValueError:
                    pass
    return out


def thread_times(pid: int, proc: Path = PROC, names: dict[int, str] | None = None,
                 stamps: dict[int, float] | None = None) -> dict[int, tuple[float, float, str]]:
    """{tid: (seconds on a CPU, seconds runnable but waiting, thread name)} of a process's
    threads; {} when the process is gone. /proc/PID/schedstat is the leader thread's alone: a
    process's wait is the sum over its threads. ``names`` ({tid: name}, kept by the caller)
    spares re-reading the name of a thread seen before (an OSD has ~60 threads). ``stamps``
    gets each thread's monotonic time of reading: a rate over two readings divides by the
    thread's own interval (reading a busy process's threads takes tens of ms on a loaded host)."""
    out: dict[int, tuple[float, float, str]] = {}
    base = proc / str(pid) / "task"
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for tid in tids:
        try:
            at = time.monotonic()
            run, wait, *_ = (base / tid / "schedstat").read_text().split()
            comm = names.get(int(tid)) if names is not None else None
            if comm is None:
                comm = (base / tid / "comm").read_text().strip()
                if names is not None:
                    names[int(tid)] = comm
        except (OSError, ValueError):
            continue  # the thread exited between the listing and the read
        out[int(tid)] = (int(run) / 1e9, int(wait) / 1e9, comm)
        if stamps is not None:
            stamps[int(tid)] = at
    return out


def cgroup_pressure_file(pid: int, root: Path = CGROUP_ROOT, proc: Path = PROC) -> tuple[Path | None, str]:
    """(the cpu.pressure file of the process's own cgroup, '') or (None, why there is none)."""
    try:
        cg = proc_cgroups(pid, proc)
    except OSError:
        return None, "process gone"
    v1 = cg.get("cpu")
    if v1 not in (None, "/"):  # a v1 quota group: PSI only where the kernel offers it there
        f = root / "cpu" / v1.lstrip("/") / "cpu.pressure"
        if f.exists():
            return f, ""
    rel = cg.get("")
    m = v2_mount(root, proc)
    if rel in (None, "/") or m is None:
        why = "cgroup v1 group without cpu.pressure" if v1 not in (None, "/") else "root cgroup"
        return None, f"no per-cgroup CPU pressure ({why}): per-task run-queue wait instead"
    f = m / rel.lstrip("/") / "cpu.pressure"
    return (f, "") if f.exists() else (None, f"no {f}: per-task run-queue wait instead")
