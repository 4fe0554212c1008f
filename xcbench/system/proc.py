"""The project's one subprocess helper.

Everything xcbench runs (ceph daemons, xrootd/cmsd, fio, iperf3, ceph-fuse, CLI tools) goes
through :func:`run` (wait for it) or :func:`spawn` (keep it running). Children get a new session;
:func:`stop_tree` (xcbench.system.proctree) stops one with everything it started, its group and the
descendants that left it (fio's job processes): terminate -> wait -> kill, as rally's launcher
does. A signal while a child starts is held back (xcbench.system.signals.deferred) until the child is
where it will be stopped. A :class:`ProcessSet` remembers what a run started so that Ctrl-C or
a failure stops every one of them. While a command runs, what it starts (and mounts) is also
written to a record on disk (xcbench.system.orphans), so that after a `kill -9` the next command stops it.
"""

from __future__ import annotations

import os
import selectors
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from xcbench.errors import XcbError
from xcbench.system import signals

# re-exported: proc is where callers find them
from xcbench.system.proctree import descendants, kill_group, pid_alive, stop_pid, stop_pids, stop_tree  # noqa: F401
from xcbench.system.safeopen import drain_to, open_append

# Which Debian package provides a tool, for "how to fix" messages.
PACKAGE_OF = {
    "ceph": "ceph-common", "ceph-mon": "ceph-mon", "ceph-osd": "ceph-osd", "ceph-mgr": "ceph-mgr",
    "ceph-mds": "ceph-mds", "ceph-fuse": "ceph-fuse", "ceph-authtool": "ceph-common",
    "monmaptool": "ceph-base", "rados": "ceph-common", "fio": "fio", "xrootd": "xrootd-server",
    "cmsd": "xrootd-server", "xrdcp": "xrootd-client", "xrdfs": "xrootd-client",
    "xrdadler32": "xrootd-client", "gfal-copy": "gfal2-util", "iperf3": "iperf3",
    "setfattr": "attr", "getfattr": "attr", "fusermount": "fuse",
}


@dataclass
class Completed:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def which(tool: str) -> str:
    """Absolute path of ``tool`` or an XcbError saying which package to install."""
    path = shutil.which(tool)
    if path is None:
        pkg = PACKAGE_OF.get(tool)
        hint = f" (install the Debian package {pkg}, or run `make setup`)" if pkg else ""
        raise XcbError(f"{tool}: command not found{hint}")
    return path


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def run(cmd: Sequence[object], *, timeout: float | None = 300, check: bool = True,
        env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
        input: str | bytes | None = None, text: bool = True,
        user: tuple[int, int] | None = None, inherit_env: bool = True) -> Completed:
    """Run ``cmd`` (never through a shell; each argument goes through str()) and wait for it.

    ``env`` is added to the current environment (``inherit_env=False``: it is the whole of
    it). ``user``: (uid, gid) it runs as, with no supplementary group. With ``check`` a
    non-zero exit becomes an XcbError quoting the command and the last line of stderr.
    """
    args = [str(a) for a in cmd]
    args[0] = which(args[0]) if os.sep not in args[0] else args[0]
    full_env = _env_of(env, inherit_env)
    as_user: dict[str, Any] = {} if user is None else \
        {"user": user[0], "group": user[1], "extra_groups": []}
    t0 = time.monotonic()
    popen: subprocess.Popen | None = None
    try:
        # a signal while the child starts and is written down raises only once this section
        # ends, inside the try: the child is never left without someone to stop it
        with signals.deferred():
            popen = subprocess.Popen(args, stdin=subprocess.PIPE if input is not None else None,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=full_env, cwd=cwd, text=text, start_new_session=True,
                                     **as_user)
            _note(popen.pid, args, name=Path(args[0]).name)
        if user is None:
            stdout, stderr = popen.communicate(input, timeout=timeout)
        else:  # another uid's process is that user's to make write without end
            raw = input.encode() if isinstance(input, str) else input
            stdout, stderr = _bounded(popen, raw, timeout, FOREIGN_OUTPUT, text, Path(args[0]).name)
    except subprocess.TimeoutExpired as e:
        assert popen is not None
        _stop_child(popen)
        raise XcbError(f"{Path(args[0]).name}: timed out after {timeout:g} s "
                       f"({' '.join(args[1:4])} ...)") from e
    except BaseException:  # Ctrl-C, SIGTERM: the child and all it started go (fio's jobs)
        if popen is not None:
            _stop_child(popen)
        raise
    finally:
        if popen is not None:
            _forget(popen.pid)
            _close_pipes(popen)
    cp = subprocess.CompletedProcess(args, popen.returncode, stdout, stderr)
    if cp.returncode == 0:
        _note_mount_change(args)
    out = Completed(args, cp.returncode, cp.stdout, cp.stderr, time.monotonic() - t0)
    if check and cp.returncode != 0:
        why = _last_line(cp.stderr if text else cp.stderr.decode(errors="replace")) or \
            _last_line(cp.stdout if text else cp.stdout.decode(errors="replace"))
        raise XcbError(f"{Path(args[0]).name} {' '.join(args[1:3])} failed "
                       f"(exit {cp.returncode}): {why}")
    return out


