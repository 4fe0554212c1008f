"""How the self-test makes a bottleneck: one role of each cell under a CPU quota (or the OSDs'
device under a blkio write throttle) while the cell runs, and a matrix run as `xcbench run` runs it.

The quota's group is ``xcb-selftest<pid>-<scenario>-<role>``, made with xcbench.system.cgroups when
the cell's gateway is up and removed when the cell ends, however it ends (a failed cell, Ctrl-C,
exit: the groups' context manager, and their registry for a sweep after a kill -9).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from xcbench.ceph.cluster import Cluster
from xcbench.ceph.mini import MiniCluster
from xcbench.errors import XcbError
from xcbench.matrix import load_matrix
from xcbench.run.runner import Runner, RunOptions, run_matrix
from xcbench.store.jsonl import read_records
from xcbench.telemetry.role_processes import fuse_pids

TELEMETRY = "host:0.5,roles:0.5,gateway,ceph"
# iperf3 on loopback: a few points, in the write direction only: every self-test campaign pushes,
# and a write point is held against the write direction's baseline (RunData.network_for)
BASELINE = {"streams": (1, 4), "seconds": 2, "directions": ("write",)}


@dataclass
class Cap:
    """What a capped run caps: ``role`` of each cell in ``cores`` (cell id -> cores)."""
    role: str
    cores: dict[str, float]
    groups: Any  # xcbench.system.cgroups.CpuGroups
    cluster_pids: Callable[[], dict[str, list[int]]] | None = None  # the mini cluster's daemons
    applied: dict[str, dict[str, Any]] = field(default_factory=dict)  # cell id -> what was capped
    io: str | None = None  # "bps" | "iops": a blkio write throttle on ``dev`` instead of a quota
    dev: str | None = None
    io_groups: Any = None  # xcbench.system.blkio.IoGroups
    device: dict[str, dict[int, dict[str, float]]] = field(default_factory=dict)  # cell -> level -> writes/s
    # the uncapped run, whose fio probes and iperf3 baseline stand for this run's (borrows)
    borrow: Path | None = None
    weight: int | None = None  # the group's CPU weight (confirm's host-cpu relief: CPU given)


def borrows(cap: str, io: str | None) -> bool:
    """Whether a capped run takes the uncapped run's probes and baseline instead of measuring
    them again: a CPU quota on the gateway or the client leaves the storage's ceiling and the
    network as they were, and a probe under the client's quota would measure the quota (fio is a
    child of the capped xcbench process). A quota on the OSDs or the mount, or a device
    throttle, changes the ceiling: those runs probe under it."""
    return io is None and set(cap.split("+")) <= {"gateway", "client"}


class CappingRunner(Runner):
    """A Runner that puts one role of each cell under a CPU quota once its gateway is up (just
    before telemetry starts) and removes the quota when the cell ends, however it ends."""

    cap: Cap

    def _telemetry(self, cell, target, gateway, listener):
        cores = self.cap.cores.get(cell.id)
        if cores is not None:
            self._apply(cell.id, cores, gateway, target)
        return super()._telemetry(cell, target, gateway, listener)

    def _apply(self, cell_id: str, cores: float, gateway: Any, target: Any = None) -> None:
        role = self.cap.role
        pids = []
        for r in role.split("+"):  # "gateway+client": both roles in one group (a shared quota)
            if r == "gateway":
                pids += list(gateway.pids)
            elif r == "client":
                pids += [os.getpid()]  # every thread: the campaign's clients, telemetry
            elif r == "mount":  # the gateway's ceph-fuse, where the cell has one
                info = getattr(target, "info", None) or {}
                if info.get("mount") == "fuse" and info.get("mountpoint"):
                    pids += fuse_pids(info["mountpoint"], getattr(self.cluster, "state_dir", None))()
            else:  # osd
                pids += (self.cap.cluster_pids() if self.cap.cluster_pids else {}).get(r, [])
        if not pids:
            raise XcbError(f"selftest: no {role} process to cap in cell {cell_id}")
        if self.cap.io:  # the role's disk writes, throttled on its device
            kw = {"write_bps": int(cores)} if self.cap.io == "bps" else {"write_iops": max(1, int(cores))}
            io = self.cap.io_groups.create(f"{role}-{cell_id[:8]}", self.cap.dev, **kw)
            self.cap.applied[cell_id] = {"role": role, "io": self.cap.io, "limit": cores,
                                         "group": str(io.path), "pids": pids, "io_group": io}
            for pid in pids:
                io.add(pid)
            return
        if self.cap.weight is not None:  # CPU given: a role held by a quota of its own keeps it
            pids = [p for p in pids if not in_cpu_group(p)]
            if not pids:
                raise XcbError(f"selftest: every {role} process of cell {cell_id} is under a CPU "
                               "quota of its own: no CPU to give")
        g = self.cap.groups.create(f"{role.replace('+', '-')}-{cell_id[:8]}", cores, weight=self.cap.weight)
        self.cap.applied[cell_id] = {"role": role, "cores": cores, "group": str(g.path), "pids": pids}
        for pid in pids:
            g.add(pid)

    def _baseline(self) -> None:
        rows = self._borrowed("baseline")
        if not rows:
            return super()._baseline()
        self.sink("baseline", rows)
        self.run.state.baseline_done = True
        self.run.save_manifest()

    def _probe(self, cell, target) -> None:
        rows = [r for r in self._borrowed("probes") if r.get("cell_id") == cell.id]
        if not rows:
            return super()._probe(cell, target)
        self.sink("probes", rows)
        self.run.set_cell(cell.id, probes_from=str(self.cap.borrow))

    def _borrowed(self, table: str) -> list[dict]:
        path = self.cap.borrow / "records" / f"{table}.jsonl" if self.cap.borrow else None
        return read_records(path) if path is not None and path.exists() else []

    def _device_counter(self, cell):
        """The OSDs' blkio group's writes to their device: exact (only the OSDs are in it)."""
        io = self.cap.applied.get(cell.id, {}).get("io_group")
        return io.written if io is not None else None

    def _campaign(self, cell, gateway, level, repeat):
        """A throttled device's writes/s over the level (blkio counters before and after)."""
        io = self.cap.applied.get(cell.id, {}).get("io_group")
        if io is None:
            return super()._campaign(cell, gateway, level, repeat)
        t0, (n0, b0) = time.monotonic(), io.written()
        try:
            return super()._campaign(cell, gateway, level, repeat)
        finally:
            dt = max(1e-3, time.monotonic() - t0)
            n1, b1 = io.written()
            self.cap.device.setdefault(cell.id, {})[level] = {
                "iops": (n1 - n0) / dt, "Bps": (b1 - b0) / dt, "seconds": round(dt, 1)}

    def _cell(self, cell) -> None:
        try:
            super()._cell(cell)
        finally:
            if self.cap.io_groups is not None:
                self.cap.io_groups.close()
            left = self.cap.groups.close()  # the role's processes go back; the group goes
            if left:
                self.run.warn(f"selftest: cgroups not removed: {', '.join(left)}")


