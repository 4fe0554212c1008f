"""The rados backend on a real cluster: files through an XrdCeph gateway become the RADOS
objects the striping arithmetic predicts; xrdcp, gfal2 (http) and HTTP PUT uploads read back
with the right adler32; cleanup removes exactly the cell's objects."""

from __future__ import annotations

import os
import shutil
import tempfile
import zlib
from pathlib import Path

import pytest
from xcbench.backends.rados import BACKEND, objects
from xcbench.backends.rados.striping import Striping, striper_objects

from xcbench import proc
from xcbench.cell import Cell, Layout, PoolSpec

pytestmark = pytest.mark.integration
M = 1 << 20
REP = PoolSpec("replicated", size=1)
EC = PoolSpec("erasure", k=2, m=1)


def cell(ident: str, layout: Layout, pool: PoolSpec = REP) -> Cell:
    return Cell(id=f"bk-{ident}", label=f"backends test {ident}", backend="rados",
                layout=layout, pool=pool)


def adler(data: bytes) -> str:
    return f"{zlib.adler32(data):08x}"


@pytest.fixture(scope="module")
def workdir():
    d = Path(tempfile.mkdtemp(prefix="xcb-test-rados-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def backend(ceph_cluster, workdir):
    procs = proc.ProcessSet()
    yield BACKEND(ceph_cluster, workdir, procs)
    procs.stop_all()


@pytest.fixture(scope="module")
def gateway_mod():
    return pytest.importorskip("xcbench.gateway")


def test_prepare_gives_xrdceph_params(ceph_cluster, backend):
    t = backend.prepare(cell("params", Layout(1 * M, 4, 4 * M), EC))
    assert t.oss == {"ceph_user": ceph_cluster.gateway_id, "pool": EC.name, "nb_stripes": 4,
                     "stripe_unit": 1 * M, "object_size": 4 * M}
    assert t.info["name_prefix"].startswith("/xcb-rados/bk-params-")
    backend.cleanup(t)  # nothing written: a no-op


@pytest.mark.parametrize("ident,layout,pool,count", [
    ("1x4m", Layout(4 * M, 1, 4 * M), REP, 3),   # 4M + 4M + 2M
    ("4x1m", Layout(1 * M, 4, 4 * M), EC, 4),    # 10 units round-robin: 3M 3M 2M 2M
])
def test_object_count_and_cleanup(ceph_cluster, backend, gateway_mod, workdir, ident, layout,
                                  pool, count):
    target = backend.prepare(cell(ident, layout, pool))
    data = os.urandom(10 * M)
    src = workdir / f"{ident}.bin"
    src.write_bytes(data)
    path = target.info["name_prefix"] + "ten-mib"
    try:
        with gateway_mod.start_gateway(target, workdir=workdir / f"gw-{ident}",
                                       cluster=ceph_cluster, procs=backend.procs) as gw:
            evidence = backend.verify(target, gateway=gw)
            assert evidence["adler32"] and evidence["striper"]["striper.layout.stripe_count"] == \
                layout.stripe_count
            proc.run(["xrdcp", "-f", "-s", src, gw.url(path)], env=gw.client_env)
            out = proc.run(["xrdfs", gw.root_url, "query", "checksum", path], env=gw.client_env)
            assert out.stdout.replace("\0", " ").split()[-1] == adler(data)
        expected = striper_objects(path, len(data), Striping.of(layout))
        assert len(expected) == count
        with ceph_cluster.ioctx(pool.name) as io:
            listed = objects.list_prefix(io, target.info["object_prefix"])
            assert listed == sorted(expected)
            assert {oid: objects.stat(io, oid) for oid in listed} == expected
            attrs = objects.xattrs(io, listed[0])
            assert objects.striper_meta(attrs)["striper.size"] == len(data)
            assert objects.checksums(attrs)["adler32"] == adler(data)
    finally:
        backend.cleanup(target)
    with ceph_cluster.ioctx(pool.name) as io:
        assert objects.list_prefix(io, target.info["object_prefix"]) == []
    assert target.info["removed"] == count


def test_uploads_read_back_with_adler32(ceph_cluster, backend, gateway_mod, workdir):
    requests = pytest.importorskip("requests")
    gfal2 = pytest.importorskip("gfal2")
    layout = Layout(4 * M, 1, 4 * M)
    target = backend.prepare(cell("clients", layout))
    other = backend.prepare(cell("other", layout))  # must survive target's cleanup
    data = os.urandom(6 * M + 4321)
    src = workdir / "clients.bin"
    src.write_bytes(data)
    prefix = target.info["name_prefix"]
    try:
        with gateway_mod.start_gateway(target, workdir=workdir / "gw-clients", cluster=ceph_cluster,
                                       procs=backend.procs) as gw:
            env = gw.client_env
            assert env.get("XRD_CPUSEPGWRTRD") == "0"
            proc.run(["xrdcp", "-f", "-s", src, gw.url(prefix + "by-xrdcp")], env=env)
            proc.run(["xrdcp", "-f", "-s", src, gw.url(other.info["name_prefix"] + "keep")], env=env)
            # gfal2 over http:// (root:// fails on XrdCeph: it refuses the fchmod gfal2 does)
            ctx = gfal2.creat_context()
            params = ctx.transfer_parameters()
            params.overwrite = True
            params.set_checksum(gfal2.checksum_mode.both, "adler32", adler(data))
            ctx.filecopy(params, f"file://{src}", gw.url(prefix + "by-gfal", scheme="http"))
            r = requests.put(gw.url(prefix + "by-put", scheme="http"), data=data, timeout=60)
            assert r.status_code in (200, 201), r.text
            for name in ("by-xrdcp", "by-gfal", "by-put"):
                out = proc.run(["xrdfs", gw.root_url, "query", "checksum", prefix + name], env=env)
                assert out.stdout.replace("\0", " ").split()[-1] == adler(data), name
                back = proc.run(["xrdcp", "-f", "-s", gw.url(prefix + name), "-"], env=env,
                                text=False).stdout
                assert back == data, name
            got = requests.get(gw.url(prefix + "by-put", scheme="http"), timeout=60,
                               headers={"Want-Digest": "adler32"})
            assert got.content == data
            assert got.headers.get("Digest", "").lower() == f"adler32={adler(data)}"
        backend.cleanup(target)
        with ceph_cluster.ioctx(REP.name) as io:
            assert objects.list_prefix(io, target.info["object_prefix"]) == []
            assert len(objects.list_prefix(io, other.info["object_prefix"])) == 2
    finally:
        backend.cleanup(target)
        backend.cleanup(other)
    with ceph_cluster.ioctx(REP.name) as io:
        assert objects.list_prefix(io, other.info["object_prefix"]) == []
