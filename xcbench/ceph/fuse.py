"""Mount CephFS with ceph-fuse and unmount it again, even when the ceph-fuse process is gone.

Mounts of an embedded cluster are recorded under ``<state>/mounts/`` so that `cluster down` can
unmount them wherever they are; a dead mount ("transport endpoint is not connected") is found
through the mount table (psutil), not os.path.ismount (which fails on it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from xcbench import proc
from xcbench.errors import XcbError

if TYPE_CHECKING:
    from xcbench.ceph.cluster import Cluster

FUSE_TYPES = ("fuse.ceph-fuse", "fuse.ceph")


def ceph_fuse_mounts() -> list[Path]:
    """Mount points of every ceph-fuse mount on this host (live or dead).

    psutil lists the mount table without stat()ing the mount points (and decodes their octal
    escapes), so a dead FUSE mount is found too.
    """
    import psutil
    try:
        parts = psutil.disk_partitions(all=True)
    except OSError:
        return []
    return [Path(p.mountpoint) for p in parts if p.fstype in FUSE_TYPES]


def is_mounted(mountpoint: Path) -> bool:
    return Path(mountpoint).absolute() in ceph_fuse_mounts()


def check_fuse() -> None:
    if not os.path.exists("/dev/fuse"):
        raise XcbError("/dev/fuse is missing: ceph-fuse cannot mount CephFS (load the fuse module "
                       "with `modprobe fuse`, or give the container --device /dev/fuse)")


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


def mount(cluster: Cluster, mountpoint: Path, *, procs: proc.ProcessSet | None = None,
          timeout: float = 30) -> proc.Proc:
    """ceph-fuse the cluster's file system (as its fs client) on ``mountpoint``; wait for it."""
    check_fuse()
    if not cluster.fs_name:
        raise XcbError(f"{cluster.conf}: no CephFS file system to mount (give --fs NAME)")
    mountpoint = Path(mountpoint).absolute()
    if is_mounted(mountpoint):
        raise XcbError(f"{mountpoint}: a ceph-fuse mount is already there")
    mountpoint.mkdir(parents=True, exist_ok=True)
    cmd = ["ceph-fuse", "-f", "-c", cluster.conf, "--id", cluster.fs_client_id,
           "--client_fs", cluster.fs_name]
    if cluster.fs_keyring:
        cmd += ["-k", cluster.fs_keyring]
    if cluster.state_dir is not None:
        log = Path(cluster.state_dir) / "log" / f"ceph-fuse.{mountpoint.name}.{os.getpid()}.out"
        log.parent.mkdir(parents=True, exist_ok=True)
    else:
        log = mountpoint.parent / f".{mountpoint.name}.ceph-fuse.out"
    p = proc.spawn(cmd + [mountpoint], name=f"ceph-fuse {mountpoint}", log=log, procs=procs)
    deadline = time.monotonic() + timeout
    while not is_mounted(mountpoint):
        if not p.alive() or time.monotonic() > deadline:
            proc.stop(p)
            if procs is not None:
                procs.discard(p)
            why = p.tail(3).replace("\n", " | ") or "no output"
            raise XcbError(f"ceph-fuse {mountpoint}: mount failed ({why}; log {log})")
        time.sleep(0.05)
    rec = _record(cluster.state_dir, mountpoint)
    if rec is not None:
        rec.parent.mkdir(exist_ok=True)
        rec.write_text(json.dumps({"mountpoint": str(mountpoint), "pid": p.pid}))
    return p


def umount(mountpoint: Path, *, state_dir: Path | None = None, pid: int | None = None) -> None:
    """Unmount (lazily if busy) and make sure its ceph-fuse process is gone."""
    mountpoint = Path(mountpoint).absolute()
    rec = _record(state_dir, mountpoint)
    if pid is None and rec is not None and rec.exists():
        try:
            pid = json.loads(rec.read_text()).get("pid")
        except (OSError, ValueError):
            pid = None
    if is_mounted(mountpoint):
        tool = ["fusermount", "-u"] if shutil.which("fusermount") else ["umount"]
        r = proc.run(tool + [mountpoint], check=False, timeout=30)
        if r.returncode != 0 and is_mounted(mountpoint):  # busy: detach it lazily
            proc.run([tool[0], "-uz" if tool[0] == "fusermount" else "-l", mountpoint],
                     check=False, timeout=30)
    if pid and proc.pid_alive(pid) and _is_ceph_fuse(pid):
        deadline = time.monotonic() + 10
        while proc.pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.pid_alive(pid):
            proc.stop_pid(pid, timeout=5)
    _reap(pid)
    if rec is not None:
        rec.unlink(missing_ok=True)


def _is_ceph_fuse(pid: int) -> bool:
    argv = proc.cmdline(pid)
    return argv is not None and "ceph-fuse" in argv[0]


def _reap(pid: int | None) -> None:
    if pid:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
