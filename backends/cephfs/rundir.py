"""The run's own directory in a file system: ``/xcbench/<run>``, the only part xcbench mounts.

Mounting the run's directory (ceph-fuse --client_mountpoint, ``mount -t ceph :/xcbench/<run>``)
instead of the file system's root means nothing outside it is reachable through xcbench's mount,
whatever goes wrong on cleanup; and a site's key can be limited to ``path=/xcbench``. The
directory is made and removed through libcephfs (python3-cephfs), mounted at ``/xcbench`` when
the key allows no more; ``/xcbench`` itself is made only when it is missing and the key may
(else the admin makes it once: `xcbench cluster caps`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import socket

from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError

TOP = "xcbench"


def new_run_name() -> str:
    host = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in socket.gethostname())[:32]
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


@contextlib.contextmanager
def _libcephfs(cluster: Cluster, root: str):
    import cephfs
    fs = cephfs.LibCephFS(conffile=str(cluster.conf), auth_id=cluster.fs_ceph_id)
    try:
        if cluster.fs_keyring:
            fs.conf_set("keyring", str(cluster.fs_keyring))
        fs.conf_set("client_fs", cluster.fs_name)
        fs.conf_set("client_mount_timeout", "30")
        fs.mount(mount_root=root.encode())
        yield fs
    finally:
        with contextlib.suppress(Exception):
            fs.shutdown()


def _errno(e: Exception) -> int | None:
    return getattr(e, "errno", None)


def make(cluster: Cluster, run: str) -> bool:
    """Make ``/xcbench/<run>`` (0755); return True if ``/xcbench`` was made too."""
    import cephfs
    made_top = False
    try:
        with _libcephfs(cluster, f"/{TOP}") as fs:
            fs.mkdir(run.encode(), 0o755)
            return False
    except cephfs.Error as e:
        if _errno(e) not in (errno.ENOENT, None) and not isinstance(e, cephfs.ObjectNotFound):
            raise XcbError(f"CephFS {cluster.fs_name}: cannot make /{TOP}/{run} as "
                           f"client.{cluster.fs_ceph_id}: {e}") from e
    try:  # /xcbench is missing: make it, if the key may reach the root
        with _libcephfs(cluster, "/") as fs:
            try:
                fs.mkdir(TOP.encode(), 0o755)
                made_top = True
            except cephfs.ObjectExists:
                pass
            fs.mkdir(f"/{TOP}/{run}".encode(), 0o755)
    except cephfs.Error as e:
        raise XcbError(f"CephFS {cluster.fs_name}: /{TOP} is missing and client."
                       f"{cluster.fs_ceph_id} may not make it ({e}): the admin makes it once "
                       f"(`xcbench cluster caps` says how)") from e
    return made_top


def remove(cluster: Cluster, run: str, made_top: bool) -> str | None:
    """Remove the (empty) run directory, and ``/xcbench`` if this run made it and it is empty.
    Returns why something was left, or None."""
    import cephfs
    try:
        with _libcephfs(cluster, f"/{TOP}") as fs:
            fs.rmdir(run.encode())
    except cephfs.ObjectNotFound:
        pass
    except cephfs.Error as e:
        return f"/{TOP}/{run} left in {cluster.fs_name}: {e}"
    if made_top:
        with contextlib.suppress(cephfs.Error), _libcephfs(cluster, "/") as fs:
            fs.rmdir(TOP.encode())  # fails (and stays) while other runs use it
    return None
