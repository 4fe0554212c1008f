"""What a command started, on disk: so that after a `kill -9` the next command stops it.

While recording is on (cli.main turns it on for the commands that start processes), every
process xcbench.system.proc starts for the command (spawned into a recording ProcessSet, or run and
waited for) and every mount it makes is written to

    <state>/procs/<owner pid>.json    {"owner": {pid, start, cmdline}, "procs": {...}, "mounts": {...}}

(<state>: the state home of xcbench.system.statedir), 0600, atomically (tmp + rename). A command that ends
normally removes its record. :func:`reap` (run by the next command) finds records whose owner is
dead, stops the processes still alive that are the same ones (pid, start time and command line
all match: a recycled pid is never signalled), unmounts the mounts still there and removes the
record. The mini cluster's daemons are never recorded here: the cluster outlives commands.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.system import proc, statedir
from xcbench.system.fsutil import remove_dir, scratch_problem
from xcbench.system.mounts import is_mount_point, mount_table, unmount
from xcbench.system.secrets import REDACTED, redact_argv

SUBDIR = "procs"
VERSION = 2
# what a recorded mount may be: the mounts xcbench makes (tmpfs targets, CephFS kernel and fuse)
MOUNT_TYPES = ("tmpfs", "ceph", "fuse", "fuse.ceph-fuse", "fuse.ceph")
MOUNT_TOOLS = ("mount", "umount", "fusermount", "fusermount3")


def state_home() -> Path:
    return statedir.home()


def records_dir() -> Path:
    return state_home() / SUBDIR


def identity(pid: int) -> dict[str, Any] | None:
    """pid, start time (s since the epoch, as the kernel has it) and argv; None when gone."""
    import psutil
    try:
        p = psutil.Process(pid)
        for _ in range(100):
            with p.oneshot():
                if p.status() == psutil.STATUS_ZOMBIE:
                    return None
                argv = p.cmdline()
                if argv:
                    return {"pid": pid, "start": p.create_time(), "cmdline": argv}
            # just after Popen returns, exec may not have set up the new argv yet
            time.sleep(0.005)
    except (psutil.Error, OSError):
        pass
    return None


def _word_matches(then: str, now: str) -> bool:
    """A recorded word (its secrets redacted) against the word running now: a redacted part
    stands for any text (the secret itself is never on disk)."""
    if REDACTED not in then:
        return then == now
    return re.fullmatch(".*".join(re.escape(p) for p in then.split(REDACTED)), now,
                        re.DOTALL) is not None


def _same_command(then: list[str], now: list[str]) -> bool:
    """The recorded argv, or what it exec'd: a shim (xcbench.system.sdlisten ... -- xrootd ...)
    becomes the tail of its argv with the same pid and start time."""
    def norm(argv: list[str]) -> list[str]:
        return [os.path.basename(argv[0]), *argv[1:]] if argv else []

    def same(a: list[str], b: list[str]) -> bool:
        return len(a) == len(b) and all(_word_matches(x, y) for x, y in zip(a, b, strict=True))
    then, now = norm(list(then or [])), norm(list(now or []))
    return bool(now) and (same(then, now) or (len(now) < len(then) and same(then[-len(now):], now)))


def same_process(rec: dict[str, Any]) -> bool:
    """Is the process recorded in ``rec`` still the one running under its pid? pid, start
    time and command line must all match: a recycled pid is never taken for it."""
    now = identity(int(rec.get("pid") or 0)) if rec.get("pid") else None
    return (now is not None and abs(now["start"] - float(rec.get("start") or 0)) < 0.05
            and _same_command(rec.get("cmdline") or [], now["cmdline"]))


class Recorder:
    """The record of this process (the owner): what it started and mounted, kept on disk."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.path = self.directory / f"{os.getpid()}.json"
        self.owner = identity(os.getpid()) or {"pid": os.getpid()}
        if "cmdline" in self.owner:  # --fts-token X must not outlive the command on disk
            self.owner["cmdline"] = redact_argv(self.owner["cmdline"])
        self.procs: dict[int, dict[str, Any]] = {}
        self.mounts: dict[str, dict[str, Any]] = {}
        self.dirs: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, pid: int, name: str, args: list[str]) -> None:
        ident = identity(pid)
        if ident is None:
            return  # already gone
        ident["name"] = name
        ident["pgid"] = _pgid(pid)
        ident["cmdline"] = redact_argv(ident["cmdline"])  # the record is on disk: no secret
        with self._lock:
            self.procs[pid] = ident
            self._save()

    def drop(self, pid: int) -> None:
        with self._lock:
            if self.procs.pop(pid, None) is not None:
                self._save()

    def add_mount(self, path: str, fstype: str) -> None:
        with self._lock:
            self.mounts[str(path)] = {"path": str(path), "fstype": fstype, "at": time.time()}
            self._save()

    def add_dir(self, path: str, uid: int | None = None) -> None:
        """A scratch dir the command made (or is about to make): removed after the reap (never
        across a mount). ``uid``: the user it is given to, when not this one."""
        with self._lock:
            self.dirs.append({"path": str(path), "uid": os.geteuid() if uid is None else uid})
            self._save()

    def drop_dir(self, path: str) -> None:
        with self._lock:
            keep = [d for d in self.dirs if d["path"] != str(path)]
            if len(keep) != len(self.dirs):
                self.dirs = keep
                self._save()

    def drop_mount(self, path: str) -> None:
        with self._lock:
            if self.mounts.pop(str(path), None) is not None:
                self._save()

    def mount_change(self, args: list[str]) -> None:
        """After a successful mount/umount run through xcbench.system.proc: the record follows it."""
        tool = Path(args[0]).name
        pos = _positionals(args)
        if tool not in MOUNT_TOOLS or not pos:
            return
        if tool == "mount":
            fstype = args[args.index("-t") + 1] if "-t" in args[:-1] else "?"
            self.add_mount(os.path.abspath(pos[-1]), fstype)
        else:
            self.drop_mount(os.path.abspath(pos[-1]))

    def release(self) -> None:
        """Forget everything recorded so far (left running on purpose: `gateway up`)."""
        with self._lock:
            self.procs.clear()
            self.mounts.clear()
            self.dirs.clear()
            self._save()

    def prune(self) -> None:
        """Keep only what is still running or mounted (none: the record file goes)."""
        with self._lock:
            self.procs = {pid: p for pid, p in self.procs.items() if same_process(p)}
            self.mounts = {k: m for k, m in self.mounts.items() if is_mount_point(k)}
            self.dirs = [d for d in self.dirs if os.path.isdir(d["path"])]
            self._save()

    def _save(self) -> None:
        if not self.procs and not self.mounts and not self.dirs:
            self.path.unlink(missing_ok=True)
            return
        try:
            statedir.write_private(self.path, json.dumps(
                {"version": VERSION, "host": statedir.HOST, "uid": os.geteuid(),
                 "owner": self.owner, "procs": list(self.procs.values()),
                 "mounts": list(self.mounts.values()), "dirs": self.dirs}, indent=1))
        except (OSError, XcbError):
            pass  # a read-only or full state dir must not stop the command