def in_cpu_group(pid: int) -> bool:
    """Is the process in a CPU group xcbench made (``xcb-*``: a quota of its own, e.g. a cores
    cell's gateway)? Moving it into another group would lift that quota."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        _, ctrl, path = (line.split(":", 2) + ["", ""])[:3]
        if ("cpu" in ctrl.split(",") or ctrl == "") and Path(path).name.startswith("xcb-"):
            return True
    return False


def capping_runner(cap: Cap) -> type[CappingRunner]:
    return type("SelftestRunner", (CappingRunner,), {"cap": cap})


def run_doc(matrix_doc: dict, name: str, cluster: Cluster | None, out: Path, workdir: Path,
            runner: Callable[..., Runner] | None = None) -> Any:
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(matrix_doc, sort_keys=False))
    matrix = load_matrix(path, cluster)
    # as `xcbench run` has it: the fio probe of each cell and the iperf3 baseline (a few points)
    opts = RunOptions(store=out, name=name, baseline=True, probes=True, report=False,
                      progress=False, telemetry=TELEMETRY, extra={"baseline": dict(BASELINE)})
    return run_matrix(matrix, cluster, opts, view=None, runner=runner), matrix


def mini_pids(cluster: Cluster | None) -> Callable[[], dict[str, list[int]]]:
    if cluster is not None and cluster.embedded and cluster.state_dir is not None:
        return MiniCluster(cluster.state_dir).role_pids
    raise XcbError("selftest: the OSD scenario caps the embedded mini cluster's OSDs "
                   "(a cluster given by --ceph-conf runs its OSDs elsewhere)")
