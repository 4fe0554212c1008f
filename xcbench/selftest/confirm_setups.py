"""The bottlenecks the self-test's confirmations make, kept made through a run and every replay of
its confirm (xcbench.selftest.confirming): a limit the run did not make, so each arm meets it as
the run did and only the experiment's own change differs.

- ``osd_limits``: the embedded cluster's OSDs in a CPU-quota group and/or a blkio group with a
  write-bytes and/or write-IOs throttle on their device (groups xcbench makes and records:
  confirm finds them, xcbench.selftest.lifts, and lifts the named sub-kind's own);
- ``cpu_load``: processes of the self-test's own that keep the host's CPUs busy (nice 0), the
  "other load" whose CPU confirm's host-cpu relief gives to the roles; stopped, by their pids,
  when the block ends;
- ``driver_quota``: the campaign driver (this process) under a CPU quota while each campaign
  runs, the run's and every replay's (confirm's ``site``: the client experiment's own quota
  replaces it in its arms), and the device counter of the OSDs' throttle group for the rules.

Everything is removed when the block ends, however it ends (the groups' registry sweeps them
after a kill -9).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from xcbench.ceph.cluster import Cluster
from xcbench.run.hooks import DeviceCounter, RunHooks
from xcbench.selftest import storage_io
from xcbench.selftest.capping import Cap, CapHooks, mini_pids
from xcbench.system import proc
from xcbench.system.blkio import IoGroups
from xcbench.system.cgroups import CpuGroups

# a busy loop of the self-test's own: one process per core it loads, nice 0 like the roles
BUSY = "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nwhile True:\n    pass\n"


@dataclass
class Made:
    """What a setup made: its groups (for the device counter), its figures (for the checks)."""
    io_group: Any = None
    figures: dict[str, Any] = field(default_factory=dict)

    def device_counter(self) -> DeviceCounter | None:
        return self.io_group.written if self.io_group is not None else None


class SiteHooks(RunHooks):
    """The run's and each replay's hooks: the OSDs' throttle group counts their device writes
    (the IOPS rule holds device IOs against device IOs), and the driver is held by its quota
    (``driver``: cores) while each campaign runs."""

    def __init__(self, made: Made, driver: float | None = None, groups: CpuGroups | None = None):
        self.made, self.driver, self.groups = made, driver, groups
        self._cap: CapHooks | None = None

    def cell_ready(self, cell: Any, target: Any, gateway: Any) -> None:
        if self.driver is not None and self.groups is not None:
            self._cap = CapHooks(Cap("client", {cell.id: self.driver}, self.groups))
            self._cap.cell_ready(cell, target, gateway)

    def device_counter(self, cell: Any) -> DeviceCounter | None:
        return self.made.device_counter()

    def cell_end(self, cell: Any, run: Any) -> None:
        if self._cap is not None:
            self._cap.cell_end(cell, run)
            self._cap = None


@contextlib.contextmanager
def osd_limits(cluster: Cluster | None, tag: str, cores: float | None = None,
               write_bytes_per_s: int | None = None, write_iops: int | None = None) -> Iterator[Made]:
    """The OSDs under these limits for the block (groups ``xcb-<tag>-osd``)."""
    pids = mini_pids(cluster)()["osd"]
    made = Made(figures={"osd_cores": cores, "write_bytes_per_s": write_bytes_per_s, "write_iops": write_iops})
    with CpuGroups(None, run=tag) as cpu, IoGroups(None, run=tag) as io:
        if cores is not None:
            g = cpu.create("osd", cores)
            for p in pids:
                g.add(p)
        if write_bytes_per_s is not None or write_iops is not None:
            made.io_group = io.create("osd", storage_io.device(cluster), write_bytes_per_s=write_bytes_per_s,
                                      write_iops=write_iops)
            for p in pids:
                made.io_group.add(p)
        yield made


@contextlib.contextmanager
def cpu_load(processes: int) -> Iterator[Made]:
    """``processes`` busy loops of the self-test's own for the block, started and stopped by the
    one process helper (recorded: the next command reaps them after a kill -9)."""
    procs = proc.ProcessSet()
    try:
        started = [proc.spawn([sys.executable, "-c", BUSY], name="xcb-busy", procs=procs)
                   for _ in range(processes)]
        yield Made(figures={"load_processes": processes, "load_pids": [p.pid for p in started]})
    finally:
        procs.stop_all()


@contextlib.contextmanager
def nothing() -> Iterator[Made]:
    yield Made()
