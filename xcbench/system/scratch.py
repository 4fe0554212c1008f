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

A run's agents on a node it reaches only through its batch system (xcbench.hosts.steps) get the
run's **scratch tag** in ``$XCBENCH_SCRATCH_TAG``: every dir :func:`private_dir` makes there
carries it in its name (``xcbgw-<tag>-<random>``), so what the run made on that node is known
before it is made, from the coordinator's record alone, and :func:`remove_tagged` (the hidden
command ``node-clean``, run as a step) removes it after the agents were killed.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.figures.units import format_size
from xcbench.system import orphans
from xcbench.system.fsutil import SCRATCH_PREFIXES, remove_tree, scratch_problem

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# What scratch on a tmpfs may not take of the memory available now: the OS, gateways, Ceph.
RESERVE_MIN = 2 << 30
RESERVE_FRACTION = 0.10  # of total memory, when that is more than RESERVE_MIN
TAG_ENV = "XCBENCH_SCRATCH_TAG"
TAG_RE = re.compile(r"^[0-9a-f]{12,32}$")
# where private_dir is called on a host (the gateway agent's /var/tmp, a push source's /dev/shm)
BASES = ("/var/tmp", "/dev/shm", "/tmp")


def scratch_tag() -> str | None:
    """This process's scratch tag (``$XCBENCH_SCRATCH_TAG``), None when it has none."""
    tag = os.environ.get(TAG_ENV)
    if not tag:
        return None
    if not TAG_RE.match(tag):
        raise XcbError(f"scratch: ${TAG_ENV}={tag[:40]!r} is not a scratch tag (12-32 hex digits)")
    return tag


def private_dir(base: str | os.PathLike, prefix: str, *, mode: int = 0o700,
                uid: int | None = None) -> Path:
    """A new directory ``base/prefix<random>``, ours (checked), recorded before it is made.
    ``uid``: the user it will be given to (recorded, so the next command accepts that owner).
    With a scratch tag (:func:`scratch_tag`) the name is ``prefix<tag>-<random>``."""
    tag = scratch_tag()
    mark = f"{tag}-" if tag else ""
    for _ in range(100):
        path = Path(os.path.abspath(base)) / f"{prefix}{mark}{secrets.token_hex(8)}"
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


def tagged(tag: str, bases: Iterable[str] = ()) -> list[Path]:
    """The dirs in the scratch bases whose names carry ``tag`` as :func:`private_dir` puts it
    (a name xcbench gives, ``-<tag>-`` in it), whoever owns them (:func:`remove_tagged` checks)."""
    if not TAG_RE.match(tag):
        raise XcbError(f"scratch: {tag[:40]!r} is not a scratch tag (12-32 hex digits)")
    found: list[Path] = []
    for base in dict.fromkeys([*(bases or BASES), tempfile.gettempdir()]):
        try:
            names = os.listdir(base)
        except OSError:
            continue
        found += [Path(base) / n for n in sorted(names)
                  if n.startswith(SCRATCH_PREFIXES) and f"-{tag}-" in n]
    return found


def remove_tagged(tag: str, bases: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Remove every dir of this user tagged ``tag`` (what unmounted below it first: the tree is
    xcbench's own); a link, another owner's entry or a tree that stays are left and named.
    (removed, left with why)."""
    removed, left = [], []
    for path in tagged(tag, bases):
        why = scratch_problem(path)
        if why is None and not path.is_dir():
            why = "not a directory"
        stayed = remove_tree(path, unmount=True, what="a run's node scratch") if why is None else []
        if stayed:
            why = f"{len(stayed)} entries stayed ({stayed[0]})"
        if why is None:
            removed.append(str(path))
        elif os.path.lexists(path):
            left.append(f"{path}: {why}")
    return removed, left
