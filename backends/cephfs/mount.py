"""Mount the cluster's CephFS for the cephfs backend: the kernel client when this host has it,
else ceph-fuse (through xcbench.ceph.cluster, which owns ceph-fuse lifecycles).

The kernel client needs both the mount.ceph helper and the ceph file system in the kernel
(/proc/filesystems, or a loadable module); containers and this dev machine have only ceph-fuse.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import TYPE_CHECKING

from xcbench import proc
from xcbench.errors import XcbError

if TYPE_CHECKING:
    from xcbench.ceph.cluster import Cluster

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


def kernel_mount(cluster: Cluster, mountpoint: Path, secret_dir: Path) -> None:
    """mount -t ceph, monitors found from the conf by mount.ceph itself."""
    opts = [f"name={cluster.fs_client_id}", f"conf={cluster.conf}", f"mds_namespace={cluster.fs_name}"]
    if cluster.fs_keyring:
        secret_dir.mkdir(parents=True, exist_ok=True)
        sf = secret_dir / f"client.{cluster.fs_client_id}.secret"
        fd = os.open(sf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(_secret(Path(cluster.fs_keyring), cluster.fs_client_id))
        opts.append(f"secretfile={sf}")
    mountpoint.mkdir(parents=True, exist_ok=True)
    proc.run(["mount", "-t", "ceph", ":/", mountpoint, "-o", ",".join(opts)], timeout=60)


def mount(cluster: Cluster, mountpoint: Path, *, procs=None, secret_dir: Path) -> tuple[str, str]:
    """Mount and return (kind, note): kind 'kernel' or 'fuse'; note says why fuse was used."""
    if not cluster.fs_name:
        raise XcbError(f"{cluster.conf}: no CephFS file system to mount (give --fs NAME)")
    note = "no kernel ceph client on this host"
    if kernel_client_available():
        try:
            kernel_mount(cluster, mountpoint, secret_dir)
            return "kernel", ""
        except XcbError as e:
            note = f"kernel mount failed ({e})"
    cluster.fuse_mount(mountpoint, procs=procs)
    return "fuse", note


def umount(cluster: Cluster, mountpoint: Path, kind: str) -> None:
    if kind == "kernel":
        r = proc.run(["umount", mountpoint], check=False, timeout=60)
        if r.returncode != 0:
            proc.run(["umount", "-l", mountpoint], check=False, timeout=60)
    else:
        cluster.fuse_umount(mountpoint)
