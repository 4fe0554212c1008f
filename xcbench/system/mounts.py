"""What is mounted where, and unmounting: the mount table, and fuse mounts made to go.

- the mount table (:func:`mount_table`, :func:`is_mount_point`, :func:`mounts_under`), read from
  /proc/self/mountinfo: os.path.ismount fails on a dead fuse mount ("transport endpoint is not
  connected"), and deleting must never cross a mount point;
- a ceph-fuse mount (:func:`fuse_umount`) is unmounted and its process made to go even when the
  mount is already dead; mounts of an embedded cluster are recorded under ``<state>/mounts/``
  (xcbench.ceph.mounts makes them) so that `cluster down` finds them wherever they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

from xcbench.system import proc


# ---- the mount table ---------------------------------------------------------------------------
def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_table() -> list[tuple[Path, str]]:
    """[(mount point, fs type)] of this mount namespace, dead fuse mounts included."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split(" ")
        if len(fields) > 4:
            out.append((Path(_unescape(fields[4])), right.split(" ", 1)[0]))
    return out


def is_mount_point(path: str | os.PathLike) -> bool:
    """True if something is mounted on ``path`` (symlinks resolved)."""
    real = Path(os.path.realpath(path))
    return any(mnt == real for mnt, _ in mount_table())


def mounts_under(path: str | os.PathLike) -> list[Path]:
    """Mount points strictly below ``path``: a recursive delete must not descend into them."""
    real = Path(os.path.realpath(path))
    return sorted({mnt for mnt, _ in mount_table() if mnt != real and mnt.is_relative_to(real)})


# ---- fuse mounts ---------------------------------------------------------------------------------
FUSE_TYPES = ("fuse.ceph-fuse", "fuse.ceph")


def ceph_fuse_mounts() -> list[Path]:
    """Mount points of every ceph-fuse mount on this host (live or dead)."""
    return [mnt for mnt, fstype in mount_table() if fstype in FUSE_TYPES]


def is_mounted(mountpoint: Path) -> bool:
    return Path(mountpoint).absolute() in ceph_fuse_mounts()


def _record(state_dir: Path | None, mountpoint: Path) -> Path | None:
    if state_dir is None:
        return None
    h = hashlib.sha256(str(mountpoint).encode()).hexdigest()[:12]
    return Path(state_dir) / "mounts" / f"{h}.json"


def recorded_mounts(state_dir: Path) -> list[dict]:
    out = []
    for f in sorted((Path(state_dir) / "mounts").glob("*.json")):
        try:
            out.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue
    return out


def fuse_umount(mountpoint: Path, *, state_dir: Path | None = None, pid: int | None = None) -> None:
    """Unmount (lazily if busy) and make sure its ceph-fuse process is gone."""
    mountpoint = Path(mountpoint).absolute()
    rec = _record(state_dir, mountpoint)
    if pid is None and rec is not None and rec.exists():
        try:
            pid = json.loads(rec.read_text()).get("pid")
        except (OSError, ValueError):
            pid = None
    if is_mounted(mountpoint):
        unmount(mountpoint, fuse=True)
    if pid and proc.pid_alive(pid) and _is_ceph_fuse(pid, mountpoint):
        deadline = time.monotonic() + 10
        while proc.pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.pid_alive(pid):
            proc.stop_pid(pid, timeout=5)
    _reap(pid)
    if rec is not None:
        rec.unlink(missing_ok=True)


def _is_ceph_fuse(pid: int, mountpoint: Path) -> bool:
    """Is ``pid`` the ceph-fuse serving ``mountpoint``: the ceph-fuse program itself, with that
    mount point as an argument, run by this user? (A recorded pid is never trusted alone: a
    recycled pid, or one whose argv merely mentions ceph-fuse, is left alone.)"""
    argv = proc.cmdline(pid)
    if not argv or os.path.basename(argv[0]) != "ceph-fuse" or str(mountpoint) not in argv[1:]:
        return False
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.geteuid()
    except OSError:
        return False


def _reap(pid: int | None) -> None:
    if pid:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def unmount(mountpoint: str | os.PathLike, *, fuse: bool = False, timeout: float = 30) -> None:
    """The one unmount: umount (fusermount -u for a fuse mount, where it exists), then lazily
    (-l / -uz) if the mount is busy and still there."""
    if fuse and shutil.which("fusermount"):
        first, lazy = ["fusermount", "-u"], ["fusermount", "-uz"]
    else:
        first, lazy = ["umount"], ["umount", "-l"]
    if proc.run([*first, str(mountpoint)], check=False, timeout=timeout).returncode != 0 \
            and is_mount_point(mountpoint):
        proc.run([*lazy, str(mountpoint)], check=False, timeout=timeout)


def umount_path(mountpoint: Path) -> None:
    """umount, lazily if busy (a kernel mount has no process to stop first)."""
    unmount(mountpoint, timeout=60)