FOREIGN_OUTPUT = 256 << 20  # bytes kept of each of stdout and stderr of a process run as another uid


def _bounded(popen: subprocess.Popen, data: bytes | None, timeout: float | None, cap: int,
             text: bool, name: str) -> tuple[Any, Any]:
    """``communicate`` keeping at most ``cap`` bytes of stdout and of stderr: more is an
    XcbError (the caller stops the child)."""
    assert popen.stdout is not None and popen.stderr is not None
    deadline = None if timeout is None else time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    pending = memoryview(data or b"")
    stdin = popen.stdin.fileno() if popen.stdin is not None else None
    if popen.stdin is not None and stdin is not None:
        if pending:
            sel.register(stdin, selectors.EVENT_WRITE)
        else:
            popen.stdin.close()
    out, err = popen.stdout.fileno(), popen.stderr.fileno()
    bufs = {out: bytearray(), err: bytearray()}
    for fd in bufs:
        sel.register(fd, selectors.EVENT_READ)
    with sel:
        while sel.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(name, timeout or 0)
            for key, _ in sel.select(left):
                fd = key.fd
                if fd == stdin:
                    try:  # writable: at least PIPE_BUF bytes go without blocking
                        pending = pending[os.write(fd, pending[:4096]):]
                    except BrokenPipeError:
                        pending = memoryview(b"")
                    if not pending and popen.stdin is not None:
                        sel.unregister(fd)
                        popen.stdin.close()
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    sel.unregister(fd)
                    continue
                bufs[fd] += chunk
                if len(bufs[fd]) > cap:
                    raise XcbError(f"{name}: over {cap >> 20} MiB of output from a process running "
                                   "as another user: stopped")
    popen.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    o, e = bytes(bufs[out]), bytes(bufs[err])
    return (o.decode(errors="replace"), e.decode(errors="replace")) if text else (o, e)


def _env_of(env: Mapping[str, str] | None, inherit: bool) -> dict[str, str] | None:
    if env is None:
        return None if inherit else {}
    mine = {k: str(v) for k, v in env.items()}
    return {**os.environ, **mine} if inherit else mine


@dataclass
class Proc:
    """A process started by :func:`spawn`; ``log`` holds its stdout+stderr."""
    popen: subprocess.Popen
    name: str
    log: Path | None = None
    _fh: IO | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, n: int = 20) -> str:
        return tail(self.log, n) if self.log else ""


def tail(path: str | os.PathLike | None, n: int = 20) -> str:
    """The last ``n`` lines of a log file ('' if missing)."""
    if path is None:
        return ""
    try:
        # a daemon's log, in a dir its user owns: a link planted there is never followed
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            return "\n".join(fh.read().decode(errors="replace").splitlines()[-n:])
    except (OSError, TypeError):
        return ""


def spawn(cmd: Sequence[object], *, name: str | None = None, log: str | os.PathLike | None = None,
          env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
          procs: ProcessSet | None = None, pipe: bool = False, stdin: bool = False,
          log_cap: int | None = None) -> Proc:
    """Start ``cmd`` in a new session (its own process group) and return at once.

    ``pipe``: its stdout is a pipe (``popen.stdout``; stderr still goes to ``log``). ``stdin``:
    its stdin is a pipe held open by us (an ssh client whose remote side ends at its EOF).
    ``log_cap``: what it writes to ``log`` goes through a pipe of ours, and past that many
    bytes is read and dropped (a process that must not outlive us: another host's agent)."""
    args = [str(a) for a in cmd]
    args[0] = which(args[0]) if os.sep not in args[0] else args[0]
    full_env = None if env is None else {**os.environ, **{k: str(v) for k, v in env.items()}}
    # by descriptor, never through a link, never in a dir another user can write (fsutil)
    fh = os.fdopen(open_append(log), "ab") if log else None
    drain = os.pipe() if fh is not None and log_cap is not None else None
    sink: Any = drain[1] if drain is not None else fh
    popen: subprocess.Popen | None = None
    try:
        # as in run(): a signal while the child starts raises once it is in ``procs`` and
        # recorded, so that the caller's stop_all (or the next command's reap) finds it
        with signals.deferred():
            popen = subprocess.Popen(
                args, stdout=subprocess.PIPE if pipe else sink or subprocess.DEVNULL,
                stderr=(sink or subprocess.DEVNULL) if pipe else subprocess.STDOUT,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                env=full_env, cwd=cwd, start_new_session=True)
            if drain is not None:
                assert fh is not None and log_cap is not None
                os.close(drain[1])
                threading.Thread(target=drain_to, args=(drain[0], fh, log_cap), daemon=True,
                                 name=f"xcb-log-{Path(args[0]).name}").start()
                fh = None  # the drain closes it at the child's EOF
            p = Proc(popen, name or Path(args[0]).name, Path(log) if log else None, fh)
            if procs is not None:
                procs.add(p)
                if procs.record:
                    _note(p.pid, args, name=p.name)
                    if Path(args[0]).name == "ceph-fuse":  # its mount point is its last argument
                        _note_mount(args[-1], "fuse.ceph-fuse")
    except BaseException:
        if popen is None:
            if fh:
                fh.close()
            if drain is not None:
                os.close(drain[0])
                os.close(drain[1])
        elif procs is None:  # nobody else knows of it
            stop(Proc(popen, name or Path(args[0]).name, None, fh), timeout=5)
        raise
    return p


