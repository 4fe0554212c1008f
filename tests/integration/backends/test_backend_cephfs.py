"""The cephfs backend on a real cluster: layout dirs on the ceph-fuse mount, where the data
objects land, uploads through a plain xrootd gateway exporting the layout dir, cleanup."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from xcbench.backends.cephfs import BACKEND  # noqa: F401 - the conftest backend fixture
from xcbench.backends.cephfs.backend import TOP
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.cell.layout import cephfs_objects, parse_xattr
from xcbench.errors import XcbError
from xcbench.system import proc

pytestmark = pytest.mark.integration
K, M = 1 << 10, 1 << 20
REP = PoolSpec("replicated", size=1)
EC = PoolSpec("erasure", k=2, m=1)


def cell(ident: str, layout: Layout, pool: PoolSpec) -> Cell:
    return Cell(id=f"bk-{ident}", label=f"backends test {ident}", backend="cephfs",
                layout=layout, pool=pool)


def getfattr(path: Path, name: str) -> dict:
    out = proc.run(["getfattr", "--only-values", "-n", name, path]).stdout
    return parse_xattr(out)


def wait_gone(io, oids, timeout=60.0) -> list[str]:
    """CephFS deletes data objects asynchronously (the MDS purge queue): wait for it."""
    import rados
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for oid in oids:
            try:
                io.stat(oid)
                left.append(oid)
            except rados.ObjectNotFound:
                pass
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


@pytest.mark.parametrize("ident,layout,pool", [
    ("rep-1m-2-4m", Layout(1 * M, 2, 4 * M), REP),
    ("ec-64k-4-256k", Layout(64 * K, 4, 256 * K), EC),
])
def test_layout_dir_objects_and_cleanup(ceph_cluster, backend, ident, layout, pool):
    target = backend.prepare(cell(ident, layout, pool))
    d = Path(target.path)
    try:
        assert target.pool == pool.name and target.info["mount"] in ("fuse", "kernel")
        # the mount's root is the run's own dir /xcbench/<run>, never the file system's root
        assert d.parent == backend.mountpoint and backend.run_root.startswith(f"/{TOP}/")
        assert target.info["fs_path"] == f"{backend.run_root}/{d.name}"
        assert target.info["mount_root"] == backend.run_root
        want = {"stripe_unit": layout.stripe_unit, "stripe_count": layout.stripe_count,
                "object_size": layout.object_size, "pool": pool.name}
        assert {k: v for k, v in getfattr(d, "ceph.dir.layout").items() if k in want} == want
        assert d.stat().st_uid == proc_uid("xrootd")

        evidence = backend.verify(target)
        assert evidence["file_layout"]["pool"] == pool.name
        assert len(evidence["objects"]) == layout.stripe_count
        # the default data pool holds at most the empty backtrace object, never data
        assert evidence["default_data_pool"] != pool.name
        assert evidence["default_pool_backtrace_bytes"] in (0, None)

        # A file written here by hand: getfattr shows the layout, objects are in the pool.
        f = d / "by-hand"
        data = os.urandom(3 * layout.stripe_unit * layout.stripe_count + 12345)
        with open(f, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        assert {k: v for k, v in getfattr(f, "ceph.file.layout").items() if k in want} == want
        expected = cephfs_objects(f.stat().st_ino, len(data), layout)
        with ceph_cluster.ioctx(pool.name) as io:
            assert {oid: io.stat(oid)[0] for oid in expected} == expected
    finally:
        backend.cleanup(target)
    assert not d.exists()
    with ceph_cluster.ioctx(pool.name) as io:
        assert wait_gone(io, list(expected)) == []


def proc_uid(user: str) -> int:
    import pwd
    return pwd.getpwnam(user).pw_uid


def test_rejects_bad_layouts_before_touching_the_fs(backend):
    with pytest.raises(XcbError, match="object_size: .*osd_max_object_size"):
        backend.prepare(cell("too-big", Layout(4 * M, 1, 1 << 30), REP))
    with pytest.raises(XcbError, match="stripe_unit: 100000"):
        backend.prepare(cell("bad-su", Layout(100000, 1, 400000), REP))


def test_cleanup_removes_only_its_own_dir(backend):
    a = backend.prepare(cell("keep-a", Layout(4 * M, 1, 4 * M), REP))
    b = backend.prepare(cell("keep-b", Layout(4 * M, 1, 4 * M), REP))
    try:
        (Path(a.path) / "f").write_bytes(b"x")
        backend.cleanup(b)
        assert Path(a.path, "f").read_bytes() == b"x" and not Path(b.path).exists()
    finally:
        backend.cleanup(a)
    assert not Path(a.path).exists()


# ---- through a gateway ------------------------------------------------------------------
def test_uploads_through_gateway(backend, workdir):
    gateway = pytest.importorskip("xcbench.gateway")
    from tests.support.gwcheck import upload_and_verify
    layout = Layout(1 * M, 2, 4 * M)
    target = backend.prepare(cell("gw", layout, REP))
    try:
        with gateway.start_gateway(target, workdir=workdir / "gw", cluster=backend.cluster,
                                   procs=backend.procs) as gw:
            # xrdcp, gfal2 (root:// works on a POSIX export) and HTTP PUT; read back; adler32
            ev = upload_and_verify(gw, "cephfs", workdir / "gwcheck", size=9 * M + 777)
            assert ev["gfal2_scheme"] == "root"
            for name in ev["names"].values():
                f = Path(target.path) / name
                assert f.stat().st_size == 9 * M + 777  # on the mount, in the cell's dir
                lay = getfattr(f, "ceph.file.layout")
                assert (lay["stripe_unit"], lay["stripe_count"], lay["pool"]) == (1 * M, 2, REP.name)
                objs = cephfs_objects(f.stat().st_ino, ev["size"], layout)
                with backend.cluster.ioctx(REP.name) as io:
                    assert {oid: io.stat(oid)[0] for oid in objs} == objs
    finally:
        backend.cleanup(target)
    assert not Path(target.path).exists()
