"""The cephfs backend: one CephFS directory per cell, with the cell's file layout.

prepare: the cell's pool becomes a data pool of the file system; the run's own directory
``/xcbench/<run>`` (made by this instance) is mounted, never the file system's root, under
``workdir/cephfs`` (see rundir.py); the cell gets ``/xcbench/<run>/<cell id>-<tag>``
with ``ceph.dir.layout`` set as a whole (setting the fields one by one can fail on ordering:
object_size must stay a multiple of stripe_unit after every step); the dir is given to the xrootd
user, as gateways run as xrootd.
verify: a file written in the dir must carry the layout and its data objects
``<ino hex>.%08x`` must be in the cell's pool with the sizes the striping arithmetic gives.
cleanup: removes the cell's dir (never crossing a mount point), and when the last target of
this instance is gone the mount and the run's directory.
"""

from __future__ import annotations

import errno
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcbench.backends.base import Backend, Target
from xcbench.backends.cephfs import rundir
from xcbench.cell.layout import Layout, cephfs_objects, cephfs_oid, layout_xattrs
from xcbench.cell.layout import parse_xattr as parse_layout
from xcbench.ceph import mounts as cmount
from xcbench.errors import XcbError
from xcbench.store.findings import object_size_findings, plain_gateway_findings
from xcbench.system.fsutil import remove_tree
from xcbench.system.mounts import is_mount_point
from xcbench.system.xrootd_user import own, remove_as_owner, write_as_owner, xrootd_ids_if_any

if TYPE_CHECKING:
    from xcbench.ceph.cluster import Cluster

TOP = rundir.TOP  # the one top-level directory xcbench writes in a file system
VERIFY_FILE = ".xcbench-verify"
VERIFY_MAX = 32 << 20  # bytes written by verify at most
SETXATTR_RETRY = 5.0  # seconds


def compare_layout(got: dict[str, Any], s: Layout, pool: str, where: str) -> None:
    want = {"stripe_unit": s.stripe_unit, "stripe_count": s.stripe_count,
            "object_size": s.object_size, "pool": pool}
    for key, value in want.items():
        if got.get(key) != value:
            raise XcbError(f"{where}: {key}: CephFS says {got.get(key)!r}, the cell asks for {value!r}")