_recorder: Recorder | None = None


def start(directory: Path | None = None) -> Recorder:
    """Record what this process starts from now on (cli.main, for commands that start some)."""
    global _recorder
    if _recorder is None:
        _recorder = proc.recorder = Recorder(directory or records_dir())
    return _recorder


def stop() -> None:
    """The command ends: its record goes, unless a process or mount it names is still there
    (a cleanup that failed): then it stays for the next command to reap."""
    global _recorder
    if _recorder is not None:
        _recorder.prune()
        _recorder = proc.recorder = None


def release() -> None:
    if _recorder is not None:
        _recorder.release()


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _positionals(args: list[str]) -> list[str]:
    """mount's non-option arguments (-t/-o/-O take a value)."""
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a in ("-t", "-o", "-O", "--types", "--options"):
            skip = True
        elif not a.startswith("-"):
            out.append(a)
    return out


# ---- the next command -----------------------------------------------------------------------------
def _owner_alive(owner: dict[str, Any]) -> bool:
    return bool(owner.get("pid")) and (same_process(owner) if owner.get("start") else
                                       identity(int(owner["pid"])) is not None)


def record_problem(path: Path, rec: Any) -> str | None:
    """Why a process record may not be acted on (None: it may): the file must be ours
    (xcbench.system.statedir), of this host, and every entry of the expected shape; a mount must be of
    a kind xcbench makes and still of that kind; a dir must be an xcb-* scratch dir of ours."""
    why = statedir.record_problem(path)
    if why is not None:
        return why
    if not isinstance(rec, dict) or not isinstance(rec.get("owner"), dict):
        return "not a process record (no owner)"
    why = statedir.host_problem(rec)
    if why is not None:
        return why
    if rec.get("uid") != os.geteuid():
        return f"written by uid {rec.get('uid')!r}, not by this user"
    if not isinstance(rec["owner"].get("pid"), int) or rec["owner"]["pid"] < 2:
        return "its owner pid is not a pid"
    for p in _list(rec, "procs"):
        if not (isinstance(p, dict) and isinstance(p.get("pid"), int) and p["pid"] > 1
                and isinstance(p.get("start"), (int, float))
                and isinstance(p.get("cmdline"), list) and p["cmdline"]
                and all(isinstance(w, str) for w in p["cmdline"])):
            return f"a process entry is malformed ({str(p)[:80]})"
    table = dict((str(m), t) for m, t in mount_table())
    for m in _list(rec, "mounts"):
        mpath = m.get("path") if isinstance(m, dict) else None
        if not isinstance(mpath, str) or not os.path.isabs(mpath) or os.path.normpath(mpath) != mpath:
            return f"a mount entry names no absolute path ({str(m)[:80]})"
        kind = str(m.get("fstype"))
        if kind not in MOUNT_TYPES:
            return f"mount {mpath}: type {kind!r} is not one xcbench makes"
        if mpath in table and table[mpath] != kind and not (kind.startswith("fuse") and
                                                            table[mpath].startswith("fuse")):
            return f"mount {mpath} is now a {table[mpath]} mount, not the recorded {kind}"
    for d in _list(rec, "dirs"):
        dpath, uid = (d, None) if isinstance(d, str) else \
            ((d.get("path"), d.get("uid")) if isinstance(d, dict) else (None, None))
        if not isinstance(dpath, str) or (uid is not None and not isinstance(uid, int)):
            return f"a dir entry is malformed ({str(d)[:80]})"
        why = scratch_problem(dpath, uid)
        if why is not None:
            return f"dir {dpath}: {why}"
    return None


