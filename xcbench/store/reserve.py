"""Room kept for the manifest once the result store is full.

Freeing room when the disk fills does not keep it for the manifest on a disk that others write
too: whoever writes next takes it. (Seen here: a run gave up its ballast at the first lost row, a
process filling the disk took that room, and the manifest saying which rows were lost was never
written.) So a run keeps two slot files of :data:`RESERVE` bytes, allocated when it starts, and
on a full disk the manifest is written INTO a slot's allocated blocks (overwritten in place,
padded with spaces, which JSON ignores) and renamed over manifest.json. The manifest it replaces
is kept as that slot (hard-linked first), so a slot of full size is there for the next save too.

Overwriting allocated blocks needs no new ones on tmpfs, ext4 and xfs; a copy-on-write file
system (btrfs, zfs) may still refuse it, and then the save fails as any write would.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

RESERVE = 256 << 10  # bytes per slot; also kept free by appends once the store is full
SLOTS = (".reserve-1", ".reserve-2")
_OLD = ".reserve"  # the single ballast of runs made before the slots


def make(run: Path) -> None:
    """Allocate the slots that are missing; on a disk without room for one, go without it."""
    for name in SLOTS:
        try:
            fd = os.open(run / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            continue  # already there (a resume), or no room: nothing to keep
        try:
            os.posix_fallocate(fd, 0, RESERVE)
        except OSError:
            (run / name).unlink(missing_ok=True)
        finally:
            os.close(fd)


def release(run: Path) -> None:
    """Give the slots back (the run is written; a resume makes them again)."""
    for name in (*SLOTS, *(s + ".next" for s in SLOTS), _OLD):
        with contextlib.suppress(OSError):
            (run / name).unlink()


def write_into(run: Path, target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` using only a slot's allocated blocks; raises OSError
    (ENOSPC) when no slot holds it."""
    name = next((s for s in SLOTS if _size(run / s) > len(data)), None)
    if name is None:
        raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (and no reserve slot of the "
                      f"run holds {len(data)} bytes)")
    slot = run / name
    padded = data + b" " * (_size(slot) - len(data) - 1) + b"\n"
    fd = os.open(slot, os.O_WRONLY)
    try:
        view, at = memoryview(padded), 0
        while at < len(view):
            at += os.pwrite(fd, view[at:], at)
    finally:
        os.close(fd)
    keep = run / (name + ".next")
    keep.unlink(missing_ok=True)  # left by a kill between the steps below
    with contextlib.suppress(FileNotFoundError):
        os.link(target, keep)  # the replaced manifest's blocks: the next slot
    os.replace(slot, target)
    with contextlib.suppress(FileNotFoundError):
        os.replace(keep, slot)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
