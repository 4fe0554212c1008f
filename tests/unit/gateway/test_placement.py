"""Where a gateway's daemons go on an inventory's hosts, and what is refused before any start."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from xcbench.backends.base import Target
from xcbench.ceph.bootstrap import build_conf, check_addr
from xcbench.errors import XcbError
from xcbench.gateway import placement
from xcbench.hosts import local_inventory, parse_inventory
from xcbench.network.addressing import report_host

BRIDGE = {"name": "xcbt0", "address": "10.77.0.1/24"}


def inv(**hosts):
    return parse_inventory({"bridge": BRIDGE, "hosts": hosts}, "hosts.yaml")


def gw(addr, roles=("gateway",), transport="netns", **kw):
    return {"roles": list(roles), "transport": transport, "address": addr, **kw}


TMPFS = Target(cell_id="c1", backend="tmpfs", path="/tmp/x")
RADOS = Target(cell_id="c2", backend="rados", pool="p",
               oss={"ceph_user": "u", "pool": "p", "nb_stripes": 1, "stripe_unit": 1 << 22,
                    "object_size": 1 << 22})


def test_no_or_local_inventory_keeps_the_local_path():
    assert not placement.is_placed(None)
    assert not placement.is_placed(local_inventory())
    assert placement.is_placed(inv(g1=gw("10.77.0.21")))
    assert report_host(None) == report_host(local_inventory()) == "127.0.0.1"


def test_origins_round_robin_and_redirector_host():
    i = inv(g1=gw("10.77.0.21"), g2=gw("10.77.0.22"), r=gw("10.77.0.30", roles=["redirector"]),
            c1=gw("10.77.0.11", roles=["client"]))
    p = placement.plan(i, TMPFS, None, 3, None)
    assert p.front.host.name == "r"
    assert [s.host.name for s in p.origins] == ["g1", "g2", "g1"]
    assert [p.slot("server", k).addr for k in (1, 2, 3)] == ["10.77.0.21", "10.77.0.22", "10.77.0.21"]
    assert p.slot("manager", 0) is p.front
    # every host of the inventory (clients too) and the bridge may connect; nothing else
    assert set(p.allow) == {"localhost", "10.77.0.1", "10.77.0.11", "10.77.0.21", "10.77.0.22",
                            "10.77.0.30"}
    one = placement.plan(i, TMPFS, None, 1, None)  # one origin: a standalone on the first gateway
    assert one.front.host.name == "g1" and [s.host.name for s in one.origins] == ["g1"]
    assert report_host(i) == "10.77.0.1"


def test_no_gateway_host_is_refused():
    with pytest.raises(XcbError, match="hosts.yaml: no host has the role gateway"):
        placement.plan(inv(c1=gw("10.77.0.11", roles=["client"])), TMPFS, None, 1, None)


def test_ssh_gateway_host_goes_through_agents_and_cephfs_is_refused_in_one_line():
    i = inv(g1=gw("10.77.0.21"), g2=gw("10.0.0.5", transport="ssh", ssh="g2"))
    # tmpfs and rados: the gateway agent makes there what the daemons read
    assert [s.host.name for s in placement.plan(i, TMPFS, None, 2, None).origins] == ["g1", "g2"]
    assert placement.uses_agents(i, 2) and not placement.uses_agents(i, 1)  # 1: only g1 is used
    assert not placement.uses_agents(inv(g1=gw("10.77.0.21")), 2)
    assert not placement.uses_agents(None, 1)
    cephfs = Target(cell_id="c3", backend="cephfs", path="/mnt/x")
    with pytest.raises(XcbError, match=r"^hosts.yaml: host g2: transport ssh: a cephfs gateway "
                                       r"\(cell c3\) runs on local and netns hosts only: the "
                                       r"CephFS layout dir is made") as e:
        placement.plan(i, cephfs, None, 2, None)
    assert "\n" not in str(e.value)


def test_reports_to_a_netns_host_loopback_are_refused():
    i = inv(g1=gw("10.77.0.21"))
    with pytest.raises(XcbError, match=r"host g1: xrd.report to 127.0.0.1:9931 would stay on"):
        placement.plan(i, TMPFS, None, 1, None, "127.0.0.1:9931")
    placement.plan(i, TMPFS, None, 1, None, "10.77.0.1:9931")


def test_wildcard_bind_is_refused_with_hosts():
    with pytest.raises(XcbError, match="cell c1: gateway.bind: 0.0.0.0 with gateway hosts"):
        placement.plan(inv(g1=gw("10.77.0.21")), TMPFS, None, 1, "0.0.0.0")


def test_a_loopback_cluster_is_refused_for_ceph_gateways_on_netns_hosts():
    i = inv(g1=gw("10.77.0.21"))
    lo = SimpleNamespace(info={"mon_host": "[v2:127.0.0.1:3300,v1:127.0.0.1:6789]"})
    with pytest.raises(XcbError, match="host g1: the Ceph cluster listens on loopback only"):
        placement.plan(i, RADOS, lo, 1, None)
    bridged = SimpleNamespace(info={"mon_host": "[v2:10.77.0.1:3300,v1:10.77.0.1:6789]"})
    assert placement.plan(i, RADOS, bridged, 1, None).front.addr == "10.77.0.21"
    placement.plan(i, TMPFS, lo, 1, None)  # no Ceph client in the gateway: fine


@pytest.mark.parametrize("mon,addrs", [
    ("[v2:10.77.0.1:3300,v1:10.77.0.1:6789]", ["10.77.0.1", "10.77.0.1"]),
    ("127.0.0.1:6789", ["127.0.0.1"]),
    ("a.example:6789, b.example", ["a.example", "b.example"]),
])
def test_mon_addresses(mon, addrs):
    assert placement._mon_addrs(mon) == addrs


def _gw(files):
    origins = [SimpleNamespace(name=f"o{i}") for i in range(len(files))]
    return SimpleNamespace(target=TMPFS, origins=origins), [
        {"origin": f"o{i}", "host": f"g{i}", "files": n} for i, n in enumerate(files)]


def test_an_origin_without_files_is_a_finding():
    g, load = _gw([5, 0])
    (f,) = placement.origin_findings(g, load)
    assert f["cell_id"] == "c1" and "o1 on g1" in f["what"] and "1 of 2 origins" in f["why"]
    assert placement.origin_findings(*_gw([3, 2])) == []
    assert placement.origin_findings(*_gw([0])) == []  # one origin: nothing to spread


def test_cores_dimension_refused_with_gateway_hosts():
    cell = SimpleNamespace(id="c9")
    with pytest.raises(XcbError, match="cell c9: cores: with gateway hosts"):
        placement.refuse_cores(cell, inv(g1=gw("10.77.0.21")))
    placement.refuse_cores(cell, local_inventory())


def test_daemon_pid_finds_the_daemon_below_a_wrapper(tmp_path):
    import subprocess
    import sys
    cfg = str(tmp_path / "x.cfg")
    # a shell (the wrapper) whose child is a process named xrootd with ``-c cfg``
    daemon = ("import os, sys; os.execv(sys.executable, "
              "['xrootd', '-c', 'import time; time.sleep(30)', sys.argv[1]])")
    p = subprocess.Popen(["sh", "-c", '"$0" "$@" & wait', sys.executable, "-c", daemon, cfg])
    try:
        import time
        for _ in range(100):
            found = placement.daemon_pid(p.pid, cfg, "xrootd")
            if found:
                break
            time.sleep(0.02)
        assert found and found != p.pid
        assert placement.daemon_pid(p.pid, cfg + "-other", "xrootd") is None
    finally:
        p.kill()
        subprocess.run(["pkill", "-P", str(p.pid)], check=False)
        p.wait()


@pytest.mark.parametrize("addr,msg", [
    ("0.0.0.0", "not a wildcard"), ("::1", "not IPv6"), ("nope", "not an IPv4 address"),
    ("192.0.2.77", "not an address of this host"),
])
def test_mini_cluster_bind_address_is_checked(addr, msg):
    with pytest.raises(XcbError, match=msg):
        check_addr(addr)


def test_mini_cluster_conf_listens_on_the_given_address(tmp_path):
    assert check_addr(None) == check_addr("127.0.0.1") == "127.0.0.1"
    g = build_conf(tmp_path, tmp_path / "run", "fsid", [3300, 6789], "bluestore", "10.77.0.1")["global"]
    assert g["mon host"] == "[v2:10.77.0.1:3300,v1:10.77.0.1:6789]"
    assert g["public addr"] == g["cluster addr"] == "10.77.0.1"
    lo = build_conf(tmp_path, tmp_path / "run", "fsid", [3300, 6789], "bluestore")["global"]
    assert lo["public addr"] == "127.0.0.1" and "127.0.0.1:3300" in lo["mon host"]


def test_cluster_up_takes_a_bind_address(tmp_path):
    from xcbench.ceph.mini import MiniCluster
    from xcbench.cli import build_parser
    args = build_parser().parse_args(["cluster", "up", "--bind", "10.77.0.1"])
    assert args.bind == "10.77.0.1"
    assert build_parser().parse_args(["cluster", "up"]).bind == "127.0.0.1"
    # a wildcard is refused in one line, before any state is made
    with pytest.raises(XcbError, match=r"^cluster --bind 0.0.0.0: give one IPv4 address"):
        MiniCluster(tmp_path / "c").up(addr="0.0.0.0")
    assert not (tmp_path / "c").exists()
