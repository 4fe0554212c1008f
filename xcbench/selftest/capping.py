"""How the self-test makes a bottleneck: one role of each cell under a CPU quota (or the OSDs'
device under a blkio write throttle) while the cell runs, through the run's hooks (CapHooks), and a
matrix run as `xcbench run` runs it, its verdicts stored (run_concluded).

The quota's group is ``xcb-selftest<pid>-<scenario>-<role>``, made with xcbench.system.cgroups when
the cell's gateway is up and removed when the cell ends, however it ends (a failed cell, Ctrl-C,
exit: the groups' context manager, and their registry for a sweep after a kill -9).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from xcbench.analysis.conclude import conclude
from xcbench.ceph.cluster import Cluster
from xcbench.ceph.mini import MiniCluster
from xcbench.errors import XcbError
from xcbench.matrix import load_matrix
from xcbench.run.hooks import DeviceCounter, RunHooks
from xcbench.run.runner import RunOptions, RunStopped, run_matrix
from xcbench.store.jsonl import read_records
from xcbench.store.rundir import RunDir
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
    io: str | None = None  # "bandwidth" | "iops": a blkio write throttle on ``dev`` instead of a quota
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


class CapHooks(RunHooks):
    """The run's hooks (xcbench.run.hooks) that put one role of each cell under a CPU quota (or
    its device under a blkio throttle) once the cell's gateway is up, just before telemetry
    starts, and take it off when the cell ends, however it ends; that stand the uncapped run's
    probes and baseline for this run's where the cap leaves them as they were (``cap.borrow``);
    and that count a throttled device's writes, for the probe and level by level."""

    def __init__(self, cap: Cap, cluster: Cluster | None = None):
        self.cap, self.cluster = cap, cluster

    def cell_ready(self, cell: Any, target: Any, gateway: Any) -> None:
        cores = self.cap.cores.get(cell.id)
        if cores is not None:
            self._apply(cell.id, cores, gateway, target)

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
            kw = {"write_bytes_per_s": int(cores)} if self.cap.io == "bandwidth" else {"write_iops": max(1, int(cores))}
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

    def baseline_rows(self) -> list[dict[str, Any]] | None:
        return self._borrowed("baseline") or None

    def probe_rows(self, cell: Any) -> tuple[list[dict[str, Any]], str] | None:
        rows = [r for r in self._borrowed("probes") if r.get("cell_id") == cell.id]
        return (rows, str(self.cap.borrow)) if rows else None

    def _borrowed(self, table: str) -> list[dict]:
        path = self.cap.borrow / "records" / f"{table}.jsonl" if self.cap.borrow else None
        return read_records(path) if path is not None and path.exists() else []

    def device_counter(self, cell: Any) -> DeviceCounter | None:
        """The OSDs' blkio group's writes to their device: exact (only the OSDs are in it)."""
        io = self.cap.applied.get(cell.id, {}).get("io_group")
        return io.written if io is not None else None

    @contextlib.contextmanager
    def level(self, cell: Any, concurrency: int, repeat: int) -> Iterator[None]:
        """A throttled device's writes/s over the level (blkio counters before and after)."""
        io = self.cap.applied.get(cell.id, {}).get("io_group")
        if io is None:
            yield
            return
        t0, (n0, b0) = time.monotonic(), io.written()
        try:
            yield
        finally:
            dt = max(1e-3, time.monotonic() - t0)
            n1, b1 = io.written()
            self.cap.device.setdefault(cell.id, {})[concurrency] = {
                "iops": (n1 - n0) / dt, "bytes_per_s": (b1 - b0) / dt, "seconds": round(dt, 1)}

    def cell_end(self, cell: Any, run: Any) -> None:
        if self.cap.io_groups is not None:
            self.cap.io_groups.close()
        left = self.cap.groups.close()  # the role's processes go back; the group goes
        if left:
            run.warn(f"selftest: cgroups not removed: {', '.join(left)}")


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


def run_doc(matrix_doc: dict, name: str, cluster: Cluster | None, out: Path, workdir: Path,
            cap: Cap | None = None) -> Any:
    """The matrix ``matrix_doc`` run as `xcbench run` runs it (``cap``: with that role capped),
    its verdicts stored (xcbench.analysis.conclude); (the run, the matrix)."""
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(matrix_doc, sort_keys=False))
    matrix = load_matrix(path, cluster)
    # as `xcbench run` has it: the fio probe of each cell and the iperf3 baseline (a few points)
    opts = options(out, name, extra={"baseline": dict(BASELINE)},
                   hooks=CapHooks(cap, cluster) if cap is not None else RunHooks())
    return run_concluded(matrix, cluster, opts), matrix


def options(store: Path, name: str, **kw: Any) -> RunOptions:
    """A self-test run's options: probes and baseline as `xcbench run` has them, no report, no
    between-run term (a scenario compares runs of one session on one cluster: each level's own
    noise is the noise), the self-test's telemetry; ``kw`` overrides."""
    return RunOptions(**{"store": store, "name": name, "baseline": True, "probes": True,
                         "report": False, "progress": False, "telemetry": TELEMETRY, **kw})


def run_concluded(matrix: Any, cluster: Cluster | None, opts: RunOptions) -> RunDir:
    """Run the matrix and store its verdicts (the run's conclusion: xcbench.analysis.conclude);
    a Ctrl-C concludes what was measured too, then goes on up (RunStopped)."""
    try:
        run = run_matrix(matrix, cluster, opts)
    except RunStopped as e:
        conclude(e.run)
        raise
    conclude(run)
    return run


def mini_pids(cluster: Cluster | None) -> Callable[[], dict[str, list[int]]]:
    if cluster is not None and cluster.embedded and cluster.state_dir is not None:
        return MiniCluster(cluster.state_dir).role_pids
    raise XcbError("selftest: the OSD scenario caps the embedded mini cluster's OSDs "
                   "(a cluster given by --ceph-conf runs its OSDs elsewhere)")
