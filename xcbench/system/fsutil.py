"""Deleting trees safely: the one place xcbench removes a directory tree.

:func:`remove_tree` removes a tree xcbench made (a scratch dir, a staging dir, a cell's dir)
and nothing beyond it:

- it never crosses a mount point: a directory on another device (``st_dev``) or listed in the
  mount table (a bind mount of the same device, a dead fuse mount) is left in place and named;
- with ``unmount=True`` (the tree is xcbench's own, made by mkdtemp) what is mounted below it is
  unmounted first, deepest first; a mount that stays is left alone, never walked into;
- it never follows a symlink: a link is removed as a link, directories are opened with
  O_NOFOLLOW relative to their parent's fd, so a swapped-in link cannot redirect it.

Anything left behind is reported (a warning on stderr, or XcbError with ``check=True``).
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.system import mounts

__all__ = ["remove_tree", "unmount_below"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def unmount_below(path: str | os.PathLike, *, include_self: bool = False) -> list[Path]:
    """Unmount every mount point below ``path`` (deepest first); return those still mounted.

    For a tree xcbench made itself: ceph-fuse mounts also get their process stopped."""

    real = Path(os.path.realpath(path))
    table = mounts.mount_table()
    todo = sorted({m for m, _ in table if m.is_relative_to(real) and (include_self or m != real)},
                  key=lambda p: len(p.parts), reverse=True)
    kinds = {m: t for m, t in table}
    for m in todo:
        if kinds.get(m) in mounts.FUSE_TYPES:
            mounts.fuse_umount(m)
        else:
            mounts.umount_path(m)
    now = {m for m, _ in mounts.mount_table()}
    return [m for m in todo if m in now]


def remove_tree(path: str | os.PathLike, *, unmount: bool = False, check: bool = False,
                what: str = "") -> list[Path]:
    """Remove ``path`` and what is below it on the same file system; return what was left.

    ``unmount``: unmount what is mounted below ``path`` first (only for a tree xcbench made).
    ``check``: raise XcbError naming what was left instead of warning on stderr.
    """

    path = Path(os.path.abspath(path))
    path = Path(os.path.realpath(path.parent)) / path.name  # the mount table holds real paths
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return []
    except OSError as e:  # a dead fuse mount: ENOTCONN
        return _report([path], {path: e.strerror or str(e)}, check, what)
    if not stat.S_ISDIR(top.st_mode):  # a file or a symlink: remove it, never what it points to
        os.unlink(path)
        return []
    if unmount:
        unmount_below(path)
    mounted = {m for m, _ in mounts.mount_table()}
    if path in mounted:
        return _report([path], {path: "it is a mount point"}, check, what)
    left: list[Path] = []
    why: dict[Path, str] = {}
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as e:
        return _report([path], {path: e.strerror or str(e)}, check, what)
    try:
        if (os.fstat(fd).st_dev, os.fstat(fd).st_ino) != (top.st_dev, top.st_ino):
            return _report([path], {path: "it changed while being removed"}, check, what)
        _clear(fd, path, top.st_dev, mounted, left, why)
    finally:
        os.close(fd)
    if not left:
        try:
            os.rmdir(path)
        except FileNotFoundError:
            pass
        except OSError as e:
            left.append(path)
            why[path] = e.strerror or str(e)
    return _report(left, why, check, what) if left else []


def _clear(dirfd: int, path: Path, dev: int, mounted: set[Path], left: list[Path],
           why: dict[Path, str]) -> None:
    """Remove the entries of the directory open as ``dirfd`` (``path``), depth first."""
    try:
        names = os.listdir(dirfd)
    except OSError as e:
        left.append(path)
        why[path] = e.strerror or str(e)
        return
    for name in names:
        child = path / name
        try:
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as e:  # ENOTCONN: a dead fuse mount
            left.append(child)
            why[child] = e.strerror or str(e)
            continue
        if not stat.S_ISDIR(st.st_mode):
            _try(lambda n=name: os.unlink(n, dir_fd=dirfd), child, left, why)
            continue
        if st.st_dev != dev or child in mounted:
            left.append(child)
            why[child] = "a mount point (another file system): not crossed"
            continue
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dirfd)
        except OSError as e:  # ELOOP: it became a symlink
            left.append(child)
            why[child] = e.strerror or str(e)
            continue
        try:
            got = os.fstat(fd)
            if (got.st_dev, got.st_ino) != (st.st_dev, st.st_ino):
                left.append(child)
                why[child] = "it changed while being removed"
                continue
            n_left = len(left)
            _clear(fd, child, dev, mounted, left, why)
        finally:
            os.close(fd)
        if len(left) == n_left:
            _try(lambda n=name: os.rmdir(n, dir_fd=dirfd), child, left, why)


def _try(op, child: Path, left: list[Path], why: dict[Path, str]) -> None:
    try:
        op()
    except FileNotFoundError:
        pass
    except OSError as e:
        left.append(child)
        why[child] = e.strerror or errno.errorcode.get(e.errno or 0, str(e))


def _report(left: list[Path], why: dict[Path, str], check: bool, what: str) -> list[Path]:
    first = left[0]
    more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
    msg = (f"{what + ': ' if what else ''}left {first} in place: {why.get(first, 'not removed')}"
           f"{more}")
    if check:
        raise XcbError(msg)
    print(f"xcbench: warning: {msg}", file=sys.stderr)
    return left
