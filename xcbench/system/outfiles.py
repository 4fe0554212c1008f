"""Where a command writes what it was asked to (``report --out``, a plan, a state dir the user
named): reached from a root-owned anchor by descriptor, never by a name another user can change.

"Is this path ours?" decided by name, then used by name, leaves a window: between the check and
the write, another user makes a missing parent in a shared place (``/tmp/r``) and a link in it,
and root then writes through it. So:

- :func:`open_dir` walks a directory's path from ``/`` one component at a time, each opened
  relative to its parent's descriptor with O_NOFOLLOW (a link anywhere is refused, not
  followed), each checked to be root's or ours and writable by nobody else (a sticky dir of
  root's, like /tmp, is passed through: others add names there, never replace ours); a missing
  component is made by us, there and then (``mkdir`` fails on anything made meanwhile, which is
  then checked as any other);
- :func:`hold` does that when the command starts and keeps the descriptor, so a directory made
  for the output is ours before a slow render begins, and :func:`write` goes through it;
- :func:`write` writes a file by descriptor: a fresh temporary name (O_EXCL|O_NOFOLLOW), renamed
  over the name relative to the directory (a link in its place is replaced, never followed).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.system.safeopen import DIR_FLAGS, others_may_write

_held: dict[Path, int] = {}  # directory -> its descriptor, for the life of the command


def _step(fd: int, part: str, where: Path, make: bool, mode: int) -> int:
    """The directory ``part`` below ``fd``, made (``mode``) when missing and ``make``."""
    try:
        return os.open(part, DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not make:
            raise XcbError(f"{where}: no such directory") from None
    except OSError as e:
        try:
            link = stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            link = False
        what = "a symlink (not followed)" if link or e.errno == errno.ELOOP else e.strerror or str(e)
        raise XcbError(f"{where}: {what}; give a path of your own") from None
    try:
        os.mkdir(part, mode, dir_fd=fd)
    except FileExistsError:
        pass  # made meanwhile by someone: opened and checked below like any other
    except OSError as e:
        raise XcbError(f"{where}: cannot make it ({e.strerror or e})") from None
    return _step(fd, part, where, False, mode)


def open_dir(path: str | os.PathLike, *, make: bool = True, mode: int = 0o755) -> int:
    """A descriptor of directory ``path`` reached from ``/`` (or from the nearest held one)
    without following a link, every component root's or ours and writable by nobody else (a
    root-owned sticky dir passed through), missing ones made by us when ``make``. XcbError (one
    line) otherwise. The caller closes it."""
    p = Path(os.path.abspath(path))
    base = next((a for a in [p, *p.parents] if a in _held), None)
    fd = os.dup(_held[base]) if base is not None else os.open("/", DIR_FLAGS)
    here = base or Path("/")
    try:
        for part in p.relative_to(here).parts:
            here = here / part
            nfd = _step(fd, part, here, make, mode)
            os.close(fd)
            fd = nfd
            why = others_may_write(os.fstat(fd))
            if why is not None:
                raise XcbError(f"{here}: {why}; refusing to make or write anything there "
                               "(give a path of your own)")
        return fd
    except BaseException:
        os.close(fd)
        raise


def hold(path: str | os.PathLike) -> Path:
    """Open (making what is missing) the directory ``path`` will be written in, now, and keep
    it for :func:`write` (the command's output: made ours before anything slow runs)."""
    p = Path(os.path.abspath(path))
    if p.parent not in _held:
        _held[p.parent] = open_dir(p.parent)
    return p


def write(path: str | os.PathLike, data: bytes | str, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` through its directory's descriptor (:func:`open_dir`): a fresh
    temporary file renamed over the name, never through a link."""
    p = Path(os.path.abspath(path))
    dfd = open_dir(p.parent)
    try:
        tmp = f".{p.name}.{secrets.token_hex(4)}.part"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=dfd)
        try:
            view = memoryview(data.encode() if isinstance(data, str) else data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        try:
            os.replace(tmp, p.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError:
            os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)
    return p


def release() -> None:
    """Close what :func:`hold` kept (the command ends)."""
    while _held:
        os.close(_held.popitem()[1])
