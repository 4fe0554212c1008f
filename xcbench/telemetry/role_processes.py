"""Which processes play which role in a cell: the pid providers of the ``roles`` device.

    client   the xcbench driver (this process: the campaign runs in it, gfal2/XRootD threads)
    gateway  the cell's xrootd + cmsd (Gateway.pids)
    mount    the ceph-fuse process of the cell's CephFS mount (none for tmpfs, rados, kernel mounts)
    osd, mds, mon, mgr   the embedded mini cluster's daemons (its pid files). For a cluster given
             by --ceph-conf they are looked for once among this host's processes (a vstart
             cluster runs here); if none is found they are *unknown*, and the samples say so:
             those processes run on other hosts
    probe    fio while a probe runs (children of the driver named fio, and their job processes)

Each provider is called on every telemetry tick; a provider that fails gives no processes.

Besides RoleSampler's rows, per role and tick (xcbench.telemetry.sched):
    role_runq_wait         seconds its threads waited on a runqueue per second (CFS throttling
                           included): a role that waits as long as it runs is held by a CPU
    role_hot_thread_cores  its busiest thread's cores [role, thread (name), tid]: a thread near
                           one core caps the role whatever its quota
    role_hot_thread_wait   that thread's run-queue wait, seconds per second
    role_cpu_pressure      share of the tick stalled on CPU in the role's own cgroup (PSI
                           ``some``), where its cgroup has cpu.pressure; else one row of value
                           None whose ``source`` says why (cgroup v1 has none)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from xcbench.ceph.cluster import Cluster
from xcbench.ceph.mini import MiniCluster
from xcbench.system import proc
from xcbench.telemetry.roles import RoleSampler
from xcbench.telemetry.sched import cgroup_pressure_file, read_pressure, thread_times

CLUSTER_ROLES = ("osd", "mds", "mon", "mgr")
DAEMONS = {"ceph-osd": "osd", "ceph-mds": "mds", "ceph-mon": "mon", "ceph-mgr": "mgr"}
Provider = Callable[[], list[int]]
SOMETIMES = ("probe",)  # roles with processes only during a phase of the cell
NO_PROCESS = "unknown (no process)"  # xcbench.telemetry.roles.combine_limits' word for it


def driver_pids() -> list[int]:
    return [os.getpid()]


def fio_pids() -> list[int]:
    """fio processes this driver started (the probe's job processes are their children)."""
    out = []
    for c in psutil.Process().children():
        try:
            if c.name() == "fio":
                out.append(c.pid)
        except psutil.Error:
            continue
    return out


def _argv(pid: int) -> list[str]:
    return [a for a in (proc.cmdline(pid) or []) if a]


def fuse_pids(mountpoint: str | Path, state_dir: str | Path | None = None) -> Provider:
    """The ceph-fuse process serving ``mountpoint``: the pid recorded with the mount (embedded
    cluster), else found once by its command line; looked for again when it is gone."""
    mnt = str(Path(mountpoint).absolute())
    cache: list[int] = []

    def find() -> list[int]:
        if cache and _is_fuse_of(cache[0], mnt):
            return list(cache)
        cache.clear()
        if state_dir is not None:
            for f in (Path(state_dir) / "mounts").glob("*.json"):
                try:
                    rec = json.loads(f.read_text())
                except (OSError, ValueError):
                    continue
                if rec.get("mountpoint") == mnt and rec.get("pid") and _is_fuse_of(int(rec["pid"]), mnt):
                    cache.append(int(rec["pid"]))
                    return list(cache)
        for p in psutil.process_iter(["name"]):
            if p.info["name"] == "ceph-fuse" and _is_fuse_of(p.pid, mnt):
                cache.append(p.pid)
                break
        return list(cache)
    return find


def _is_fuse_of(pid: int, mnt: str) -> bool:
    argv = _argv(pid)
    return bool(argv) and os.path.basename(argv[0]) == "ceph-fuse" and argv[-1] == mnt


def local_daemons(conf: str | Path) -> dict[str, list[int]]:
    """{role: pids} of ceph daemons on this host whose command line names ``conf``."""
    out: dict[str, list[int]] = {}
    conf = str(Path(conf).absolute())
    for p in psutil.process_iter(["name"]):
        role = DAEMONS.get(p.info["name"] or "")
        if role and conf in _argv(p.pid):
            out.setdefault(role, []).append(p.pid)
    return out


def cluster_providers(cluster: Cluster | None) -> tuple[dict[str, Provider], str | None]:
    """(providers of osd/mds/mon/mgr, note); the note says why the roles are unknown."""
    if cluster is None or getattr(cluster, "conf", None) is None:
        return {}, None
    if cluster.embedded and cluster.state_dir is not None:
        mini = MiniCluster(cluster.state_dir)
        def of(role: str) -> Provider:
            return lambda: mini.role_pids()[role]
        return {r: of(r) for r in CLUSTER_ROLES}, None
    found = local_daemons(cluster.conf)
    if not found:
        return {}, (f"unknown (the daemons of the cluster {cluster.conf} do not run on this host: "
                    "their CPU and limits cannot be read here)")

    def fixed(pids: list[int]) -> Provider:
        return lambda: [p for p in pids if psutil.pid_exists(p)]
    return {r: fixed(found.get(r, [])) for r in CLUSTER_ROLES}, None


def providers(*, gateway: Any, target: Any, cluster: Cluster | None) -> tuple[dict[str, Provider], str | None]:
    """Every role of a cell with its pid provider, and the note for roles that are unknown."""
    roles: dict[str, Provider] = {"client": driver_pids}
    if gateway is not None and not hasattr(gateway, "agent_role_sample"):
        roles["gateway"] = lambda: list(gateway.pids)  # else its agents measure it on its hosts
    info = getattr(target, "info", None) or {}
    if info.get("mount") == "fuse" and info.get("mountpoint"):
        roles["mount"] = fuse_pids(info["mountpoint"], getattr(cluster, "state_dir", None))
    more, note = cluster_providers(cluster)  # in tmpfs cells too: the daemons share the host
    roles.update(more)
    roles["probe"] = fio_pids
    return roles, note


class CellRoleSampler(RoleSampler):
    """RoleSampler plus, for roles that run elsewhere, a limit row saying they are unknown (no
    CPU row: their use was not measured, and 0 would be a lie)."""

    def __init__(self, roles: dict[str, Provider], *, remote: tuple[str, ...] = (),
                 remote_note: str | None = None, agent_gateway: Any = None, **kw: Any):
        super().__init__(roles, **kw)
        self.remote, self.remote_note = remote, remote_note
        self.agent_gateway = agent_gateway  # a gateway on ssh hosts: its agents' samples
        self._seen: dict[str, list[int]] = {}  # role -> pids of this tick (RoleSampler._members)
        self._threads: dict[tuple[int, int], tuple[float, float, float]] = {}  # (pid, tid) -> (run, wait, read at)
        self._psi: dict[str, tuple[Path, dict[str, float]]] = {}  # role -> (its cpu.pressure, last)
        self._psi_noted: set[str] = set()
        self._names: dict[int, dict[int, str]] = {}  # pid -> {tid: thread name}
        self._sched_mono: float | None = None
        self._dt: float | None = None

    def _members(self, role: str, named: dict[str, list[int]]) -> list[psutil.Process]:
        got = super()._members(role, named)
        self._seen[role] = [p.pid for p in got]
        return got

    def _sched_rows(self, wall: float, mono: float) -> list[dict]:
        """Run-queue wait and the hottest thread of each role, over the last tick. Each thread
        is timed by when it was read, not by the tick: a slow read on a loaded host would
        otherwise put part of one tick's delay into a thread's cores."""
        rows: list[dict] = []
        now: dict[tuple[int, int], tuple[float, float, float]] = {}
        for role, pids in self._seen.items():
            wait, hot, known = 0.0, None, False
            for pid in pids:
                stamps: dict[int, float] = {}
                for tid, (run_s, wait_s, comm) in thread_times(pid, names=self._names.setdefault(pid, {}),
                                                               stamps=stamps).items():
                    read_at = stamps[tid]
                    now[(pid, tid)] = (run_s, wait_s, read_at)
                    prev = self._threads.get((pid, tid))
                    dt = read_at - prev[2] if prev is not None else 0.0
                    if prev is None or dt <= 0 or run_s < prev[0] or wait_s < prev[1]:
                        continue
                    known = True
                    d_run, d_wait = (run_s - prev[0]) / dt, (wait_s - prev[1]) / dt
                    wait += d_wait
                    if hot is None or d_run > hot[0]:
                        hot = (d_run, d_wait, comm, tid)
            if known:
                rows.append(self.row(wall, mono, "role_runq_wait", wait, {"role": role}))
            if hot is not None:
                lab = {"role": role, "thread": hot[2], "tid": hot[3]}
                rows.append(self.row(wall, mono, "role_hot_thread_cores", hot[0], lab))
                rows.append(self.row(wall, mono, "role_hot_thread_wait", hot[1], lab))
            rows += self._role_pressure(role, pids, wall, mono)
        self._threads = now
        alive = {pid for pid, _ in now}
        self._names = {pid: n for pid, n in self._names.items() if pid in alive}
        self._seen = {}
        return rows

    def _role_pressure(self, role: str, pids: list[int], wall: float, mono: float) -> list[dict]:
        if not pids:
            return []
        f, why = cgroup_pressure_file(pids[0])
        if f is None:
            self._psi.pop(role, None)
            if role in self._psi_noted:
                return []
            self._psi_noted.add(role)
            return [self.row(wall, mono, "role_cpu_pressure", None, {"role": role, "source": why})]
        now = read_pressure(f)
        prev = self._psi.get(role)
        self._psi[role] = (f, now)
        if prev is None or prev[0] != f or "some" not in now or "some" not in prev[1] or not self._dt:
            return []
        share = min(max((now["some"] - prev[1]["some"]) / self._dt, 0.0), 1.0)
        return [self.row(wall, mono, "role_cpu_pressure", share, {"role": role, "source": str(f)})]

    def _agent_rows(self, wall: float, mono: float) -> list[dict]:
        s = self.agent_gateway.agent_role_sample()
        role = {"role": "gateway"}
        rows = [self.row(wall, mono, "role_cpu_cores", s["cores"], role)] if s["cores"] is not None else []
        return rows + [self.row(wall, mono, "role_rss_bytes", float(s["rss"]), role),
                       self.row(wall, mono, "role_cpu_limit_cores", s["limit_cores"],
                                {**role, "source": s["limit_source"]})]

    def sample(self, wall: float, mono: float) -> list[dict]:
        self._dt = mono - self._sched_mono if self._sched_mono is not None else None
        self._sched_mono = mono
        rows = super().sample(wall, mono)
        rows += self._sched_rows(wall, mono)
        # fio runs only during the probe: outside it the probe is no role of the cell (not a role
        # "with an unknown limit" in every verdict's reason)
        idle = {r["labels"]["role"] for r in rows if r["metric"] == "role_cpu_limit_cores"
                and r["labels"]["role"] in SOMETIMES and r["labels"].get("source") == NO_PROCESS}
        rows = [r for r in rows if r["labels"].get("role") not in idle]
        for role in self.remote:
            rows.append(self.row(wall, mono, "role_cpu_limit_cores", None,
                                 {"role": role, "source": self.remote_note}))
        if self.agent_gateway is not None:
            rows += self._agent_rows(wall, mono)
        return rows


def make_sampler(*, gateway: Any, target: Any, cluster: Cluster | None) -> CellRoleSampler:
    roles, note = providers(gateway=gateway, target=target, cluster=cluster)
    remote = tuple(r for r in CLUSTER_ROLES if r not in roles) if note else ()
    agent = gateway if hasattr(gateway, "agent_role_sample") else None
    return CellRoleSampler(roles, remote=remote, remote_note=note, agent_gateway=agent)