def _list(rec: dict, key: str) -> list:
    v = rec.get(key) or []
    return v if isinstance(v, list) else [v]


def stale_records(directory: Path, problem: Callable[[Path, Any], str | None]
                  ) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(path, record) of each ``*.json`` record in ``directory`` whose owner (the command that
    wrote it) is dead and which proves it is ours (``problem(path, record)`` is None); one that
    does not is named in one warning line and left alone. The records of :func:`reap`, and of
    other things a killed command leaves (xcbench.hosts.slurm's job steps)."""
    files = sorted(directory.glob("*.json")) if directory.is_dir() else []
    for f in files:
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            statedir.warn_skipped(f, f"unreadable ({e})")
            continue
        why = problem(f, rec)
        if why is not None:
            statedir.warn_skipped(f, why)
            continue
        owner = rec["owner"]
        if owner["pid"] == os.getpid() or _owner_alive(owner):
            continue  # a command still running (or this one)
        yield f, rec


def reap(directory: Path | None = None, *, grace: float = 10.0) -> str | None:
    """Stop the processes, remove the mounts and the scratch dirs that commands killed earlier
    left behind. Returns the one line saying what was done (None when there was nothing). A
    record that does not prove it is ours (:func:`record_problem`) is named in one warning
    line and left alone."""
    owners: list[str] = []
    names: list[str] = []
    mounts: list[str] = []
    removed: list[str] = []
    for f, rec in stale_records(directory or records_dir(), record_problem):
        owner = rec["owner"]
        try:
            _reap_one(rec, grace, names, mounts, removed)
        except Exception as e:  # noqa: BLE001 - one bad record costs one line, not the command
            statedir.warn_skipped(f, f"acting on it failed ({type(e).__name__}: {str(e)[:200]})")
            continue
        owners.append(str(owner.get("pid")))
        f.unlink(missing_ok=True)
    if not names and not mounts and not removed:
        return None
    what = []
    if names:
        what.append(f"stopped {len(names)} processes ({', '.join(sorted(set(names)))[:200]})")
    if mounts:
        what.append(f"unmounted {len(mounts)} ({', '.join(mounts)[:200]})")
    if removed:
        what.append(f"removed {len(removed)} scratch dirs ({', '.join(removed)[:200]})")
    return (f"xcbench: an earlier xcbench (pid {', '.join(owners)}) was killed and left things "
            f"behind: {' and '.join(what)}")


def _reap_one(rec: dict[str, Any], grace: float, names: list[str], mounts: list[str],
              removed: list[str]) -> None:
    """What one dead command's record names: its processes stopped, its mounts unmounted, its
    scratch dirs removed (each appended to ``names``, ``mounts``, ``removed``)."""
    live = [p for p in _list(rec, "procs") if same_process(p)]
    _stop(live, grace)
    names += [p.get("name") or Path(p["cmdline"][0]).name for p in live]
    for m in reversed(_list(rec, "mounts")):
        if _unmount(m):
            mounts.append(m["path"])
    for entry in _list(rec, "dirs"):
        dpath, uid = (entry, None) if isinstance(entry, str) else (entry["path"], entry.get("uid"))
        if remove_dir(dpath, uid):
            removed.append(dpath)


def _stop(procs: list[dict[str, Any]], grace: float) -> None:
    for p in procs:
        proc.kill_group(int(p["pid"]), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(same_process(p) for p in procs):
        time.sleep(0.05)
    for p in procs:
        if same_process(p):
            proc.kill_group(int(p["pid"]), signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(same_process(p) for p in procs):
        time.sleep(0.05)


def note_dir(path: str | os.PathLike, uid: int | None = None) -> None:
    """Record a scratch dir of the running command (no-op when recording is off); ``uid``:
    the user it is given to (the next command removes it only with that owner, or ours)."""
    if _recorder is not None:
        _recorder.add_dir(os.path.abspath(path), uid)


def forget_dir(path: str | os.PathLike) -> None:
    """The command removed a scratch dir it recorded itself: no longer the next one's to do."""
    if _recorder is not None:
        _recorder.drop_dir(os.path.abspath(path))


def _unmount(m: dict[str, Any]) -> bool:
    """Unmount a recorded mount still there (lazily if busy); remove its empty mount point."""
    path = m.get("path")
    if not path or not is_mount_point(path):
        return False
    unmount(path, fuse=str(m.get("fstype", "")).startswith("fuse"))
    try:
        os.rmdir(path)  # only if empty: what xcbench made for the mount
    except OSError:
        pass
    return True
