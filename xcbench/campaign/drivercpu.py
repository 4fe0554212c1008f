"""The campaign driver's own CPU use and the CPU it may use, so a "client" verdict can tell a
driver at its limit from gateways that needed more clients.

``cpu_limit(pid)`` is the smallest of: the cgroup v2 ``cpu.max`` of the process's cgroup and
every ancestor, the cgroup v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us`` likewise, the CPUs it
may run on (affinity/cpuset) and the host's cores. ``xcbench.limits.cpu_limit`` (the limit
reader for every role) is used when it exists; the private reader below stands in until then.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _walk_up(leaf: Path, top: Path):
    """``leaf`` and each parent directory up to and including ``top``."""
    p = leaf
    while True:
        yield p
        if p == top or top not in p.parents:
            return
        p = p.parent


def _v2_quota(mount: Path, rel: str) -> float | None:
    best = None
    for d in _walk_up(mount / rel.lstrip("/"), mount):
        parts = (_read(d / "cpu.max") or "").split()
        if len(parts) == 2 and parts[0] != "max":
            cores = int(parts[0]) / int(parts[1])
            best = cores if best is None else min(best, cores)
    return best


def _v1_quota(mount: Path, rel: str) -> float | None:
    best = None
    for d in _walk_up(mount / rel.lstrip("/"), mount):
        quota, period = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
        if quota and period and int(quota) > 0 and int(period) > 0:
            cores = int(quota) / int(period)
            best = cores if best is None else min(best, cores)
    return best


def _mounts(proc: Path) -> dict[str, Path]:
    """{'v2': mount, 'v1:cpu': mount} from mountinfo."""
    out: dict[str, Path] = {}
    for line in (_read(proc / "self" / "mountinfo") or "").splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        if rfields[0] == "cgroup2":
            out.setdefault("v2", Path(fields[4]))
        elif rfields[0] == "cgroup" and "cpu" in rfields[2].split(","):
            out.setdefault("v1:cpu", Path(fields[4]))
    return out


def private_cpu_limit(pid: int, proc: Path = Path("/proc")) -> dict:
    """{'cores': float | None, 'source': str}: the tightest CPU limit of ``pid``."""
    found: list[tuple[float, str]] = []
    mounts = _mounts(proc)
    for line in (_read(proc / str(pid) / "cgroup") or "").splitlines():
        hid, controllers, rel = line.split(":", 2)
        if hid == "0" and "v2" in mounts:
            q = _v2_quota(mounts["v2"], rel)
            if q is not None:
                found.append((q, f"cgroup v2 cpu.max ({rel})"))
        elif "cpu" in controllers.split(",") and "v1:cpu" in mounts:
            q = _v1_quota(mounts["v1:cpu"], rel)
            if q is not None:
                found.append((q, f"cgroup v1 cpu.cfs_quota_us ({rel})"))
    host = psutil.cpu_count() or os.cpu_count()
    if host:  # before affinity: a cpuset of every core is reported as the host's cores
        found.append((float(host), "host cores"))
    try:
        found.append((float(len(psutil.Process(pid).cpu_affinity())), "cpuset/affinity"))
    except (psutil.Error, AttributeError, OSError):
        pass
    if not found:
        return {"cores": None, "source": "unknown"}
    cores, source = min(found, key=lambda f: f[0])
    return {"cores": round(cores, 3), "source": source}


def cpu_limit(pid: int) -> dict:
    try:
        from xcbench.limits import cpu_limit as shared  # type: ignore[import-not-found]
    except ImportError:
        return private_cpu_limit(pid)
    return shared(pid)


class DriverCpu:
    """Process CPU seconds of this (driver) process, as cores, per timeline bucket and over a
    campaign; with the limit those cores are counted against."""

    def __init__(self) -> None:
        self.limit = cpu_limit(os.getpid())
        self.start_wall, self.start_cpu = time.time(), time.process_time()
        self._wall, self._cpu = self.start_wall, self.start_cpu

    def fields(self, cores: float | None) -> dict:
        return {"driver_cpu_cores": None if cores is None else round(cores, 3),
                "driver_cpu_limit_cores": self.limit["cores"],
                "driver_cpu_limit_source": self.limit["source"]}

    def sample(self, wall: float | None = None) -> dict:
        """Cores used since the previous sample (the 1 s timeline bucket)."""
        wall, used = time.time() if wall is None else wall, time.process_time()
        span = wall - self._wall
        cores = (used - self._cpu) / span if span > 0 else None
        self._wall, self._cpu = wall, used
        return self.fields(cores)

    def total(self, wall: float | None = None) -> dict:
        """Cores used since this object was made (the campaign level)."""
        wall = time.time() if wall is None else wall
        span = wall - self.start_wall
        return self.fields((time.process_time() - self.start_cpu) / span if span > 0 else None)