class CephFSBackend(Backend):
    name = "cephfs"
    needs_cluster = True
    remote_gateway_refusal = (
        "the CephFS layout dir is made, its layout xattrs set and checked on this machine's "
        "ceph-fuse mount before the gateway starts; a gateway agent would have to make its own "
        "ceph-fuse mount (with a CephFS key on that host) and find the same dir there, which it "
        "does not do yet")
    uses_fs = True  # the cluster key needs the file system (xcbench.ceph.access)

    def __init__(self, cluster, workdir, procs=None):
        super().__init__(cluster, workdir, procs)
        self.mountpoint = (self.workdir / "cephfs").absolute()
        self.mount_kind: str | None = None  # set while this instance holds the mount
        self.mount_note = ""
        self._live: set[str] = set()  # fs paths of targets prepared and not yet cleaned up
        self.run: str | None = None  # /xcbench/<run>: made by this instance, the mount's root
        self._made_top = False

    @property
    def run_root(self) -> str | None:
        return f"/{TOP}/{self.run}" if self.run else None

    def _ceph(self) -> Cluster:
        # needs_cluster: Backend.__init__ refuses to make a cephfs backend without a cluster
        assert self.cluster is not None
        return self.cluster

    # ---- mount --------------------------------------------------------------------------
    def _ensure_mounted(self) -> None:
        if self.mount_kind is None:
            self.workdir.mkdir(parents=True, exist_ok=True)
            if self.run is None:
                self.run = rundir.new_run_name()
                self._made_top = rundir.make(self._ceph(), self.run)
            root = self.run_root
            assert root is not None  # self.run was set just above
            self.mount_kind, self.mount_note = cmount.mount(
                self._ceph(), self.mountpoint, procs=self.procs, root=root)

    def close(self) -> None:
        """Unmount what this instance mounted and remove its run dir if empty (cleanup does it
        after the last target)."""
        if self.mount_kind is not None:
            cmount.umount(self._ceph(), self.mountpoint, self.mount_kind)
            self.mount_kind = None
            self._live.clear()
            if is_mount_point(self.mountpoint):
                return  # still there: never remove the run dir under a live mount
        if self.run is not None:
            why = rundir.remove(self._ceph(), self.run, self._made_top)
            if why:
                import sys
                print(f"xcbench: warning: cephfs: {why}", file=sys.stderr)
            self.run, self._made_top = None, False

    def local(self, fs_path: str) -> Path:
        """Where ``fs_path`` (inside the run dir) is on the mount of the run dir."""
        root = self.run_root or ""
        if not fs_path.startswith(root + "/"):
            raise XcbError(f"cephfs: {fs_path} is not inside this run's {root}")
        return self.mountpoint / fs_path[len(root) + 1:]

    # ---- the interface ------------------------------------------------------------------
    def prepare(self, cell) -> Target:
        where = f"cell {cell.id}"
        if cell.layout is None or cell.pool is None:
            raise XcbError(f"{where}: backend cephfs needs a layout and a pool")
        s = Layout.of(cell.layout)
        s.check(self._ceph().osd_max_object_size(), where=where)
        pool = self._ceph().ensure_pool(cell.pool, cephfs=True)
        self._ensure_mounted()
        fs_path = f"{self.run_root}/{cell.id}-{secrets.token_hex(3)}"
        d = self.local(fs_path)
        d.mkdir()
        self._live.add(fs_path)
        try:
            value = s.xattr(self._ceph().rados().pool_lookup(pool))
            self._set_layout(d, value, f"{where}: layout: CephFS rejected ceph.dir.layout=\"{value}\" "
                             f"on {fs_path}")
            compare_layout(parse_layout(os.getxattr(d, "ceph.dir.layout")), s, pool, where)
            # no xrootd installed: fio probes still work; the gateway says what's missing
            own(d, xrootd_ids_if_any())
            d.chmod(0o755)
        except BaseException:
            self._remove(fs_path)
            if not self._live:
                self.close()
            raise
        return Target(cell_id=cell.id, backend=self.name, path=str(d), pool=pool, layout=cell.layout,
                      oss={"localroot": str(d)}, created=[f"cephfs:{fs_path}"],
                      info={"fs_name": self._ceph().fs_name, "fs_path": fs_path,
                            "mountpoint": str(self.mountpoint), "mount": self.mount_kind,
                            "mount_note": self.mount_note, "layout": value,
                            "mount_root": self.run_root})

    def verify(self, target: Target, gateway: Any = None) -> dict[str, Any]:
        """Write a file in the dir (through the mount: ``gateway`` is not needed); check its
        layout and where its data objects went."""
        where = f"cell {target.cell_id}"
        s = Layout.of(target.layout)
        assert target.path is not None and target.pool is not None  # prepare() sets both
        d = Path(target.path)
        f = d / f"{VERIFY_FILE}-{secrets.token_hex(6)}"
        # One full stripe: stripe_count objects of stripe_unit bytes each (capped).
        size = min(s.stripe_unit * s.stripe_count, VERIFY_MAX)
        try:
            # by the dir's owner (the xrootd user's: root never writes in it); fsync, else the
            # data may still sit in the client's cache
            write_as_owner(d, f.name, size, fsync=True)
            file_layout = parse_layout(os.getxattr(f, "ceph.file.layout", follow_symlinks=False))
            compare_layout(file_layout, s, target.pool, f"{where}: ceph.file.layout of {f}")
            ino = os.lstat(f).st_ino
            objects = self._stat_objects(target.pool, cephfs_objects(ino, size, s), where)
            # Nothing past the expected objects (a wrong stripe_count would put data there).
            extra = cephfs_oid(ino, len(objects))
            if self._stat(target.pool, extra) is not None:
                raise XcbError(f"{where}: stripe_count: object {extra} exists in {target.pool}, "
                               f"expected only {len(objects)} objects for {size} bytes")
            # CephFS keeps an empty "backtrace" object in the default data pool; data there
            # would mean the layout's pool was not used.
            default_pool = self._default_data_pool()
            backtrace = None
            if default_pool and default_pool != target.pool:
                backtrace = self._stat_if_readable(default_pool, cephfs_oid(ino, 0))
                if backtrace:
                    raise XcbError(f"{where}: pool: {backtrace} bytes of data landed in the default "
                                   f"data pool {default_pool}, not in {target.pool}")
        finally:
            remove_as_owner(f)
        return {"cell_id": target.cell_id, "backend": self.name, "path": str(d),
                "fs_path": target.info.get("fs_path"), "mount": target.info.get("mount"),
                "dir_layout": parse_layout(os.getxattr(d, "ceph.dir.layout")),
                "file_layout": file_layout, "inode": f"{ino:x}", "bytes": size,
                "pool": target.pool, "objects": objects, "default_data_pool": default_pool,
                "default_pool_backtrace_bytes": backtrace}

    def cleanup(self, target: Target) -> None:
        fs_path = target.info.get("fs_path", "")
        parts = fs_path.split("/")
        if len(parts) != 4 or parts[:2] != ["", TOP] or "" in parts[2:] or ".." in parts:
            raise XcbError(f"cell {target.cell_id}: cleanup: {fs_path!r} is not an xcbench cell dir")
        if self.mount_kind is None:  # a target of an earlier instance: mount its run dir
            if self.run is None:
                self.run = parts[2]
            self._ensure_mounted()
        self._remove(fs_path)
        if not self._live:
            self.close()

    def layout_evidence(self, target: Target) -> dict[str, Any] | None:
        """The layout CephFS reports on the cell's dir (ceph.dir.layout), else the cell's."""
        got = layout_xattrs(target.path) if target.path else None
        return got if got is not None else super().layout_evidence(target)

    @classmethod
    def findings(cls, cell_id: str, tunables: Mapping[str, Any],
                 facts: Mapping[str, Any]) -> list[dict]:
        return plain_gateway_findings(cell_id, tunables) + object_size_findings(cell_id, facts)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "fs_name": self.cluster.fs_name if self.cluster else None,
                "mount": self.mount_kind or ("kernel" if cmount.kernel_client_available() else "fuse"),
                "mount_note": self.mount_note}

    # ---- helpers ------------------------------------------------------------------------
    def _remove(self, fs_path: str) -> None:
        d = self.local(fs_path)
        if d.exists():
            remove_tree(d, check=True, what=f"cephfs {fs_path}")
        self._live.discard(fs_path)

    @staticmethod
    def _set_layout(d: Path, value: str, what: str) -> None:
        """setxattr, retrying EINVAL for a few seconds: a pool `fs add_data_pool` just added is
        refused until the MDS has the new FSMap (layouts were checked before, so a lasting
        EINVAL is Ceph's verdict)."""
        deadline = time.monotonic() + SETXATTR_RETRY
        while True:
            try:
                os.setxattr(d, "ceph.dir.layout", value.encode())
                return
            except OSError as e:
                if e.errno in (errno.EACCES, errno.EPERM):
                    raise XcbError(f"{what}: the key may not set layouts (missing the p of mds "
                                   "'allow rwp'; `xcbench cluster caps` prints the line)") from e
                if e.errno != errno.EINVAL or time.monotonic() > deadline:
                    raise XcbError(f"{what} ({errno.errorcode.get(e.errno or 0, e.errno)}: {e.strerror})") from e
                time.sleep(0.25)

    def _default_data_pool(self) -> str | None:
        for fs in self._ceph().mon_command("fs ls"):
            if fs.get("name") == self._ceph().fs_name:
                return (fs.get("data_pools") or [None])[0]
        return None

    def _stat(self, pool: str, oid: str) -> int | None:
        import rados
        io = self._ceph().ioctx(pool)
        try:
            size, _ = io.stat(oid)
            return int(size)
        except rados.ObjectNotFound:
            return None
        finally:
            io.close()

    def _stat_if_readable(self, pool: str, oid: str) -> int | None:
        """_stat, or None when the key may not read ``pool`` (a site's least-privilege key has
        no cap on the file system's default data pool)."""
        import rados
        try:
            return self._stat(pool, oid)
        except rados.PermissionError:
            return None

    def _stat_objects(self, pool: str, expected: dict[str, int], where: str) -> dict[str, int]:
        found = {}
        for oid, want in expected.items():
            got = self._stat(pool, oid)
            if got is None:
                raise XcbError(f"{where}: pool: data object {oid} is not in pool {pool}")
            if got != want:
                raise XcbError(f"{where}: layout: object {oid} in {pool} holds {got} bytes, "
                               f"the striping arithmetic says {want}")
            found[oid] = got
        return found
