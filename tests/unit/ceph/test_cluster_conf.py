"""ceph.conf parsing/checking/rendering, CEPH_ARGS, state dir and key generation (no cluster)."""

import base64
import struct

import pytest

from xcbench.ceph import conf as cephconf
from xcbench.ceph.bootstrap import (
    EXPECTED_WARNINGS,
    build_conf,
    gen_key,
    keyring_text,
    unexpected_checks,
)
from xcbench.ceph.cluster import default_state_dir, parse_ceph_args
from xcbench.errors import XcbError
from xcbench.system.ports import free_ports
from xcbench.system.proc import run


def test_parse_normalises_keys_and_strips_comments():
    s = cephconf.parse_conf("[global]\nmon host = 1.2.3.4  # the mon\nosd-pool_default size=1\n; c\n")
    assert s == {"global": {"mon_host": "1.2.3.4", "osd_pool_default_size": "1"}}


@pytest.mark.parametrize("text, what", [
    ("hello world\n", "line 1"),
    ("mon host = x\n[global]\n", "outside any [section]"),
])
def test_parse_garbage_names_line(text, what):
    with pytest.raises(XcbError, match="not a ceph.conf") as e:
        cephconf.parse_conf(text, source="x.conf")
    assert what in str(e.value) and "\n" not in str(e.value)


def test_check_conf_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.conf"
    with pytest.raises(XcbError, match=str(missing)):
        cephconf.check_conf(missing)
    binary = tmp_path / "bin.conf"
    binary.write_bytes(b"\x7fELF\x00\x01")
    with pytest.raises(XcbError, match="binary"):
        cephconf.check_conf(binary)
    nomon = tmp_path / "nomon.conf"
    nomon.write_text("[global]\nfsid = x\n")
    with pytest.raises(XcbError, match="no `mon host`"):
        cephconf.check_conf(nomon)
    with pytest.raises(XcbError, match="directory"):
        cephconf.check_conf(tmp_path)
    ok = tmp_path / "ok.conf"
    ok.write_text("[global]\n\tmon_host = [v2:127.0.0.1:3300]\n")
    assert cephconf.mon_host(cephconf.check_conf(ok)) == "[v2:127.0.0.1:3300]"


def test_built_conf_round_trips_and_has_the_small_cluster_settings(tmp_path):
    sections = build_conf(tmp_path, tmp_path / "run", "fsid-1", [4000, 4001], "memstore")
    parsed = cephconf.parse_conf(cephconf.render_conf(sections, header="hdr"))
    g = parsed["global"]
    assert g["mon_host"] == "[v2:127.0.0.1:4000,v1:127.0.0.1:4001]"
    assert g["osd_crush_chooseleaf_type"] == "0" and g["mon_allow_pool_size_one"] == "true"
    assert g["mon_debug_no_require_bluestore_for_ec_overwrites"] == "true"  # memstore only
    assert parsed["mon"]["paxos_propose_interval"] == "0.1"
    assert parsed["osd"]["osd_objectstore"] == "memstore"
    assert parsed["client"]["pid_file"] == ""
    blue = cephconf.parse_conf(cephconf.render_conf(build_conf(tmp_path, tmp_path, "f", [1, 2], "bluestore")))
    assert "mon_debug_no_require_bluestore_for_ec_overwrites" not in blue["global"]


def test_ceph_conf_accepts_the_rendered_conf(tmp_path):
    """The real ceph tooling parses what we render (ceph-conf is in ceph-common)."""
    conf = tmp_path / "ceph.conf"
    conf.write_text(cephconf.render_conf(build_conf(tmp_path, tmp_path / "run", "f", [4000, 4001], "bluestore")))
    out = run(["ceph-conf", "-c", conf, "-n", "mon.a", "paxos_propose_interval"], timeout=30)
    assert float(out.stdout) == pytest.approx(0.1)
    out = run(["ceph-conf", "-c", conf, "-n", "client.xcb-gw", "keyring"], timeout=30)
    assert out.stdout.strip() == str(tmp_path / "ceph.client.xcb-gw.keyring")


@pytest.mark.parametrize("text, want", [
    ("", {}),
    ("--id gw -c /x.conf", {"id": "gw", "conf": "/x.conf"}),
    ("--name=client.foo --keyring=/k", {"id": "foo", "keyring": "/k"}),
    ("-n client.bar --conf /c", {"id": "bar", "conf": "/c"}),
    ("--user u --debug-ms 1", {"id": "u"}),
])
def test_parse_ceph_args(text, want):
    assert parse_ceph_args(text) == want


def test_default_state_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("XCBENCH_HOME", raising=False)
    monkeypatch.delenv("XCBENCH_STATE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_state_dir() != tmp_path / ".xcbench" / "cluster"  # never the cwd unless asked
    from xcbench.system import statedir
    assert default_state_dir() == statedir.default_home() / "cluster"
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    assert default_state_dir() == tmp_path / "home" / "cluster"
    assert default_state_dir("rel") == tmp_path / "rel"


def test_gen_key_is_a_cephx_secret(tmp_path):
    key = gen_key()
    raw = base64.b64decode(key)
    assert len(raw) == 28 and struct.unpack("<H", raw[:2])[0] == 1 and struct.unpack("<H", raw[10:12])[0] == 16
    kr = tmp_path / "k"
    kr.write_text(keyring_text("client.x", key, {"mon": "allow r"}))
    listed = run(["ceph-authtool", "-l", kr], timeout=30).stdout
    assert key in listed and 'caps mon = "allow r"' in listed


def test_free_ports_distinct():
    a, b = free_ports(2)
    assert a != b and a > 1024


def test_health_classification():
    assert unexpected_checks({"status": "HEALTH_OK"}) == []
    assert unexpected_checks({"status": "HEALTH_WARN", "checks": {"MON_DISK_LOW": {}}}) == []
    assert unexpected_checks({"status": "HEALTH_WARN", "checks": {"OSD_DOWN": {}}}) == ["OSD_DOWN"]
    assert all(EXPECTED_WARNINGS.values())


def test_unescape_mountinfo():
    from xcbench.system.mounts import _unescape
    assert _unescape(r"/tmp/a\040b") == "/tmp/a b"
