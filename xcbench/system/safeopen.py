"""Opening by descriptor what root writes by name, and writing a child's output into it within a
cap: the pieces :mod:`xcbench.system.proc` needs (it may not import :mod:`xcbench.system.fsutil`,
which runs processes through it)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

from xcbench.errors import XcbError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def others_may_write(st: os.stat_result) -> str | None:
    """Why a directory with stat ``st`` is one another user can put a name in (None: only we,
    or root, can): it is another user's, or group/other-writable and not sticky (in a sticky
    dir of root's, like /tmp, others add names but never replace ours)."""
    if st.st_uid not in (os.geteuid(), 0):
        return f"it belongs to uid {st.st_uid}"
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        return f"others may write it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def open_append(path: str | os.PathLike, mode: int = 0o644) -> int:
    """A descriptor appending to the regular file ``path`` of ours (made, ``mode``, if missing):
    opened through its directory's descriptor, never through a link (O_NOFOLLOW), never a fifo's
    wait, never another user's file or one with another name (a hard link); XcbError when the
    directory is one another user can write (:func:`others_may_write`): root opens nothing by
    name there. What a daemon's stdout and stderr go to (xcbench.system.proc.spawn)."""
    path = Path(os.path.abspath(path))
    dfd = os.open(path.parent, DIR_FLAGS)
    try:
        why = others_may_write(os.fstat(dfd))
        if why is not None:
            raise XcbError(f"{path}: its directory {path.parent}: {why}; a file is never opened "
                           "by name there")
        fd = os.open(path.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW |
                     os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dfd)
    except OSError as e:
        raise XcbError(f"{path}: cannot open it to append ({e.strerror or e}; a link is never "
                       "followed)") from None
    finally:
        os.close(dfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
        os.close(fd)
        raise XcbError(f"{path}: not a file of ours to append to (owner uid {st.st_uid}, "
                       f"{st.st_nlink} links)")
    os.set_blocking(fd, True)
    return fd


def drain_to(fd: int, fh: IO[bytes], cap: int) -> None:
    """Copy a child's output from ``fd`` to ``fh`` up to ``cap`` bytes, then read and drop the
    rest until its end (the child never blocks on a full pipe); closes both."""
    kept = 0
    try:
        while chunk := os.read(fd, 1 << 16):
            if kept < cap:
                part = chunk[:cap - kept]
                fh.write(part)
                fh.flush()
                kept += len(part)
                if kept >= cap:
                    fh.write(f"\n[xcbench: output cut at {cap:,} bytes]\n".encode())
                    fh.flush()
    except OSError:
        pass
    finally:
        os.close(fd)
        fh.close()
