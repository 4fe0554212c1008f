"""Deleting trees safely: the one place xcbench removes a directory tree.

:func:`remove_tree` removes a tree xcbench made (a scratch dir, a staging dir, a cell's dir)
and nothing beyond it:

- it never crosses a mount point: a directory on another device (``st_dev``) or listed in the
  mount table (a bind mount of the same device, a dead fuse mount) is left in place and named;
- with ``unmount=True`` (the tree is xcbench's own, made by mkdtemp) what is mounted below it is
  unmounted first, deepest first; a mount that stays is left alone, never walked into;
- it never follows a symlink: a link is removed as a link, directories are opened with
  O_NOFOLLOW relative to their parent's fd, so a swapped-in link cannot redirect it;
- it walks without recursion, to a depth cap (xcbench.system.treewalk): a tree thousands of
  levels deep is removed like any other.

Anything left behind is reported (a warning on stderr, or XcbError with ``check=True``).
:func:`remove_dir` removes a scratch dir only if it is one xcbench made (:func:`scratch_problem`:
its name, not a link, its owner) and nothing is mounted at or below it.

Making what another user (the xrootd user) is handed, as root, without ever working inside a
directory that user owns: everything is made by us in a directory of ours, never through a link
(``O_NOFOLLOW``, ``O_EXCL`` for what must be new), and given away last, through the descriptor
of what was made (:func:`hand_over`: ``fchown``/``fchmod``). :func:`keep_copy` and
:func:`copy_files` copy what a daemon wrote back without following a link, each file and all of
them capped; :func:`not_ours` says why a path given on the command line is another user's.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.system import mounts, treewalk
from xcbench.system.safeopen import DIR_FLAGS as _DIR_FLAGS
from xcbench.system.safeopen import open_append, others_may_write

__all__ = ["hand_over", "keep_copy", "make_dir", "not_ours", "open_append", "others_may_write",
           "remove_tree", "unmount_below", "write_file"]

_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a fifo never blocks
KEEP_CAP = 64 << 20  # bytes kept of one file a daemon wrote (a log): its head is what matters


def make_dir(path: str | os.PathLike, mode: int = 0o755) -> Path:
    """A new directory (never one that exists: a planted one is refused), ``mode`` exactly."""
    path = Path(path)
    os.mkdir(path, 0o700)
    fd = os.open(path, _DIR_FLAGS)
    try:
        if os.fstat(fd).st_uid != os.geteuid():  # cannot happen: mkdir made it
            raise XcbError(f"{path} is not the directory just made")
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return path


def write_file(path: str | os.PathLike, data: bytes | str, mode: int = 0o644, *,
               new: bool = False) -> Path:
    """Write ``data`` to the regular file ``path`` of ours (made if missing; ``new``: it must
    not exist), ``mode`` exactly. Never through a link; never a file of another owner or with
    another name (a hard link)."""
    path = Path(path)
    fd = os.open(path, _WRITE_FLAGS | (os.O_EXCL if new else 0), 0o600)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
            raise XcbError(f"{path}: not a file of ours to write (owner uid {st.st_uid}, "
                           f"{st.st_nlink} links)")
        os.ftruncate(fd, 0)
        os.fchmod(fd, mode)
        view = memoryview(data.encode() if isinstance(data, str) else data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return path


def hand_over(path: str | os.PathLike, ids: tuple[int, int] | None, mode: int | None = None) -> None:
    """Give the file or directory ``path`` (made by us, in a directory of ours) to user ``ids``:
    ``fchown`` and ``fchmod`` on its descriptor, so a link put in its place is never followed.
    ``ids`` None: it stays ours (only ``mode`` is set)."""
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            raise XcbError(f"{path}: not a file or directory of ours to hand over")
        if mode is not None:
            os.fchmod(fd, mode)
        if ids is not None:
            os.fchown(fd, *ids)
    finally:
        os.close(fd)


def keep_copy(src: str | os.PathLike, dst: str | os.PathLike, *, cap: int = KEEP_CAP,
              budget: treewalk.Budget | None = None) -> list[Path]:
    """Copy the regular files below ``src`` (written by another user) into ``dst`` (ours): no
    link followed, nothing but regular files, at most ``cap`` bytes of each and ``budget`` (bytes
    and entries; default treewalk.KEEP_BYTES) of all, at most treewalk.KEEP_DEPTH levels down,
    without recursion. The copies are ours, 0644; returns them."""
    try:
        fd = os.open(src, _DIR_FLAGS)
    except OSError:
        return []
    try:
        if not Path(dst).is_dir():
            make_dir(dst)
        return treewalk.copy(fd, Path(dst), cap, budget or treewalk.Budget(), read_at,
                             lambda p, data: write_file(p, data), make_dir)
    finally:
        os.close(fd)


def copy_files(paths: list[Path], dst: str | os.PathLike, budget: treewalk.Budget, *,
               cap: int = KEEP_CAP) -> list[Path]:
    """Copy each regular file of ``paths`` (which may be in a dir another user writes) into
    ``dst`` (ours), read through its directory's descriptor: never through a link, never a
    fifo's wait, at most ``cap`` bytes of each and what ``budget`` still allows. Two files of
    one name: the second is kept as ``<parent>-<name>``. Returns the copies."""
    out: list[Path] = []
    dst = Path(dst)
    for p in paths:
        if budget.spent():
            break
        p = Path(os.path.abspath(p))
        budget.entries -= 1
        try:
            dfd = os.open(p.parent, _DIR_FLAGS)
        except OSError:
            continue
        try:
            data = read_at(dfd, p.name, max(0, min(cap, budget.bytes)))
        finally:
            os.close(dfd)
        if data is None:
            continue
        budget.bytes -= len(data)
        if not dst.is_dir():
            dst.mkdir(parents=True, exist_ok=True)  # in the run dir: ours
        name = p.name if not os.path.lexists(dst / p.name) else f"{p.parent.name}-{p.name}"
        out.append(write_file(dst / name, data))
    return out


def read_at(dirfd: int, name: str, cap: int) -> bytes | None:
    """The first ``cap`` bytes of regular file ``name`` in directory ``dirfd`` (another user's),
    never through a link and never blocking on a fifo; None when it is not a regular file (or a
    link, or gone)."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dirfd)
    except OSError:  # a link (ELOOP) or gone
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], cap
        while left > 0 and (b := os.read(fd, min(left, 1 << 20))):
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def not_ours(path: str | os.PathLike) -> str | None:
    """Why a directory or file given on the command line is not ours to make or fill (None: it
    is): it is a symlink, or it (or, when missing, its nearest existing parent) belongs to
    another user. root's own directories are anybody's parents (/tmp, /home)."""
    p = Path(os.path.abspath(path))
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except OSError as e:
        return e.strerror or str(e)
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            return "it is a symlink (not followed)"
        if st.st_uid != os.geteuid():
            return f"it belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()})"
        return None
    for parent in p.parents:
        try:
            pst = os.stat(parent)
        except FileNotFoundError:
            continue
        except OSError as e:
            return f"{parent}: {e.strerror or e}"
        if pst.st_uid not in (os.geteuid(), 0):
            return f"its parent {parent} belongs to uid {pst.st_uid}, not to this user"
        return None
    return None


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
        treewalk.clear(fd, path, top.st_dev, mounted, left, why)
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


