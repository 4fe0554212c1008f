"""Mounting CephFS.

- ceph-fuse (:func:`fuse_mount`): mounts of an embedded cluster are recorded under
  ``<state>/mounts/`` so that `cluster down` can unmount them wherever they are
  (xcbench.system.mounts.fuse_umount makes the ceph-fuse process go even when the mount is dead);
- the cephfs backend's mount (:func:`mount`, :func:`umount`): the kernel client when this host
  has it (both the mount.ceph helper and the ceph file system in the kernel, /proc/filesystems or
  a loadable module), else ceph-fuse; containers and this dev machine have only ceph-fuse;
- the mount table and unmounting are the OS layer's (xcbench.system.mounts).

Takes a cluster handle (xcbench.ceph.handle: conf, fs_name, fs client and keyring, state_dir).
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
from pathlib import Path

from xcbench.ceph.handle import ClusterHandle
from xcbench.errors import XcbError
from xcbench.system import proc
from xcbench.system.mounts import _record, fuse_umount, is_mounted, umount_path


# ---- ceph-fuse -----------------------------------------------------------------------------------
def check_fuse() -> None:
    if not os.path.exists("/dev/fuse"):
        raise XcbError("/dev/fuse is missing: ceph-fuse cannot mount CephFS (load the fuse module "
                       "with `modprobe fuse`, or give the container --device /dev/fuse)")


def fuse_mount(cluster: ClusterHandle, mountpoint: Path, *, procs: proc.ProcessSet | None = None,
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
    cmd = ["ceph-fuse", "-f", "-c", cluster.conf, "--id", cluster.fs_ceph_id,
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


def _secret(keyring: Path, ceph_id: str) -> str:
    """The base64 key of client.<id> from a keyring file (mount.ceph wants the bare key)."""
    section = None
    for line in keyring.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
        elif section == f"client.{ceph_id}" and line.replace(" ", "").startswith("key="):
            return line.split("=", 1)[1].strip()
    raise XcbError(f"{keyring}: no key for client.{ceph_id}")


def kernel_mount(cluster: ClusterHandle, mountpoint: Path, secret_dir: Path, root: str = "/") -> None:
    """mount -t ceph, monitors found from the conf by mount.ceph itself."""
    opts = [f"name={cluster.fs_ceph_id}", f"conf={cluster.conf}", f"mds_namespace={cluster.fs_name}"]
    if cluster.fs_keyring:
        # the handle's private key dir (xcbench.ceph.keys), removed with the handle
        sf = cluster._keys.write(f"client.{cluster.fs_ceph_id}.secret",
                          _secret(Path(cluster.fs_keyring), cluster.fs_ceph_id).encode())
        opts.append(f"secretfile={sf}")
    mountpoint.mkdir(parents=True, exist_ok=True)
    proc.run(["mount", "-t", "ceph", f":{root}", mountpoint, "-o", ",".join(opts)], timeout=60)


def mount(cluster: ClusterHandle, mountpoint: Path, *, procs=None, secret_dir: Path | None = None,
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


def umount(cluster: ClusterHandle, mountpoint: Path, kind: str) -> None:
    if kind == "kernel":
        umount_path(mountpoint)
    else:
        fuse_umount(mountpoint, state_dir=cluster.state_dir)
