"""RoleSampler: CPU, RSS and CPU limit of each role of the chain (psutil).

Roles are given as ``{role: pids provider}``, e.g. ``{"client": lambda: [os.getpid()],
"gateway": lambda: [xrootd.pid, cmsd.pid], "mount": ..., "osd": ..., "mds": ..., "probe": ...}``.
Each provider is called every tick (processes come and go). For the roles in ``children``
(default: probe, gateway, mount) descendants count too (fio's job processes, xrootd's TPC
pulls), but never a process another role names, nor its subtree. The client (the driver) counts
only the pids its provider gives: the driver also spawns the cluster and the gateways, whose CPU
is theirs. Each process counts once. Metrics, labels {role, source}:

  role_cpu_cores        cores busy in the role's processes (all threads), over the last tick
  role_rss_bytes        resident memory summed over them
  role_cpu_limit_cores  the CPU limit of the role (xcbench.system.limits), labels also {source}: one
                        process, or several under one limit -> that limit; several under their
                        own limits -> their sum ("sum of N: ..."); any unknown -> no value, the
                        source says "unknown (...)" (value None: null in JSON, NaN in Parquet),
                        never the host.
  role_cpu_throttled    share (0..1) of the CFS periods of the tick in which the role's quota
                        group(s) were throttled (cpu.stat nr_throttled / nr_periods): only for
                        roles under a CFS quota

A process that vanished between two ticks is dropped without error; a role with no process has
role_cpu_cores 0. The limit is re-read every ``limit_interval`` seconds (limits rarely change).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import psutil

from xcbench.system.limits import CpuLimit, cpu_limit, throttling
from xcbench.telemetry.base import Sampler

ROLES = ("client", "gateway", "mount", "osd", "mds", "probe")


def combine_limits(limits: dict[int, CpuLimit]) -> tuple[float | None, str]:
    """One role's limit from its processes' limits (see the module docstring)."""
    if not limits:
        return None, "unknown (no process)"
    unknown = [lim for lim in limits.values() if not lim.known]
    if unknown:
        return None, unknown[0].source
    by_source: dict[str, float] = {}
    for lim in limits.values():
        assert lim.cores is not None  # unknown limits were returned above
        by_source[lim.source] = lim.cores  # processes under one group share its quota
    if len(by_source) == 1:
        (src, cores), = by_source.items()
        return cores, src
    host = next(iter(limits.values())).host_cores
    total = sum(by_source.values())
    if any(s.startswith("host cores") for s in by_source) or (host and total >= host):
        h = float(host) if host else total
        return h, f"host cores ({int(h)}; the role's processes are not all limited)"
    return total, f"sum of {len(by_source)}: " + "; ".join(f"{c:g} ({s})" for s, c in sorted(by_source.items()))


class RoleSampler(Sampler):
    name = "roles"

    def __init__(self, roles: dict[str, Callable[[], list[int]]], *,
                 children: Iterable[str] | bool = ("probe", "gateway", "mount"),
                 limit_interval: float = 5.0, limit: Callable[[int], CpuLimit] = cpu_limit):
        self.roles = dict(roles)
        self.children = set(self.roles if children is True else (children or ()))
        self.limit_interval = limit_interval
        self._limit = limit
        self._procs: dict[int, psutil.Process] = {}  # pid -> Process (keeps create_time identity)
        self._cpu: dict[int, float] = {}  # pid -> last cumulative CPU seconds
        self._last_mono: float | None = None
        self._limits: dict[int, tuple[float, CpuLimit]] = {}  # pid -> (mono read, limit)
        self._kid_map: dict[int, list[int]] | None = None
        self._throttle: dict[str, tuple[int, int]] = {}  # role -> last (periods, throttled)

    def _named(self) -> dict[str, list[int]]:
        out = {}
        for role, provider in self.roles.items():
            try:
                out[role] = [int(p) for p in provider() or ()]
            except Exception:  # noqa: BLE001 - a provider whose object went away: no processes
                out[role] = []
        return out

    def _kids(self) -> dict[int, list[int]]:
        """ppid -> pids, one scan of the process table per tick (not one per role process)."""
        if self._kid_map is None:
            self._kid_map = {}
            try:  # psutil's own /proc scan behind Process.children(): no Process objects
                pairs = psutil._ppid_map().items()
            except AttributeError:
                pairs = ((p.pid, p.info["ppid"]) for p in psutil.process_iter(["ppid"]))
            for pid, ppid in pairs:
                self._kid_map.setdefault(ppid, []).append(pid)
        return self._kid_map

    def _members(self, role: str, named: dict[str, list[int]]) -> list[psutil.Process]:
        others = {pid for r, pids in named.items() if r != role for pid in pids}
        seen: dict[int, psutil.Process] = {}
        todo = [pid for pid in named[role]]
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            p = self._process(pid)
            if p is None:
                continue
            seen[pid] = p
            if role in self.children:
                todo += [c for c in self._kids().get(pid, ()) if c not in others]
        return list(seen.values())

    def _process(self, pid: int) -> psutil.Process | None:
        p = self._procs.get(pid)
        try:
            if p is None or not p.is_running():  # is_running also catches a reused pid
                p = psutil.Process(pid)
                self._procs[pid] = p
                self._cpu.pop(pid, None)
            return p
        except psutil.Error:
            self._procs.pop(pid, None)
            return None

    def _limit_of(self, p: psutil.Process, mono: float) -> CpuLimit | None:
        got = self._limits.get(p.pid)
        if got is None or mono - got[0] >= self.limit_interval:
            try:
                got = (mono, self._limit(p.pid))
            except (ProcessLookupError, psutil.Error):
                return None
            self._limits[p.pid] = got
        return got[1]

    def _throttled(self, role: str, groups: set[str]) -> float | None:
        stats = [t for t in (throttling(g) for g in sorted(groups)) if t is not None]
        if not stats:
            self._throttle.pop(role, None)
            return None
        now = (sum(t[0] for t in stats), sum(t[1] for t in stats))
        prev = self._throttle.get(role)
        self._throttle[role] = now
        if prev is None or now[0] <= prev[0] or now[1] < prev[1]:
            return None  # first look, or another set of groups: no delta yet
        return (now[1] - prev[1]) / (now[0] - prev[0])

    def sample(self, wall: float, mono: float) -> list[dict]:
        dt = mono - self._last_mono if self._last_mono is not None else None
        self._last_mono = mono
        rows: list[dict] = []
        alive: set[int] = set()
        named = self._named()
        self._kid_map = None  # rebuilt once per tick
        for role in self.roles:
            cpu = rss = 0.0
            fresh = 0  # processes seen for the first time: no CPU delta yet
            members = 0
            limits: dict[int, CpuLimit] = {}
            for p in self._members(role, named):
                try:
                    with p.oneshot():
                        t = p.cpu_times()
                        secs = t.user + t.system
                        mem = p.memory_info().rss
                except psutil.Error:
                    continue  # vanished (NoSuchProcess) or a zombie
                alive.add(p.pid)
                members += 1
                prev = self._cpu.get(p.pid)
                self._cpu[p.pid] = secs
                if prev is None:
                    fresh += 1
                elif dt and secs >= prev:
                    cpu += (secs - prev) / dt
                rss += mem
                lim = self._limit_of(p, mono)
                if lim is not None:
                    limits[p.pid] = lim
            # a role whose processes all appeared this tick has no rate yet
            if dt and (members == 0 or fresh < members):
                rows.append(self.row(wall, mono, "role_cpu_cores", cpu, {"role": role}))
            rows.append(self.row(wall, mono, "role_rss_bytes", rss, {"role": role}))
            cores, source = combine_limits(limits)
            rows.append(self.row(wall, mono, "role_cpu_limit_cores",
                                 cores, {"role": role, "source": source}))
            share = self._throttled(role, {lim.group for lim in limits.values() if lim.group})
            if share is not None:
                rows.append(self.row(wall, mono, "role_cpu_throttled", share, {"role": role}))
        for d in (self._cpu, self._limits, self._procs):
            for pid in [k for k in d if k not in alive]:
                d.pop(pid, None)
        return rows



def tree_cpu_seconds(pids: Iterable[int], exclude: Iterable[int] = ()) -> float | None:
    """Cumulative CPU seconds (user + system) of the process trees under ``pids``, reaped
    children included: each live process counts its own time and that of the children it has
    waited for, so a TPC xrdcp that ran and exited between two readings is still counted (in
    its parent), and no second is counted twice. None when none of the processes exists."""
    got = tree_counters(pids, exclude)
    return got[0] if got is not None else None


def tree_counters(pids: Iterable[int], exclude: Iterable[int] = ()) -> tuple[float, int | None] | None:
    """(CPU seconds, bytes written) of the trees under ``pids`` (see tree_cpu_seconds); bytes
    written are write(2)/send(2) bytes to files and sockets (/proc/PID/io wchar, reaped children
    included by the kernel), None where a process's io counters cannot be read."""
    skip = set(exclude)
    todo = [int(p) for p in pids]
    seen: set[int] = set()
    total, written, found = 0.0, 0, False
    io_known = True
    while todo:
        pid = todo.pop()
        if pid in seen or pid in skip:
            continue
        seen.add(pid)
        try:
            p = psutil.Process(pid)
            with p.oneshot():
                t = p.cpu_times()
                kids = [c.pid for c in p.children()]
                try:
                    w = getattr(p.io_counters(), "write_chars", None)
                except (psutil.AccessDenied, AttributeError, NotImplementedError):
                    w = None
        except psutil.Error:
            continue  # gone, or a zombie: its seconds arrive in its parent when reaped
        total += t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
        if w is None:
            io_known = False
        else:
            written += int(w)
        found = True
        todo += kids
    return (total, written if io_known else None) if found else None
