"""Limits xcbench made on a role's processes (a CPU quota, a device write throttle), found and
lifted in place for one arm of an experiment, then restored (`xcbench confirm`'s storage
sub-kinds on a cluster xcbench started: the OSDs' device bytes throttle, their IOs throttle,
their CPU quota, each doubled where it is the named limit).

Only a group xcbench made and records (xcbench.system.cgroups' registry: an ``xcb-*`` group of
this host) is touched, and only its limit file: the processes stay where they are (moving them
into another group would lift every limit of the one they were in). The new value goes into a
record (``<state>/lifts.json``) before the file is written, so a confirm that dies leaves a
record saying what to undo: ``restore_left`` (the next confirm runs it first) writes the old
values back.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.system import statedir
from xcbench.system.cgroups import NAME_RE, Registry, entry_problem
from xcbench.system.limits import PROC, proc_cgroups, v1_mount

RECORD = "lifts.json"
CPU_FILE, BYTES_FILE, IOPS_FILE = "cpu.cfs_quota_us", "blkio.throttle.write_bps_device", "blkio.throttle.write_iops_device"
KINDS = {"cpu": CPU_FILE, "write_bytes_per_s": BYTES_FILE, "write_iops": IOPS_FILE}


def _ours(path: Path, state: str | Path | None) -> bool:
    """A group of xcbench's registry (an xcb-* cgroup of this host that proves it is ours)."""
    return NAME_RE.match(path.name) is not None and any(
        Path(e["path"]) == path and entry_problem(e) is None for e in Registry(state).entries(warn=False))


def _group(pid: int, controller: str) -> Path | None:
    m = v1_mount(controller)
    rel = proc_cgroups(pid, PROC).get(controller)
    return m / rel.lstrip("/") if m is not None and rel and rel != "/" else None


def _device_limit(path: Path, file: str) -> tuple[str, int] | None:
    try:
        for line in (path / file).read_text().splitlines():
            dev, _, v = line.partition(" ")
            if dev and v.strip().isdigit():
                return dev, int(v)
    except OSError:
        return None
    return None


def found(pids: list[int], state: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """{kind: {"group", "file", "value", "dev"?, "cores"?}} of the limits xcbench made that
    hold every one of ``pids`` (cgroup v1: a cpu group's quota, a blkio group's write bytes/s
    and IOs/s on one device); {} when none, or the processes are not all in one group."""
    if not pids:
        return {}
    out: dict[str, dict[str, Any]] = {}
    try:
        cpu = {_group(p, "cpu") for p in pids}
        blk = {_group(p, "blkio") for p in pids}
    except OSError:
        return {}
    (g_cpu,), (g_blk,) = (cpu if len(cpu) == 1 else {None}), (blk if len(blk) == 1 else {None})
    if g_cpu is not None and _ours(g_cpu, state):
        try:
            quota = int((g_cpu / CPU_FILE).read_text())
            period = int((g_cpu / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            quota = period = -1
        if quota > 0 and period > 0:
            out["cpu"] = {"group": str(g_cpu), "file": CPU_FILE, "value": quota, "cores": quota / period}
    if g_blk is not None and _ours(g_blk, state):
        for kind, file in (("write_bytes_per_s", BYTES_FILE), ("write_iops", IOPS_FILE)):
            got = _device_limit(g_blk, file)
            if got is not None:
                out[kind] = {"group": str(g_blk), "file": file, "dev": got[0], "value": got[1]}
    return out


def _text(limit: dict[str, Any], value: int) -> str:
    return f"{limit['dev']} {value}" if limit.get("dev") else str(value)


def _records(state: str | Path | None) -> tuple[Path, list[dict[str, Any]]]:
    d = Path(state) if state is not None else statedir.home()
    path = d / RECORD
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return path, []
    if statedir.record_problem(path) is not None or not isinstance(data, list):
        return path, []
    return path, [r for r in data if isinstance(r, dict) and statedir.host_problem(r) is None]


def _save(path: Path, recs: list[dict[str, Any]]) -> None:
    statedir.ensure(path.parent)
    statedir.write_private(path, json.dumps(recs, indent=1))


@contextlib.contextmanager
def lifted(limit: dict[str, Any], value: int, state: str | Path | None = None) -> Iterator[None]:
    """``limit`` (one of :func:`found`'s) at ``value`` for the block, then back at its own."""
    group = Path(limit["group"])
    if limit.get("file") not in KINDS.values() or not _ours(group, state):
        raise XcbError(f"confirm: {group}: not a limit of a group xcbench made and records")
    if not value >= 1:
        raise XcbError(f"confirm: {group}: a limit must be >= 1, not {value!r}")
    path, recs = _records(state)
    rec = {**limit, "new": int(value), "host": statedir.HOST, "owner": os.getpid(), "at": time.time()}
    _save(path, [*recs, rec])  # recorded before the file changes
    try:
        (group / limit["file"]).write_text(_text(limit, int(value)))
        yield
    finally:
        restore(rec, state)


def restore(rec: dict[str, Any], state: str | Path | None = None) -> bool:
    """The recorded limit back at its old value, its record dropped; False: nothing to do."""
    path, recs = _records(state)
    left = [r for r in recs if not (r.get("group") == rec.get("group") and r.get("file") == rec.get("file"))]
    if len(left) == len(recs):
        return False
    group = Path(str(rec["group"]))
    if group.is_dir() and rec.get("file") in KINDS.values() and NAME_RE.match(group.name):
        with contextlib.suppress(OSError):
            (group / str(rec["file"])).write_text(_text(rec, int(rec["value"])))
    _save(path, left)
    return True


def restore_left(state: str | Path | None = None) -> list[str]:
    """Limits an experiment lifted and did not put back (it died): restored; their groups."""
    _, recs = _records(state)
    return [str(r["group"]) for r in recs if restore(r, state)]
