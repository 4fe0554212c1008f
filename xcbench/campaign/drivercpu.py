"""The campaign driver's own CPU use and the CPU it may use, so a "client" verdict can tell a
driver at its limit from gateways that needed more clients.

The limit is :func:`xcbench.system.limits.cpu_limit`'s, the same reader every role's limit comes from.
"""

from __future__ import annotations

import os
import time

from xcbench.system.limits import cpu_limit as role_limit


def cpu_limit(pid: int) -> dict:
    """The driver's limit as cores and where it comes from (xcbench.system.limits, as for every role)."""
    lim = role_limit(pid)
    return {"cores": None if lim.cores is None else round(lim.cores, 3), "source": lim.source}


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
