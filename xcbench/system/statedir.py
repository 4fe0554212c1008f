"""The state home: where xcbench keeps what must outlive one command (process and mount records
of xcbench.system.orphans, the cgroup registry of xcbench.system.cgroups, key-copy records, host-change
records, the embedded cluster). One location, never the current directory unless asked:

    $XCBENCH_HOME                         when set (also: $XCBENCH_STATE, its older name)
    /var/lib/xcbench                      for root
    $XDG_STATE_HOME/xcbench               for other users (default ~/.local/state/xcbench)

The next command acts on what is recorded there (kills, unmounts, removes), so the state home
must prove it is ours before anything in it is believed: :func:`ensure` makes it 0700 and
refuses one owned by another user or reached through a symlink; :func:`record_problem` says why
one record file may not be acted on (another owner, writable by others, a link). Every record
also names the host that wrote it (:data:`HOST`): on a shared (NFS) home another host's records
are left alone.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from xcbench.errors import XcbError

ENV = "XCBENCH_HOME"
LEGACY_ENV = "XCBENCH_STATE"
ROOT_HOME = "/var/lib/xcbench"
HOST = socket.gethostname()


def default_home() -> Path:
    """Where state lives when no variable names a place (root, else the XDG state dir)."""
    if os.geteuid() == 0:
        return Path(ROOT_HOME)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / "xcbench"


def home() -> Path:
    """The state home of this command."""
    d = os.environ.get(ENV) or os.environ.get(LEGACY_ENV)
    return (Path(d) if d else default_home()).absolute()


def dir_problem(path: Path) -> str | None:
    """Why ``path`` is not a state dir of ours (None: it is): a directory itself (not a link),
    owned by this user, writable by nobody else."""
    return _entry_problem(path, stat.S_ISDIR, "a directory", "it does not exist")


def _entry_problem(path: Path, is_kind: Callable[[int], bool], kind: str, missing: str) -> str | None:
    """Why ``path`` itself (lstat: a link is not followed) is not ours: ``missing`` when it is
    not there, not of the kind ``is_kind`` (stat.S_ISDIR, S_ISREG) tells, or _not_ours."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return missing
    if not is_kind(st.st_mode):
        return f"not {kind} (a symlink is not followed)"
    return _not_ours(st)


def _not_ours(st: os.stat_result) -> str | None:
    """Why a file with this stat is not ours to act on: another owner, or others may write it."""
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def ensure(path: Path | None = None) -> Path:
    """The state home (or ``path`` in it), made 0700 if missing; XcbError (one line) when it
    exists but is not ours. A dir of ours that others could write is tightened to 0700."""
    top = home()
    target = Path(path).absolute() if path is not None else top
    dirs = [target]
    if target != top and target.is_relative_to(top):
        dirs = [top]
        for part in target.relative_to(top).parts:
            dirs.append(dirs[-1] / part)
    for d in dirs:
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
        except OSError as e:
            raise XcbError(f"state dir {d}: cannot make it ({e.strerror or e})") from e
        why = dir_problem(d)
        if why is not None and why.startswith("writable by others"):
            os.chmod(d, 0o700)
            why = dir_problem(d)
        if why is None and d == top and os.lstat(d).st_mode & 0o077:
            os.chmod(d, 0o700)  # the home: nobody else even lists what is recorded
        if why is not None:
            raise XcbError(f"state dir {d}: {why}; refusing to use it (set ${ENV} to a "
                           f"directory of your own)")
    return target


def record_problem(path: Path) -> str | None:
    """Why the record file ``path`` may not be acted on (None: it may): a regular file (not a
    link), owned by this user, writable by nobody else, in a state dir of ours."""
    why = dir_problem(path.parent)
    if why is not None:
        return f"its directory is {why}" if not why.startswith("not") else f"its directory: {why}"
    return _entry_problem(path, stat.S_ISREG, "a regular file", "it is gone")


def host_problem(rec: dict) -> str | None:
    """A record written on another host (a shared home) is that host's to act on."""
    host = rec.get("host") if isinstance(rec, dict) else None
    if not isinstance(host, str) or not host:
        return "it names no host"
    return None if host == HOST else f"it was written on host {host!r}, this is {HOST!r}"


def warn_skipped(path: Path, why: str) -> None:
    """The one line saying a record was not acted on (and is left in place)."""
    print(f"xcbench: warning: {path}: left alone, not acted on: {why}", file=sys.stderr)


def write_private(path: Path, text: str) -> None:
    """Write a record atomically, 0600, in a state dir of ours (made if needed)."""
    ensure(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
