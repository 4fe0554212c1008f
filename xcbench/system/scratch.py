"""Scratch in shared places (/dev/shm, /tmp, /var/tmp): nothing predictable, nothing followed.

On a host other people use, a directory name anyone can guess is a name anyone can take first
(with a symlink in it pointing at a file root then overwrites). So:

- :func:`private_dir` makes a directory of a random name with ``mkdir`` (which fails on any
  existing entry, a symlink included), mode 0700, recorded (xcbench.system.orphans) *before* it is
  made so that a ``kill -9`` at any point leaves nothing the next command does not remove;
- :func:`write_new` writes a file through a descriptor of its directory: a fresh temporary
  name opened with O_CREAT|O_EXCL|O_NOFOLLOW, chmod/chown on the descriptor, renamed into
  place relative to the directory (a rename replaces a planted link, never its target);
- :func:`check_fits` refuses scratch on a tmpfs that filling would push the host out of memory.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.figures.units import format_size
from xcbench.system import orphans

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# What scratch on a tmpfs may not take of the memory available now: the OS, gateways, Ceph.
RESERVE_MIN = 2 << 30
RESERVE_FRACTION = 0.10  # of total memory, when that is more than RESERVE_MIN


def private_dir(base: str | os.PathLike, prefix: str, *, mode: int = 0o700,
                uid: int | None = None) -> Path:
    """A new directory ``base/prefix<random>``, ours (checked), recorded before it is made.
    ``uid``: the user it will be given to (recorded, so the next command accepts that owner)."""
    for _ in range(100):
        path = Path(os.path.abspath(base)) / f"{prefix}{secrets.token_hex(8)}"
        orphans.note_dir(path, uid=uid)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            orphans.forget_dir(path)
            continue
        except BaseException:
            orphans.forget_dir(path)
            raise
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():  # cannot happen: mkdir made it
            raise XcbError(f"scratch: {path} is not the directory just made")
        if mode != 0o700:
            os.chmod(path, mode)
        return path
    raise XcbError(f"scratch: no free name for {prefix}* in {base}")


def lexists_regular(directory: str | os.PathLike, name: str) -> os.stat_result | None:
    """The stat of ``directory/name`` when it is a regular file (a symlink is not followed)."""
    try:
        st = os.lstat(Path(directory) / name)
    except FileNotFoundError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def write_new(directory: str | os.PathLike, name: str, chunks: Iterable[bytes], *,
              mode: int = 0o644, owner: tuple[int, int] | None = None) -> Path:
    """Write ``chunks`` to ``directory/name`` without following any link: a fresh temporary
    file (O_EXCL|O_NOFOLLOW) in the directory opened as a descriptor (O_NOFOLLOW), mode and
    owner set on the file's descriptor, renamed over ``name`` relative to that descriptor."""
    if "/" in name or name in ("", ".", ".."):
        raise XcbError(f"scratch: {name!r} is not a file name")
    dfd = os.open(directory, _DIR)
    try:
        tmp = f".{name}.{secrets.token_hex(4)}.part"
        fd = os.open(tmp, _NEW, 0o600, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb", closefd=False) as fh:
                for chunk in chunks:
                    fh.write(chunk)
            if owner is not None:
                os.fchown(fd, *owner)
            os.fchmod(fd, mode)
            os.close(fd)
            fd = -1
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            try:
                os.unlink(tmp, dir_fd=dfd)
            except FileNotFoundError:
                pass
            raise
    finally:
        os.close(dfd)
    return Path(directory) / name


def memory_room() -> tuple[int, int]:
    """(available memory, reserve): scratch on a tmpfs may take at most available - reserve."""
    import psutil
    vm = psutil.virtual_memory()
    return int(vm.available), max(RESERVE_MIN, int(vm.total * RESERVE_FRACTION))


def check_fits(size: int, what: str, hint: str = "") -> None:
    """Refuse (one line) ``size`` bytes on a tmpfs that filling would push the host out of
    memory: a tmpfs holds its files in RAM (and swap), so they must fit in what is free."""
    available, reserve = memory_room()
    if size > available - reserve:
        raise XcbError(f"{what}: a tmpfs of {format_size(size)} does not fit in memory "
                       f"({format_size(available)} available, {format_size(reserve)} kept in "
                       f"reserve){'; ' + hint if hint else ''}")


def on_tmpfs(path: str | os.PathLike) -> bool:
    """Is ``path`` on a tmpfs (its longest mount-table prefix)?"""
    real = os.path.realpath(path)
    best, kind = "", ""
    with open("/proc/self/mounts") as fh:
        for line in fh:
            f = line.split()
            if len(f) > 2 and (real == f[1] or real.startswith(f[1].rstrip("/") + "/")) \
                    and len(f[1]) >= len(best):
                best, kind = f[1], f[2]
    return kind == "tmpfs"
