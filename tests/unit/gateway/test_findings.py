"""Known-bad gateway configurations become FINDING rows; nothing is refused."""

from __future__ import annotations

from xcbench.backends.base import Target, backend_class
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.gateway import effective_tunables
from xcbench.gateway.misconfig import findings_for, gateway_findings
from xcbench.store.tables import FINDING


def whats(rows):
    return {r["what"] for r in rows}


def test_rows_have_the_finding_columns():
    rows = gateway_findings("c", backend_class("rados"), tunables={"async": True}, bind="0.0.0.0")
    assert rows and all(tuple(r) == FINDING for r in rows)
    assert all(r["cell_id"] == "c" and r["severity"] in ("info", "warning", "error") for r in rows)


def test_clean_tmpfs_on_loopback_has_none():
    assert gateway_findings("c", backend_class("tmpfs"), tunables={}, bind="127.0.0.1") == []
    assert gateway_findings("c", backend_class("cephfs"), tunables={}, bind="127.0.0.1",
                            object_size=4 << 20, osd_max_object_size=128 << 20) == []


def test_rados_defaults_only_carry_the_mitigated_pgread_note():
    rows = gateway_findings("c", backend_class("rados"), tunables=effective_tunables("rados", {}))
    assert [r["severity"] for r in rows] == ["info"]
    assert "pgread" in rows[0]["what"] and "XRD_CPUSEPGWRTRD=0" in rows[0]["fix"]


def test_xrdceph_async_on_and_no_cksio():
    rows = gateway_findings("c", backend_class("rados"), tunables={"async": True, "cksio": False})
    got = {r["what"]: r for r in rows}
    assert "XrdCeph with xrootd.async on" in got
    assert got["XrdCeph without +cksio"]["severity"] == "error"
    assert gateway_findings("c", backend_class("rados"), tunables={}) != []  # async unset = xrootd's default: on


def test_small_buffers_with_async_off():
    rows = gateway_findings("c", backend_class("rados"), tunables={"async": False, "buffers_maxbsz": 4 << 20})
    assert "XrdCeph with xrd.buffers maxbsz 4M" in whats(rows)


def test_object_size_above_osd_max():
    rows = gateway_findings("c", backend_class("cephfs"), object_size=256 << 20, osd_max_object_size=128 << 20)
    assert [r["what"] for r in rows] == ["object_size 256M above osd_max_object_size 128M"]
    assert rows[0]["severity"] == "error"
    assert gateway_findings("c", backend_class("tmpfs"), object_size=256 << 20, osd_max_object_size=1) == []


def test_gfal2_root_into_xrdceph():
    rows = gateway_findings("c", backend_class("rados"), tunables={"async": False}, client="gfal2", mode="push")
    assert "gfal2 over root:// into XrdCeph" in whats(rows)
    rows = gateway_findings("c", backend_class("rados"), tunables={"async": False}, client="xrootd", mode="push")
    assert "gfal2 over root:// into XrdCeph" not in whats(rows)


def test_root_tpc_into_xrdceph():
    rows = gateway_findings("c", backend_class("rados"), tunables={"async": False}, mode="tpc-root")
    assert "root TPC into XrdCeph" in whats(rows)
    assert "root TPC into XrdCeph" not in whats(gateway_findings("c", backend_class("rados"), mode="tpc-http"))
    assert whats(gateway_findings("c", backend_class("tmpfs"), mode="tpc-root")) == {
        "root TPC completion is polled every 2.5 s"}


def test_origins_with_separate_storage():
    assert any("cmsd redirector" in w for w in whats(gateway_findings("c", backend_class("tmpfs"), origins=2)))
    assert not any("cmsd redirector" in w
                   for w in whats(gateway_findings("c", backend_class("rados"), tunables={"async": False}, origins=2)))


def test_findings_for_cell_and_target():
    cell = Cell(id="abc", label="x", backend="rados", layout=Layout(4 << 20, 1, 256 << 20),
                pool=PoolSpec("replicated"), campaign={"client": "gfal2"})
    target = Target(cell_id="abc", backend="rados", layout=cell.layout,
                    oss={"object_size": 256 << 20})
    rows = findings_for(cell, target, effective_tunables("rados", {}), bind="127.0.0.1",
                        osd_max_object_size=128 << 20)
    assert {r["cell_id"] for r in rows} == {"abc"}
    assert "gfal2 over root:// into XrdCeph" in whats(rows)
    assert any(w.startswith("object_size 256M") for w in whats(rows))
    # no cell: the target alone is enough
    rows = findings_for(None, Target(cell_id="t", backend="tmpfs"),
                        {}, bind="127.0.0.1", origins=2)
    assert {r["cell_id"] for r in rows} == {"t"} and any("cmsd redirector" in w for w in whats(rows))


def test_large_buffers_warn_of_pgread_crashes_on_plain_gateways_too():
    rows = gateway_findings("c", backend_class("tmpfs"), tunables={"buffers_maxbsz": 16 << 20}, bind="127.0.0.1")
    assert whats(rows) == {"pgread clients with xrd.buffers maxbsz 16M"}
    assert rows[0]["severity"] == "warning" and "XRD_CPUSEPGWRTRD=0" in rows[0]["fix"]
    assert gateway_findings("c", backend_class("tmpfs"), tunables={"buffers_maxbsz": 2 << 20}, bind="127.0.0.1") == []