def _report(left: list[Path], why: dict[Path, str], check: bool, what: str) -> list[Path]:
    first = left[0]
    more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
    msg = (f"{what + ': ' if what else ''}left {first} in place: {why.get(first, 'not removed')}"
           f"{more}")
    if check:
        raise XcbError(msg)
    print(f"xcbench: warning: {msg}", file=sys.stderr)
    return left


# the names xcbench gives its scratch dirs: xcb-*, xcbench-*, and the gateways' admin (xcbgw-*)
# and security (xcbsec-*: CA, keys, tokens) dirs
SCRATCH_PREFIXES = ("xcb-", "xcbench-", "xcbgw-", "xcbsec-")


def scratch_problem(path: str | os.PathLike, uid: int | None = None) -> str | None:
    """Why ``path`` is not a scratch dir xcbench may remove (None: it may): an absolute path
    named as xcbench names them (SCRATCH_PREFIXES), a directory itself (not a link to one), owned by this user (or the
    recorded ``uid`` it was given to)."""
    p = str(path)
    if not os.path.isabs(p) or os.path.normpath(p) != p:
        return "not an absolute, normal path"
    if not os.path.basename(p).startswith(SCRATCH_PREFIXES):
        return "not named " + " or ".join(f"{x}*" for x in SCRATCH_PREFIXES)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None  # nothing to remove
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory (a symlink is never followed)"
    if st.st_uid not in {os.geteuid(), os.geteuid() if uid is None else uid}:
        return f"owned by uid {st.st_uid}, not by this user"
    return None


def remove_dir(path: str | os.PathLike, uid: int | None = None) -> bool:
    """Remove a scratch dir xcbench made, unless something is mounted at or below it (a
    delete never crosses a mount point: the mount stays, and so does the dir) or it is not
    one xcbench made (:func:`scratch_problem`: a link, another owner, another name)."""
    path = os.path.abspath(path)
    real = Path(os.path.realpath(os.path.dirname(path))) / os.path.basename(path)
    if scratch_problem(real, uid) is not None or not real.is_dir() or \
            any(m == real or m.is_relative_to(real) for m, _ in mounts.mount_table()):
        return False
    return not remove_tree(real, what="scratch of a killed xcbench")
