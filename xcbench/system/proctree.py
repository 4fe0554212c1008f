"""Stopping processes: by pid, by process group, and with everything they started.

xcbench.system.proc starts every child in a session of its own and stops it with :func:`stop_tree`;
:func:`stop_pid` and :func:`stop_pids` stop processes known only by pid (a pid file, a record
of a killed command). All of them go through xcbench.system.proc, which re-exports these names.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal ``pid``'s process group when it leads one (xcbench starts each in a new
    session), else ``pid`` alone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child still answers kill(0); treat it as gone
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop_pid(pid: int, *, timeout: float = 10.0, group: bool = False) -> None:
    """Terminate ``pid`` (or its process group), wait up to ``timeout``, then kill."""
    def send(sig: int) -> None:
        try:
            os.killpg(pid, sig) if group else os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    send(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    send(signal.SIGKILL)
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def descendants(pid: int) -> dict[int, float]:
    """{pid: start time} of every live descendant of ``pid``, whatever session it is in."""
    import psutil
    out: dict[int, float] = {}
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except (psutil.Error, OSError):
        return out
    for k in kids:
        try:
            out[k.pid] = k.create_time()
        except (psutil.Error, OSError):
            pass
    return out


def _still(pid: int, start: float) -> bool:
    """The process seen as (pid, start time) still runs (a recycled pid does not count)."""
    import psutil
    try:
        p = psutil.Process(pid)
        return p.create_time() == start and p.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


def stop_tree(popen: subprocess.Popen, *, grace: float = 5.0, give_up: float = 10.0) -> None:
    """Stop a child of ours and every process it started, and wait until all are gone.

    SIGTERM to the child's process group first (fio then ends its jobs and exits); after
    ``grace`` s, SIGSTOP (it forks no more) and SIGKILL to it and to every descendant seen, each
    with its group. A signal to the child's group alone is not enough: fio's job processes call
    setsid(), so they are in no group of the child's, and a job forked just before fio died
    waits forever for fio's go (fio left running after a signal)."""
    seen = descendants(popen.pid) if popen.poll() is None else {}
    if popen.returncode is None:
        kill_group(popen.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while True:
        if popen.poll() is None:
            seen.update(descendants(popen.pid))  # while it lives, its tree is known
        elif not any(_still(pid, t) for pid, t in seen.items()):
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if popen.poll() is None:
        kill_group(popen.pid, signal.SIGSTOP)
        seen.update(descendants(popen.pid))
        kill_group(popen.pid, signal.SIGKILL)
    for pid, t in seen.items():
        if _still(pid, t):
            kill_group(pid, signal.SIGKILL)
    deadline = time.monotonic() + give_up
    while time.monotonic() < deadline and (popen.poll() is None or
                                           any(_still(pid, t) for pid, t in seen.items())):
        time.sleep(0.05)


def stop_pids(grace: Mapping[int, float], *, sig: int | Mapping[int, int] = signal.SIGTERM,
              give_up: float = 5.0) -> None:
    """Stop several processes (not necessarily ours) together: send each ``sig`` (one signal for
    all, or one per pid), wait, SIGKILL a pid still alive after its own ``grace[pid]`` seconds,
    and forget one still alive ``give_up`` s after that (unkillable, D state). Our own children
    are reaped so that none is left a zombie."""
    for pid in grace:
        s = sig if isinstance(sig, int) else sig.get(pid, signal.SIGTERM)
        try:
            os.kill(pid, s)
        except (ProcessLookupError, PermissionError):
            pass
    t0 = time.monotonic()
    alive = dict(grace)
    while alive:
        now = time.monotonic() - t0
        for pid, g in list(alive.items()):
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            if not pid_alive(pid) or now > g + give_up:
                del alive[pid]
            elif now > g:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        if alive:
            time.sleep(0.05)
