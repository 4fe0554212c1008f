"""The rados backend on a real cluster: files through an XrdCeph gateway become the RADOS
objects the striping arithmetic predicts; xrdcp, gfal2 (http) and HTTP PUT uploads read back
with the right adler32; cleanup removes exactly the cell's objects."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.gwcheck import adler32_hex
from xcbench.backends.rados import BACKEND, objects  # noqa: F401 - BACKEND: conftest backend fixture
from xcbench.backends.rados.backend import object_name
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.cell.layout import striper_objects
from xcbench.errors import XcbError
from xcbench.system import proc

pytestmark = pytest.mark.integration
M = 1 << 20
REP = PoolSpec("replicated", size=1)
EC = PoolSpec("erasure", k=2, m=1)


def cell(ident: str, layout: Layout, pool: PoolSpec = REP) -> Cell:
    return Cell(id=f"bk-{ident}", label=f"backends test {ident}", backend="rados",
                layout=layout, pool=pool)


def test_prepare_gives_xrdceph_params(ceph_cluster, backend):
    t = backend.prepare(cell("params", Layout(1 * M, 4, 4 * M), EC))
    assert t.oss == {"ceph_user": ceph_cluster.gateway_id, "pool": EC.name, "nb_stripes": 4,
                     "stripe_unit": 1 * M, "object_size": 4 * M}
    assert t.info["object_prefix"].startswith("/xcb-rados/bk-params-")
    # XrdCeph's selector of the gateway's own parameters, then the cell's objects
    assert t.info["name_prefix"] == (f"/{ceph_cluster.gateway_id}@{EC.name},4,{1 * M},{4 * M}:"
                                     + t.info["object_prefix"])
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
            assert out.stdout.replace("\0", " ").split()[-1] == adler32_hex(data)
        expected = striper_objects(object_name(path), len(data), layout)
        assert len(expected) == count
        with ceph_cluster.ioctx(pool.name) as io:
            listed = objects.list_prefix(io, target.info["object_prefix"])
            assert listed == sorted(expected)
            assert {oid: objects.stat(io, oid) for oid in listed} == expected
            attrs = objects.xattrs(io, listed[0])
            assert objects.striper_meta(attrs)["striper.size"] == len(data)
            assert objects.checksums(attrs)["adler32"] == adler32_hex(data)
    finally:
        backend.cleanup(target)
    with ceph_cluster.ioctx(pool.name) as io:
        assert objects.list_prefix(io, target.info["object_prefix"]) == []
    assert target.info["removed"] == count


def test_uploads_read_back_with_adler32(ceph_cluster, backend, gateway_mod, workdir):
    from tests.support.gwcheck import upload_and_verify
    layout = Layout(4 * M, 1, 4 * M)
    target = backend.prepare(cell("clients", layout))
    other = backend.prepare(cell("other", layout))  # must survive target's cleanup
    size = 6 * M + 4321
    try:
        with gateway_mod.start_gateway(target, workdir=workdir / "gw-clients", cluster=ceph_cluster,
                                       procs=backend.procs) as gw:
            assert gw.client_env.get("XRD_CPUSEPGWRTRD") == "0"
            # xrdcp, gfal2 over http:// (root:// fails: XrdCeph refuses gfal2's fchmod), HTTP PUT
            ev = upload_and_verify(gw, "rados", workdir / "gwcheck", size=size,
                                   prefix=target.info["name_prefix"].strip("/") + "/gw")
            assert ev["gfal2_scheme"] == "http"
        # another cell's objects (its gateway serves only its prefix: written here directly)
        subprocess.run(["rados", *ceph_cluster.ceph_cli("--striper", "-p", REP.name, "put",
                                                        other.info["object_prefix"] + "keep",
                                                        workdir / "gwcheck" / "src.bin")[1:]],
                       check=True, capture_output=True, timeout=120)
        s = layout
        with ceph_cluster.ioctx(REP.name) as io:
            for name in ev["names"].values():
                name = object_name("/" + name)
                expected = striper_objects(name, size, s)  # 4M + 2M+
                assert {oid: objects.stat(io, oid) for oid in expected} == expected
                assert objects.checksums(objects.xattrs(io, name + ".0000000000000000")) \
                    == {"adler32": ev["adler32"]}
            assert len(objects.list_prefix(io, target.info["object_prefix"])) == 3 * len(expected)
        backend.cleanup(target)
        with ceph_cluster.ioctx(REP.name) as io:
            assert objects.list_prefix(io, target.info["object_prefix"]) == []
            assert len(objects.list_prefix(io, other.info["object_prefix"])) == 2
    finally:
        backend.cleanup(target)
        backend.cleanup(other)
    with ceph_cluster.ioctx(REP.name) as io:
        assert objects.list_prefix(io, other.info["object_prefix"]) == []


def test_a_session_without_gateway_verifies_through_its_own(ceph_cluster, workdir):
    from xcbench.run.session import CellSession
    K = 1 << 10
    layout = Layout(64 * K, 3, 128 * K)
    procs = proc.ProcessSet()
    with CellSession(cell("own-gw", layout, EC), cluster=ceph_cluster, workdir=workdir / "own-gw",
                     procs=procs, gateway=False) as s:
        with pytest.raises(XcbError, match="checked through its gateway"):
            s.backend.verify(s.target)  # the backend itself never starts a gateway
        ev = s.verify()  # the session starts and stops one for the check
        # 64K*3 + 32K + 1 bytes: units 0,1,2 on objects 0,1,2; the rest on object 0, row 2
        assert list(ev["objects"].values()) == [64 * K + 32 * K + 1, 64 * K, 64 * K]
        assert ev["striper"]["striper.size"] == ev["bytes"] and ev["checksums"]["adler32"] == ev["adler32"]
        assert not [p for p in procs._procs if p.alive()]  # the check's gateway is gone
        prefix = s.target.info["object_prefix"]
    with ceph_cluster.ioctx(EC.name) as io:
        assert objects.list_prefix(io, prefix) == []


def test_verify_names_the_field_that_differs(ceph_cluster, backend, gateway_mod, workdir):
    from dataclasses import replace

    from xcbench.errors import XcbError
    target = backend.prepare(cell("mismatch", Layout(1 * M, 2, 2 * M)))
    try:
        with gateway_mod.start_gateway(target, workdir=workdir / "gw-mismatch", cluster=ceph_cluster,
                                       procs=backend.procs) as gw:
            # the gateway writes with 1M,2,2M: targets claiming otherwise are caught, field named
            for layout, field in [(Layout(1 * M, 4, 2 * M), "nb_stripes"),
                                  (Layout(2 * M, 2, 2 * M), "stripe_unit"),
                                  (Layout(1 * M, 2, 4 * M), "object_size")]:
                with pytest.raises(XcbError, match=rf"^cell bk-mismatch: {field}: "):
                    backend.verify(replace(target, layout=layout), gateway=gw)
            assert backend.verify(target, gateway=gw)["objects"]
    finally:
        backend.cleanup(target)


@pytest.mark.parametrize("pool", [REP, EC], ids=["replicated", "ec2+1"])
def test_a_file_written_through_xrdceph_reads_back_whole(ceph_cluster, backend, gateway_mod, workdir, pool):
    """Write, then read back through the same XrdCeph gateway with xrdcp: the bytes and their
    adler32 are the ones written, and the gateway is still up (a pgread, which 5.5 clients use
    by default, kills XrdCeph: the gateway's client_env turns it off, XRD_CPUSEPGWRTRD=0)."""
    from tests.support.gwcheck import make_file, xrdcp_get, xrdcp_put
    layout = Layout(1 * M, 2, 2 * M)  # striped: the read gathers units from several objects
    target = backend.prepare(cell(f"readback-{pool.name}", layout, pool))
    size = 9 * M + 12345
    try:
        with gateway_mod.start_gateway(target, workdir=workdir / f"gw-readback-{pool.name}",
                                       cluster=ceph_cluster, procs=backend.procs) as gw:
            assert gw.client_env.get("XRD_CPUSEPGWRTRD") == "0"
            data = make_file(workdir / f"readback-{pool.name}.src", size, seed=23)
            name = target.info["name_prefix"] + "readback"
            xrdcp_put(gw, workdir / f"readback-{pool.name}.src", name)
            back = xrdcp_get(gw, name, workdir / f"readback-{pool.name}.got")
            assert len(back) == size and adler32_hex(back) == adler32_hex(data)
            assert back == data
            out = proc.run(["xrdfs", gw.root_url, "query", "checksum", name], env=gw.client_env)
            assert out.stdout.replace("\0", " ").split()[-1] == adler32_hex(data)
            assert all(s.proc.alive() for s in gw.servers), "the gateway died on the read"
    finally:
        backend.cleanup(target)