# --- the record of what this command started (xcbench.system.orphans.Recorder, while it is on) -------
recorder: Any = None


def _note(pid: int, args: list[str], name: str) -> None:
    if recorder is not None:
        recorder.add(pid, name, args)


def _forget(pid: int) -> None:
    if recorder is not None:
        recorder.drop(pid)


def _note_mount(path: str, fstype: str) -> None:
    if recorder is not None:
        recorder.add_mount(os.path.abspath(path), fstype)


def _note_mount_change(args: list[str]) -> None:
    if recorder is not None:
        recorder.mount_change(args)


def _stop_child(popen: subprocess.Popen) -> None:
    """A run() child cut short: it and everything it started are stopped and gone."""
    stop_tree(popen, grace=5.0)
    try:
        popen.communicate(timeout=5)  # what is left in its pipes; closes them
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def _close_pipes(popen: subprocess.Popen) -> None:
    for f in (popen.stdin, popen.stdout, popen.stderr):
        if f is not None:
            try:
                f.close()
            except OSError:
                pass


def stop(p: Proc, *, timeout: float = 10.0) -> int | None:
    """Stop a spawned process and its whole group; returns its exit code."""
    if p.alive():
        stop_tree(p.popen, grace=timeout, give_up=5)
    try:
        rc = p.popen.wait(timeout=5)
    except subprocess.TimeoutExpired:
        rc = None
    if p._fh:
        p._fh.close()
    _forget(p.pid)
    return rc


class ProcessSet:
    """Everything one run started, so that a fault or Ctrl-C stops all of it (last first)."""

    def __init__(self, record: bool = True) -> None:
        self._procs: list[Proc] = []
        self._lock = threading.Lock()
        # recorded for the next command after a kill -9 (xcbench.system.orphans); the mini cluster's
        # daemons are not: the cluster is meant to outlive the command that started it
        self.record = record

    def add(self, p: Proc) -> Proc:
        with self._lock:
            self._procs.append(p)
        return p

    def discard(self, p: Proc) -> None:
        with self._lock:
            if p in self._procs:
                self._procs.remove(p)

    def __iter__(self):
        with self._lock:
            return iter(list(self._procs))

    def stop_all(self, timeout: float = 10.0) -> None:
        """Stop them all, last started first. A signal meanwhile (the command's normal end
        racing a Ctrl-C) is raised once all are stopped: it must not leave the rest running."""
        with signals.deferred():
            while True:
                with self._lock:
                    if not self._procs:
                        return
                    p = self._procs[-1]
                stop(p, timeout=timeout)
                self.discard(p)  # only once stopped: anything that cuts it short leaves it here


# --- a process by pid, through psutil: its command line and what it uses ---------------------

def _process(pid: int):
    import psutil
    return psutil.Process(pid)


def cmdline(pid: int) -> list[str] | None:
    """argv of process ``pid``; None when it is gone, a zombie or not ours to read."""
    import psutil
    try:
        argv = _process(pid).cmdline()
    except (psutil.Error, OSError):
        return None
    return argv or None  # a zombie (or a kernel thread) has an empty command line


def rss(pid: int) -> int:
    """Resident bytes of process ``pid`` (0 when it is gone or not ours to read)."""
    import psutil
    try:
        return int(_process(pid).memory_info().rss)
    except (psutil.Error, OSError):
        return 0


def usage(pid: int) -> dict[str, float]:
    """CPU seconds (user+system), CPU of its reaped children, RSS bytes and threads of ``pid``.

    ``children_cpu_seconds`` is where a root:// TPC destination's work goes (xrootd runs each
    pull as a child `xrdcp --server`). A process that is gone (or a zombie) raises
    ProcessLookupError, one we may not read PermissionError: both OSError, as /proc reads were.
    """
    import psutil
    try:
        p = _process(pid)
        with p.oneshot():
            if p.status() == psutil.STATUS_ZOMBIE:
                raise ProcessLookupError(f"pid {pid} is a zombie")
            t = p.cpu_times()
            return {"cpu_seconds": t.user + t.system,
                    "children_cpu_seconds": t.children_user + t.children_system,
                    "rss_bytes": p.memory_info().rss, "threads": p.num_threads()}
    except psutil.AccessDenied as e:
        raise PermissionError(f"pid {pid}: {e}") from e
    except psutil.Error as e:  # NoSuchProcess, ZombieProcess
        raise ProcessLookupError(f"pid {pid} is gone") from e
