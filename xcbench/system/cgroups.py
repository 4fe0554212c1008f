"""Named CPU-quota cgroups that xcbench creates, records and always removes.

    with CpuGroups(state_dir, run="r1") as groups:
        g = groups.create("gateway", cores=0.25)   # /sys/fs/cgroup/cpu/xcb-r1-gateway
        g.add(pid)                                  # the process and all its threads
    # on exit: pids moved back to the parent group, the group removed

The mechanism is detected: cgroup v1's cpu controller (``cpu.cfs_quota_us``/``cfs_period_us``)
or cgroup v2's ``cpu.max`` (the cpu controller must be enabled in the parent's
``cgroup.subtree_control``). :func:`detect` says which, or why neither works.

Every group created is recorded in ``<state_dir>/cgroups.json`` (default: the state home,
xcbench.system.statedir, where the process records of xcbench.system.orphans are too) with the owner pid
*before* it is made, so that after a kill -9 :func:`sweep_stale` (e.g. from the next command)
removes the groups whose owner is dead (also those in a registry an older xcbench kept under
$XCBENCH_STATE). Removal moves the remaining pids to the parent first (rmdir of a
group with members fails with EBUSY) and never touches a group xcbench did not record.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.system import statedir
from xcbench.system.limits import CGROUP_ROOT, PROC, v1_mount, v2_mount

PERIOD_US = 100_000
NAME_RE = re.compile(r"^xcb-[A-Za-z0-9_.-]+$")
STATE_FILE = "cgroups.json"


def default_state_dir() -> Path:
    return statedir.home()


class CgroupError(XcbError):
    pass


@dataclass(frozen=True)
class Mechanism:
    kind: str  # "v1" | "v2"
    base: Path  # where xcbench's groups are made


def detect(root: Path = CGROUP_ROOT, proc: Path = PROC) -> Mechanism:
    """The CPU-quota mechanism of this host, or CgroupError saying why there is none."""
    why = []
    m = v1_mount("cpu", root, proc)
    if m is not None:
        if os.access(m, os.W_OK) and (m / "cpu.cfs_period_us").exists():
            return Mechanism("v1", m)
        why.append(f"cgroup v1 cpu controller at {m} is not writable (run as root)")
    else:
        why.append("no cgroup v1 cpu controller mounted")
    m2 = v2_mount(root, proc)
    if m2 is not None:
        try:
            ctrls = (m2 / "cgroup.subtree_control").read_text().split()
        except OSError:
            ctrls = []
        if "cpu" in ctrls and os.access(m2, os.W_OK):
            return Mechanism("v2", m2)
        why.append(f"cgroup v2 at {m2} has no cpu controller in cgroup.subtree_control"
                   if "cpu" not in ctrls else f"cgroup v2 at {m2} is not writable (run as root)")
    else:
        why.append("no cgroup v2 mounted")
    raise CgroupError("no CPU-quota cgroups on this host: " + "; ".join(why))


def _write(path: Path, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _members(d: Path) -> list[int]:
    """What to move out of a group: v1 thread ids (``tasks``), v2 process ids (a process moves
    with all its threads)."""
    for f in ("tasks", "cgroup.procs"):
        try:
            return [int(x) for x in (d / f).read_text().split()]
        except OSError:
            continue
    return []


class CpuGroup:
    """One CPU-quota group: ``add`` processes, ``remove`` it (idempotent)."""

    def __init__(self, mech: Mechanism, name: str, cores: float, period_us: int = PERIOD_US,
                 weight: int | None = None):
        if not NAME_RE.match(name):
            raise CgroupError(f"cgroup name {name!r}: must be xcb-<letters, digits, _.->")
        if not cores > 0:
            raise CgroupError(f"cgroup {name}: cores must be > 0, got {cores}")
        self.mech, self.name, self.cores, self.period_us = mech, name, cores, period_us
        self.path = mech.base / name
        self.quota_us = max(1000, int(round(cores * period_us)))  # the kernel's minimum is 1 ms
        # the group's CPU weight against its siblings (v1 cpu.shares, 1024 = a nice-0 process;
        # v2 cpu.weight, 100 = the same): None leaves the kernel's default
        self.weight = weight

    def make(self) -> CpuGroup:
        self.path.mkdir(exist_ok=True)
        if self.mech.kind == "v1":
            _write(self.path / "cpu.cfs_period_us", str(self.period_us))
            _write(self.path / "cpu.cfs_quota_us", str(self.quota_us))
            if self.weight is not None:
                _write(self.path / "cpu.shares", str(int(self.weight)))
        else:
            _write(self.path / "cpu.max", f"{self.quota_us} {self.period_us}")
            if self.weight is not None:  # v2's scale: 100 for v1's 1024, within [1, 10000]
                _write(self.path / "cpu.weight", str(max(1, min(10000, round(self.weight * 100 / 1024)))))
        return self

    def add(self, pid: int, threads: bool = True) -> None:
        """Move a process (v1: each of its threads, which v1 moves one by one) into the group."""
        if self.mech.kind == "v2":
            _write(self.path / "cgroup.procs", str(pid))  # v2 moves the whole process
            return
        tids = [pid]
        if threads:
            try:
                tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
            except FileNotFoundError as e:
                raise ProcessLookupError(pid) from e
        _write(self.path / "cgroup.procs", str(pid))
        for t in tids:
            try:
                _write(self.path / "tasks", str(t))
            except ProcessLookupError:
                pass  # a thread that ended meanwhile

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def remove(self) -> bool:
        return remove_group(self.path)


def remove_group(path: Path, attempts: int = 20) -> bool:
    """Move every member to the parent group, then rmdir. False if it is still there."""
    if not path.is_dir():
        return True
    parent = path.parent
    target = parent / ("tasks" if (parent / "tasks").exists() else "cgroup.procs")
    for _ in range(attempts):
        for t in _members(path):
            try:
                _write(target, str(t))
            except OSError:
                pass  # gone meanwhile, or a v2 thread: its process moves it
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.05)  # a task forked in between, or an exiting one not yet reaped
    return not path.exists()


class Registry:
    """``<state_dir>/cgroups.json``: [{"path", "owner", "created"}], locked while changed."""

    def __init__(self, state_dir: str | Path | None = None):
        self.dir = Path(state_dir) if state_dir is not None else default_state_dir()
        self.file = self.dir / STATE_FILE

    def _update(self, fn):
        statedir.ensure(self.dir)
        fd = os.open(self.dir / (STATE_FILE + ".lock"),
                     os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = self.entries(warn=False)
            out = fn(entries)
            statedir.write_private(self.file, json.dumps(entries, indent=1))
            return out

    def entries(self, warn: bool = True) -> list[dict]:
        """The recorded groups that prove they are ours (:func:`entry_problem`); a registry file
        that is not ours, and an entry that fails, are named in one line and left alone."""
        try:
            data = json.loads(self.file.read_text())
        except FileNotFoundError:
            return []
        except (OSError, json.JSONDecodeError) as e:
            if warn:
                statedir.warn_skipped(self.file, f"unreadable ({e})")
            return []
        why = statedir.record_problem(self.file) or \
            (None if isinstance(data, list) else "not a list of groups")
        if why is not None:
            if warn:
                statedir.warn_skipped(self.file, why)
            return []
        out = []
        for entry in data:
            why = entry_problem(entry)
            if why is None:
                out.append(entry)
            elif warn:
                statedir.warn_skipped(self.file, f"entry {str(entry)[:100]}: {why}")
        return out

    def add(self, path: Path, owner: int) -> None:
        self._update(lambda e: e.append({"path": str(path), "owner": owner, "created": time.time(),
                                         "owner_start": _start_time(owner),
                                         "host": statedir.HOST}))

    def drop(self, path: Path) -> None:
        def fn(e):
            e[:] = [x for x in e if x.get("path") != str(path)]
        self._update(fn)


def _start_time(pid: int) -> float | None:
    try:
        import psutil
        return psutil.Process(pid).create_time()
    except Exception:  # noqa: BLE001 - no start time: liveness by pid alone
        return None


def _alive(pid: int, start: float | None = None) -> bool:
    """The owner still runs (a reused pid with another start time does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = _start_time(pid)
    return start is None or now is None or abs(now - start) < 1.0


def entry_problem(e: object) -> str | None:
    """Why a registry entry may not be acted on (None: it may): a group named xcb-* directly
    in a cgroup hierarchy's cpu controller (a real cgroup dir, not a link), of this host, with
    an owner pid. Removal writes pids into the parent's task list: nothing else may be named."""
    if not isinstance(e, dict) or not isinstance(e.get("path"), str) or \
            not isinstance(e.get("owner"), int):
        return "not a group entry (path, owner)"
    why = statedir.host_problem(e)
    if why is not None:
        return why
    path = Path(e["path"])
    if not NAME_RE.match(path.name) or os.path.normpath(str(path)) != str(path):
        return "not a group named xcb-*"
    try:
        parent = Path(os.path.realpath(path.parent))
    except OSError:
        return "its parent is unreadable"
    if parent != path.parent or not parent.is_relative_to(CGROUP_ROOT) or \
            not (parent / "cgroup.procs").is_file():
        return f"{path.parent} is not a cgroup under {CGROUP_ROOT}"
    if path.is_symlink():
        return "a symlink"
    return None


def sweep_stale(state_dir: str | Path | None = None, all_owners: bool = False) -> list[str]:
    """Remove recorded groups whose owner process is dead (or every recorded one with
    ``all_owners``). Only entries that prove they are ours (:func:`entry_problem`: xcb-*
    groups in a cgroup hierarchy, of this host) are touched. Returns the paths removed."""
    regs = [Registry(state_dir)]
    removed = []
    for reg in regs:
        for e in reg.entries():
            path = Path(e["path"])
            if not all_owners and _alive(int(e.get("owner", 0)), e.get("owner_start")):
                continue
            if remove_group(path):
                reg.drop(path)
                removed.append(str(path))
    return removed


class GroupSet:
    """The groups of one run, ``xcb-<run>-<role>``: each recorded in the registry before it is
    made, all removed on exit, atexit and by a sweep (CpuGroups here; xcbench.system.blkio's
    IoGroups). A group is anything with ``path``, ``make()`` and ``remove() -> bool``."""

    def __init__(self, state_dir: str | Path | None, run: str):
        self.registry = Registry(state_dir)
        self.run = re.sub(r"[^A-Za-z0-9_.-]", "-", run)
        self.groups: dict[str, Any] = {}
        self._atexit = False

    def _add(self, role: str, g: Any) -> Any:
        if g.path.exists() and role not in self.groups:
            raise CgroupError(f"cgroup {g.path} already exists (another run? `xcbench` sweeps "
                              f"stale ones it recorded)")
        self.registry.add(g.path, os.getpid())  # recorded first: a crash right after leaves no orphan
        if not self._atexit:
            atexit.register(self.close)
            self._atexit = True
        try:
            g.make()
        except OSError as e:
            g.remove()
            self.registry.drop(g.path)
            raise CgroupError(f"cannot set up cgroup {g.path}: {e}") from e
        self.groups[role] = g
        return g

    def close(self) -> list[str]:
        """Remove every group of this run; returns those that could not be removed."""
        left = []
        for role, g in list(self.groups.items()):
            if g.remove():
                self.registry.drop(g.path)
                del self.groups[role]
            else:
                left.append(str(g.path))
        return left

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CpuGroups(GroupSet):
    """The CPU-quota groups of one run."""

    def __init__(self, state_dir: str | Path | None, run: str, mech: Mechanism | None = None):
        super().__init__(state_dir, run)
        self.mech = mech

    def create(self, role: str, cores: float, period_us: int = PERIOD_US,
               weight: int | None = None) -> CpuGroup:
        if self.mech is None:
            self.mech = detect()
        return self._add(role, CpuGroup(self.mech, f"xcb-{self.run}-{role}", cores, period_us, weight))
