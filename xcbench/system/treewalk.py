"""Walking a tree another user may have made (the xrootd user's logs, a scratch dir it was
handed, an export anyone could ``mkdir -p`` in through an anonymous gateway): iteratively, so a
tree thousands of levels deep costs no recursion, a bounded number of descriptors and bounded
time; never through a link (every directory is entered by descriptor from its parent, O_NOFOLLOW,
and checked to be the one listed).

- :func:`clear` removes what is below a directory (xcbench.system.fsutil.remove_tree), at most
  MAX_DEPTH levels down; it holds the descriptors of the FD_WINDOW deepest levels and reopens a
  level above them through ``..`` of its child, checked (device, inode) to be the same;
- :func:`copy` copies the regular files below a directory, at most KEEP_DEPTH levels down, each
  file capped and all of them within a :class:`Budget` (bytes and entries), so 10⁴ sparse files
  of 64 MiB copy a budget's worth, not 640 GB.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from xcbench.system.safeopen import DIR_FLAGS

MAX_DEPTH = 100_000  # levels clear() goes down; deeper is left in place and named
FD_WINDOW = 64  # descriptors of the deepest levels clear() keeps open
KEEP_DEPTH = 16  # levels copy() goes down (daemons write logs one or two levels deep)
KEEP_BYTES = 256 << 20  # bytes one copy() keeps at most, unless given a Budget
KEEP_ENTRIES = 10_000  # entries one copy() looks at at most


@dataclass
class Budget:
    """What copies may still take: bytes and directory entries (shared by several copies: a
    run's artifacts)."""
    bytes: int = KEEP_BYTES
    entries: int = KEEP_ENTRIES

    def spent(self) -> bool:
        return self.bytes <= 0 or self.entries <= 0


@dataclass
class _Level:
    path: Path
    dev: int
    ino: int
    fd: int | None
    names: list[str]
    left_before: int = 0


def _names(fd: int, path: Path, left: list[Path], why: dict[Path, str]) -> list[str] | None:
    try:
        return os.listdir(fd)
    except OSError as e:
        left.append(path)
        why[path] = e.strerror or str(e)
        return None


def clear(top_fd: int, top_path: Path, dev: int, mounted: set[Path], left: list[Path],
          why: dict[Path, str], max_depth: int = MAX_DEPTH) -> None:
    """Remove the entries below the directory open as ``top_fd`` (``top_path``; the descriptor
    stays the caller's): links as links, never a mount point or another device, nothing deeper
    than ``max_depth``; what stays is appended to ``left`` (``why`` says why)."""
    st = os.fstat(top_fd)
    names = _names(top_fd, top_path, left, why)
    if names is None:
        return
    stack = [_Level(top_path, st.st_dev, st.st_ino, top_fd, names)]
    try:
        while stack:
            lv = stack[-1]
            if lv.names:
                _step(stack, lv, lv.names.pop(), dev, mounted, left, why, max_depth)
                continue
            if len(stack) == 1:
                return
            stack.pop()
            parent = stack[-1]
            if parent.fd is None:  # above the window: reopened through the child's ".."
                assert lv.fd is not None
                parent.fd = _reopen(lv.fd, parent)
                if parent.fd is None:
                    left.append(parent.path)
                    why[parent.path] = "it changed while being removed"
                    os.close(lv.fd)
                    return
            assert lv.fd is not None
            os.close(lv.fd)
            lv.fd = None
            if len(left) == lv.left_before:
                _try(os.rmdir, lv.path.name, parent.fd, lv.path, left, why)
    finally:
        for lv in stack[1:]:
            if lv.fd is not None:
                os.close(lv.fd)


def _step(stack: list[_Level], lv: _Level, name: str, dev: int, mounted: set[Path],
          left: list[Path], why: dict[Path, str], max_depth: int) -> None:
    assert lv.fd is not None
    child = lv.path / name
    try:
        st = os.stat(name, dir_fd=lv.fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    except OSError as e:  # ENOTCONN: a dead fuse mount
        left.append(child)
        why[child] = e.strerror or str(e)
        return
    if not stat.S_ISDIR(st.st_mode):
        _try(os.unlink, name, lv.fd, child, left, why)
        return
    if st.st_dev != dev or child in mounted:
        left.append(child)
        why[child] = "a mount point (another file system): not crossed"
        return
    if len(stack) > max_depth:
        left.append(child)
        why[child] = f"more than {max_depth:,} levels deep: not walked"
        return
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=lv.fd)
    except OSError as e:  # ELOOP: it became a symlink
        left.append(child)
        why[child] = e.strerror or str(e)
        return
    got = os.fstat(fd)
    names = None
    if (got.st_dev, got.st_ino) != (st.st_dev, st.st_ino):
        left.append(child)
        why[child] = "it changed while being removed"
    else:
        names = _names(fd, child, left, why)
    if names is None:
        os.close(fd)
        return
    stack.append(_Level(child, st.st_dev, st.st_ino, fd, names, len(left)))
    if len(stack) > FD_WINDOW + 1:  # the top (index 0) is the caller's: never closed here
        old = stack[-FD_WINDOW - 1]
        if old.fd is not None:
            os.close(old.fd)
            old.fd = None


def _reopen(child_fd: int, parent: _Level) -> int | None:
    """The parent of the directory open as ``child_fd``, if it is still ``parent``."""
    try:
        fd = os.open("..", DIR_FLAGS, dir_fd=child_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (parent.dev, parent.ino):
        os.close(fd)
        return None
    return fd


def _try(op: Callable[..., object], name: str, dir_fd: int, child: Path, left: list[Path],
         why: dict[Path, str]) -> None:
    try:
        op(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except OSError as e:
        left.append(child)
        why[child] = e.strerror or errno.errorcode.get(e.errno or 0, str(e))


@dataclass
class _Dir:
    fd: int
    dst: Path
    names: list[str] = field(default_factory=list)


def copy(src_fd: int, dst: Path, cap: int, budget: Budget,
         read_at: Callable[[int, str, int], bytes | None],
         write: Callable[[Path, bytes], Path], make: Callable[[Path], Path],
         max_depth: int = KEEP_DEPTH) -> list[Path]:
    """Copy the regular files below the directory open as ``src_fd`` (its descriptor stays the
    caller's) into ``dst`` (made with ``make`` where missing): ``read_at`` reads at most the
    bytes asked for, without a link; ``write`` writes a copy. Each file at most ``cap`` bytes,
    all of them within ``budget``; nothing deeper than ``max_depth``. Returns the copies."""
    out: list[Path] = []
    stack = [_Dir(os.dup(src_fd), dst, [])]
    try:
        stack[0].names = os.listdir(stack[0].fd)
        budget.entries -= len(stack[0].names)
        while stack and not budget.spent():
            d = stack[-1]
            if not d.names:
                os.close(stack.pop().fd)
                continue
            name = d.names.pop()
            try:
                st = os.stat(name, dir_fd=d.fd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    if len(stack) <= max_depth:
                        fd = os.open(name, DIR_FLAGS, dir_fd=d.fd)
                        stack.append(_Dir(fd, d.dst / name))
                        stack[-1].names = os.listdir(fd)
                        budget.entries -= len(stack[-1].names)
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                data = read_at(d.fd, name, max(0, min(cap, budget.bytes)))
            except OSError:  # gone meanwhile, or a link: not kept
                continue
            if data is None:
                continue
            budget.bytes -= len(data)
            for lvl in stack:  # the copy's dirs, made as the first file needs them
                if not lvl.dst.is_dir():
                    make(lvl.dst)
            out.append(write(d.dst / name, data))
    except OSError:
        pass
    finally:
        for d in stack:
            os.close(d.fd)
    return out
