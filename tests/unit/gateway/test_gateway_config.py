"""Rendered xrootd/cmsd configs: directives per backend, role and tunables (no process)."""

from __future__ import annotations

import pytest

from tests.support.gateway_config import lines, xrootd
from xcbench.backends.base import Target
from xcbench.errors import XcbError
from xcbench.gateway import effective_tunables, render_config, url_host_for
from xcbench.system.templates import render

RADOS_OSS = {"ceph_user": "xcbgw", "pool": "xcb-ec2-1", "nb_stripes": 4,
             "stripe_unit": 4 << 20, "object_size": 64 << 20}
SEL = "/xcbgw@xcb-ec2-1,4,4194304,67108864:"  # XrdCeph's selector of exactly those






@pytest.fixture
def tmpfs():
    return Target(cell_id="c1", backend="tmpfs", path="/mnt/t")


@pytest.fixture
def rados():
    return Target(cell_id="c2", backend="rados", pool="xcb-ec2-1", oss=dict(RADOS_OSS),
                  info={"name_prefix": SEL + "/xcb-rados/c2-a1b2c3/"})


def test_tmpfs_standalone(tmpfs):
    cfg = xrootd(tmpfs, allow_hosts=("localhost",))
    for want in ("all.export /", "oss.localroot /mnt/t", "xrd.port 1094",
                 "xrd.protocol XrdHttp:1094 libXrdHttp.so", "xrootd.chksum max 1024 adler32",
                 "http.exthandler xrdtpc libXrdHttpTPC.so", "xrd.allow host localhost",
                 "all.adminpath /run/x", "xrd.tls cert.pem key.pem"):
        assert want in cfg, want
    assert any(ln.startswith("ofs.tpc ") and " pgm " in ln and ln.endswith("--server") for ln in cfg)
    assert not any(ln.startswith(("all.role", "all.manager", "ofs.osslib", "xrootd.async",
                                  "xrd.buffers", "xrd.report")) for ln in cfg)


def test_rados_defaults_and_osslib(rados):
    cfg = xrootd(rados)
    assert ("ofs.osslib +cksio libXrdCeph.so xcbgw@xcb-ec2-1,4,4194304,67108864") in cfg
    assert "ofs.xattrlib libXrdCephXattr.so" in cfg
    assert "xrootd.async off" in cfg and "xrd.buffers maxbsz 16m" in cfg
    assert not any(ln.startswith("oss.localroot") for ln in cfg)


def test_rados_tunables_override(rados):
    cfg = xrootd(rados, tunables={"async": True, "cksio": False, "buffers_maxbsz": 32 << 20,
                                  "ceph": {"nbconnections": 8}}, report_addr="127.0.0.1:9931")
    assert "ofs.osslib libXrdCeph.so xcbgw@xcb-ec2-1,4,4194304,67108864" in cfg
    assert "xrootd.async off" not in cfg
    assert "xrd.buffers maxbsz 32m" in cfg
    assert "ceph.nbconnections 8" in cfg
    assert "xrd.report 127.0.0.1:9931 every 1s all" in cfg


def test_every_request_is_authorized_below_the_namespace(tmpfs, rados):
    """A POSIX export serves / below its localroot; XrdCeph the cell's object prefix only,
    exported and granted by the authdb (xcbench.gateway.authz)."""
    for target, ns in ((tmpfs, "/"), (rados, SEL + "/xcb-rados/c2-a1b2c3/")):
        cfg = xrootd(target, authdb="/run/x/authdb")
        assert [ln for ln in cfg if ln.startswith("all.export")] == [f"all.export {ns}"]
        assert "ofs.authorize 1" in cfg and "acc.authdb /run/x/authdb" in cfg
    sci = xrootd(rados, authdb="/run/x/authdb", security={"mode": "scitokens", "cadir": "/c",
                                                           "scitokens": "/run/x/sci.cfg"})
    assert "ofs.authorize 1" in sci and not any(ln.startswith("acc.authdb") for ln in sci)


def test_a_rados_target_without_its_prefix_is_refused():
    t = Target(cell_id="c4", backend="rados", oss=dict(RADOS_OSS))
    other = "/xcbgw@victim,4,4194304,67108864:"
    for info in ({}, {"name_prefix": "/"}, {"name_prefix": "/xcb-rados/c4-a1b2c3/"},
                 {"name_prefix": SEL}, {"name_prefix": SEL + "/xcb-rados/"},
                 {"name_prefix": SEL + "/xcb-rados/p@ool:x/"}, {"name_prefix": SEL + "/xcb-rados/c4"},
                 {"name_prefix": other + "/xcb-rados/c4-a1b2c3/"}):
        t.info = info
        with pytest.raises(XcbError, match="c4: name_prefix: "):
            xrootd(t)


def test_rados_target_must_carry_striper_params():
    t = Target(cell_id="c3", backend="rados", oss={"ceph_user": "u", "pool": "p"})
    with pytest.raises(XcbError, match="c3.*nb_stripes"):
        xrootd(t)


def test_manager_and_server_roles(tmpfs):
    mgr = xrootd(tmpfs, role="manager", manager="127.0.0.1:2131")
    assert "all.role manager" in mgr and "all.manager 127.0.0.1:2131" in mgr
    assert "xrootd.chksum max 1024 adler32" in mgr  # checksum queries through the redirector
    assert not any(ln.startswith(("oss.localroot", "ofs.tpc")) for ln in mgr)
    srv = xrootd(tmpfs, role="server", manager="127.0.0.1:2131", localroot="/mnt/t/origin-1")
    assert "all.role server" in srv and "oss.localroot /mnt/t/origin-1" in srv


def test_cmsd_configs(tmpfs, rados):
    mgr = lines(render_config("cmsd", role="manager", name="mgr", target=tmpfs, port=2131,
                              adminpath="/run/x", manager="127.0.0.1:2131", origins=3))
    assert "cms.delay servers 3 startup 1 lookup 1 qdl 1" in mgr
    assert "cms.space min 16m 32m" in mgr and "xrd.port 2131" in mgr
    assert not any(ln.startswith(("xrd.protocol", "cms.dfs")) for ln in mgr)
    srv = lines(render_config("cmsd", role="server", name="o1", target=rados, port=2132,
                              adminpath="/run/x", manager="127.0.0.1:2131"))
    assert "cms.dfs lookup distrib redirect immed" in srv  # every origin sees the same pool
    assert any(ln.startswith("ofs.osslib +cksio libXrdCeph.so") for ln in srv)


def test_tunables_validation():
    assert effective_tunables("tmpfs", {}) == {"ceph": {}}
    assert effective_tunables("rados", {"async": True})["async"] is True
    assert effective_tunables("rados", {})["buffers_maxbsz"] == 16 << 20
    with pytest.raises(XcbError, match="unknown key 'asynch'"):
        effective_tunables("rados", {"asynch": False})
    with pytest.raises(XcbError, match="ceph"):
        effective_tunables("rados", {"ceph": ["nbconnections", 2]})


def test_templates_strict_undefined():
    with pytest.raises(XcbError, match="cmsd.cfg.j2: 'role' is undefined"):
        render("xcbench.xrootd_configs", "cmsd.cfg.j2", name="x")
    with pytest.raises(XcbError, match="not found"):
        render("xcbench.xrootd_configs", "nope.cfg.j2")


def test_url_host():
    assert url_host_for("10.1.2.3") == "10.1.2.3"
    assert url_host_for("127.0.0.1") in ("localhost", "127.0.0.1")
