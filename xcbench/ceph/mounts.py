"""Mounting CephFS, and what is mounted where.

- ceph-fuse lifecycle (:func:`fuse_mount`, :func:`fuse_umount`): mounts of an embedded cluster
  are recorded under ``<state>/mounts/`` so that `cluster down` can unmount them wherever they
  are, and the ceph-fuse process is made to go even when the mount is already dead;
- the cephfs backend's mount (:func:`mount`, :func:`umount`): the kernel client when this host
  has it (both the mount.ceph helper and the ceph file system in the kernel, /proc/filesystems or
  a loadable module), else ceph-fuse; containers and this dev machine have only ceph-fuse;
- the mount table (:func:`mount_table`, :func:`is_mount_point`, :func:`mounts_under`), read from
  /proc/self/mountinfo: os.path.ismount fails on a dead fuse mount ("transport endpoint is not
  connected"), and deleting must never cross a mount point.

Takes a cluster handle (conf, fs_name, fs client and keyring, state_dir); it does not import
xcbench.ceph.cluster, which imports it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from xcbench.errors import XcbError
from xcbench.system import proc

if TYPE_CHECKING:
    from xcbench.ceph.cluster import Cluster


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


# ---- ceph-fuse -----------------------------------------------------------------------------------
FUSE_TYPES = ("fuse.ceph-fuse", "fuse.ceph")


def ceph_fuse_mounts() -> list[Path]:
    """Mount points of every ceph-fuse mount on this host (live or dead)."""
    return [mnt for mnt, fstype in mount_table() if fstype in FUSE_TYPES]


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


def fuse_mount(cluster: Cluster, mountpoint: Path, *, procs: proc.ProcessSet | None = None,
               timeout: float = 30, root: str | None = None) -> proc.Proc:
    """ceph-fuse the cluster's file system (as its fs client) on ``mountpoint``; wait for it.
    ``root``: the directory of the file system to mount (ceph-fuse -r), default its root."""
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
    if root and root != "/":
        cmd += ["--client_mountpoint", root]
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


# ---- the cephfs backend's mount: kernel client, else ceph-fuse ------------------------------------
MOUNT_CEPH = Path("/sbin/mount.ceph")


def kernel_client_available() -> bool:
    if not MOUNT_CEPH.exists():
        return False
    try:
        if re.search(r"\bceph$", Path("/proc/filesystems").read_text(), re.M):
            return True
    except OSError:
        return False
    moddir = Path("/lib/modules") / platform.release() / "kernel" / "fs" / "ceph"
    return moddir.is_dir() and any(moddir.glob("ceph.ko*"))


def _secret(keyring: Path, client_id: str) -> str:
    """The base64 key of client.<id> from a keyring file (mount.ceph wants the bare key)."""
    section = None
    for line in keyring.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
        elif section == f"client.{client_id}" and line.replace(" ", "").startswith("key="):
            return line.split("=", 1)[1].strip()
    raise XcbError(f"{keyring}: no key for client.{client_id}")


def kernel_mount(cluster: Cluster, mountpoint: Path, secret_dir: Path, root: str = "/") -> None:
    """mount -t ceph, monitors found from the conf by mount.ceph itself."""
    opts = [f"name={cluster.fs_client_id}", f"conf={cluster.conf}", f"mds_namespace={cluster.fs_name}"]
    if cluster.fs_keyring:
        # the handle's private key dir (xcbench.ceph.keys), removed with the handle
        sf = cluster._keys.write(f"client.{cluster.fs_client_id}.secret",
                          _secret(Path(cluster.fs_keyring), cluster.fs_client_id).encode())
        opts.append(f"secretfile={sf}")
    mountpoint.mkdir(parents=True, exist_ok=True)
    proc.run(["mount", "-t", "ceph", f":{root}", mountpoint, "-o", ",".join(opts)], timeout=60)


def mount(cluster: Cluster, mountpoint: Path, *, procs=None, secret_dir: Path | None = None,
          root: str = "/") -> tuple[str, str]:
    """Mount directory ``root`` of the file system; return (kind, note): kind 'kernel' or
    'fuse'; note says why fuse was used. (``secret_dir`` is unused: secrets go to the
    handle's private key dir.)"""
    if not cluster.fs_name:
        raise XcbError(f"{cluster.conf}: no CephFS file system to mount (give --fs NAME)")
    note = "no kernel ceph client on this host"
    if kernel_client_available():
        try:
            kernel_mount(cluster, mountpoint, secret_dir or mountpoint.parent, root)
            return "kernel", ""
        except XcbError as e:
            note = f"kernel mount failed ({e})"
    fuse_mount(cluster, mountpoint, procs=procs, root=root)
    return "fuse", note


def umount_path(mountpoint: Path) -> None:
    """umount, lazily if busy (a kernel mount has no process to stop first)."""
    r = proc.run(["umount", mountpoint], check=False, timeout=60)
    if r.returncode != 0 and is_mount_point(mountpoint):
        proc.run(["umount", "-l", mountpoint], check=False, timeout=60)


def umount(cluster: Cluster, mountpoint: Path, kind: str) -> None:
    if kind == "kernel":
        umount_path(mountpoint)
    else:
        fuse_umount(mountpoint, state_dir=cluster.state_dir)
