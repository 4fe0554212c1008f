"""A storage host's link speed when its NIC reports none: the inventory's, else a stated lower
bound that no rule fires on; a bond's members are links of their own."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from tests.support.promserver import ANSWERS, OSD_META, UNAME
from xcbench.analysis.verdicts import storagehosts as sh
from xcbench.analysis.verdicts.attribution import NEAR
from xcbench.analysis.verdicts.samples import SampleIndex
from xcbench.errors import XcbError
from xcbench.hosts.inventory import parse_inventory
from xcbench.telemetry import promqueries as pq

DATA = Path(__file__).resolve().parents[2] / "data" / "prometheus"
WINDOW = [(ANSWERS["start"] + 4, ANSWERS["end"])]
STOR = {"roles": ["storage"], "transport": "ssh", "ssh": "stor1", "address": "10.9.9.9"}


def _remote(inventory=None) -> tuple[pq.HostMap, list[dict]]:
    """The recorded answers as if from a storage host of its own (stor1), whose eth0 reports no
    speed (as in the recorded run) and received 1.2 MB/s during the window."""
    remote = [{**u, "metric": {**u["metric"], "instance": "10.9.9.9:9100", "nodename": "stor1"}} for u in UNAME]
    meta = [{**o, "hostname": "stor1", "front_addr": "[v2:10.9.9.9:6800/1]", "back_addr": ""} for o in OSD_META]
    hosts = pq.HostMap(remote, meta, inventory=inventory)
    rows = []
    for name in pq.QUERIES:
        res = [{**s, "metric": {**s["metric"], "instance": "10.9.9.9:9100"}}
               for s in ANSWERS["range"][name]["data"]["result"]]
        rows += pq.rows(name, res, hosts, 0.0)
    assert not [r for r in rows if r["metric"] == "node.nic_speed_bytes_per_s" and r["labels"].get("device") == "eth0"]
    rows = [{**r, "value": 1.2e6} if r["metric"] == "node.nic_rx_bytes_per_s" and r["labels"]["device"] == "eth0" else r
            for r in rows]
    return hosts, rows + pq.link_rows(hosts, [ANSWERS["start"], ANSWERS["end"]], 0.0)


def _figures(rows) -> dict:
    df = pd.DataFrame([{**r, "cell_id": "c", "labels": json.dumps(r["labels"], sort_keys=True)} for r in rows])
    return sh.host_figures(SampleIndex(df), "c", WINDOW)


@pytest.mark.parametrize("speed, field", [({"eth0": "10mbit"}, "link.speed.eth0"), ("10mbit", "link.speed")])
def test_the_inventory_gives_the_speed_a_nic_does_not_report(speed, field):
    inv = parse_inventory({"hosts": {"stor1": {**STOR, "link": {"speed": speed}}}}, "hosts.yaml")
    _, rows = _remote(inv)
    nic = _figures(rows)["stor1"]["nics"]["eth0"]
    assert nic["speed"] == 1.25e6 and nic["use"] == pytest.approx(0.96)
    assert nic["speed_source"] == f"inventory: host stor1: {field} = 0.01 Gb/s"
    ev = {"rate": 1e6, "concurrency": 4, "storage_nic": {**nic, "host": "stor1", "device": "eth0"}}
    verdict, reason = sh.storage_verdict(ev, NEAR)
    assert verdict == "storage-network" and "96 % of its 10 Mb/s link" in reason, reason


def test_without_a_speed_the_highest_rate_seen_is_a_lower_bound_no_rule_fires_on():
    _, rows = _remote()
    nic = _figures(rows)["stor1"]["nics"]["eth0"]
    assert nic["speed"] is None and math.isnan(nic["use"])
    assert nic["speed_at_least"] == pytest.approx(1.2e6) and "at least the highest rate seen" in nic["speed_source"]


def test_a_bond_member_full_is_seen_beside_its_half_used_bond():
    d = json.loads((DATA / "node_exporter-1.5.0-bond-answers.json").read_text())
    hosts = pq.HostMap(d["uname"], [{"id": 0, "hostname": "stor1", "front_iface": "bond0"}])
    rows = [r for name, res in d["range"].items() for r in pq.rows(name, res, hosts, 0.0)]
    df = pd.DataFrame([{**r, "cell_id": "c", "labels": json.dumps(r["labels"], sort_keys=True)} for r in rows])
    nics = sh.host_figures(SampleIndex(df), "c", [(d["start"], d["end"])])["stor1"]["nics"]
    assert nics["bond0"]["use"] == pytest.approx(0.48) and nics["eth0"]["use"] == pytest.approx(0.92)
    ev = {"rate": 1e9, "concurrency": 8, "storage_nic": sh._worst({"stor1": {"nics": nics}}, "nics", "use")}
    verdict, reason = sh.storage_verdict(ev, NEAR)
    assert verdict == "storage-network" and "NIC eth0 received" in reason, reason


@pytest.mark.parametrize("speed, says", [
    ("fast", "hosts.yaml: host stor1: link: speed: 'fast' is not a tc rate"),
    ({"eth0": 25}, "hosts.yaml: host stor1: link: speed: eth0: 25 is not a tc rate"),
    ({}, "hosts.yaml: host stor1: link: speed: must name at least one NIC"),
    ({"eth 0": "1gbit"}, "hosts.yaml: host stor1: link: speed: 'eth 0' is not a network interface name"),
])
def test_a_bad_speed_is_one_line_naming_file_host_and_field(speed, says):
    with pytest.raises(XcbError) as e:
        parse_inventory({"hosts": {"stor1": {**STOR, "link": {"speed": speed}}}}, "hosts.yaml")
    assert str(e.value).startswith(says) and "\n" not in str(e.value)


def test_a_bad_speed_exits_2_before_anything_starts(tmp_path, capsys):
    from xcbench.cli import main
    f = tmp_path / "hosts.yaml"
    f.write_text("hosts:\n  stor1: {roles: [storage], transport: ssh, ssh: stor1, address: 10.9.9.9,\n"
                 "          link: {speed: 25 gigabit}}\n")
    assert main(["hosts", "up", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert "hosts.yaml: host stor1: link: speed:" in err and len(err.splitlines()) == 1, err


def test_a_speed_is_no_shaping_and_rate_stays_for_emulated_hosts():
    inv = parse_inventory({"hosts": {
        "stor1": {**STOR, "link": {"speed": "25gbit"}},
        "c1": {"roles": ["client"], "transport": "netns", "address": "10.77.0.11",
               "link": {"rate": "200mbit", "speed": "1gbit"}}}}, "hosts.yaml")
    s, c = inv.host("stor1"), inv.host("c1")
    assert s.link is None and s.link_speed.of("eth7") == (25e9 / 8, "link.speed")
    assert c.link.rate_bits_per_s == 200e6 and c.link_speed.host_bits_per_s == 1e9


def test_an_iperf3_rate_measured_to_the_host_stands_in_for_its_speed():
    _, rows = _remote()
    base = pd.DataFrame([
        {"kind": "iperf3", "client": "10.9.9.1", "gateway": "10.9.9.9", "streams": 4,
         "bits_per_second": 10.5e6, "error": None},
        {"kind": "iperf3", "client": "10.9.9.1", "gateway": "10.9.9.9", "streams": 1,
         "bits_per_second": 8e6, "error": None},
        {"kind": "iperf3", "client": "127.0.0.1", "gateway": "127.0.0.1", "streams": 8,
         "bits_per_second": 20e9, "error": None}])
    speeds = sh.measured_speeds(base)
    assert "127.0.0.1" not in speeds and speeds["10.9.9.9"][0] == pytest.approx(10.5e6 / 8)
    df = pd.DataFrame([{**r, "cell_id": "c", "labels": json.dumps(r["labels"], sort_keys=True)} for r in rows])
    nic = sh.host_figures(SampleIndex(df), "c", WINDOW, speeds)["stor1"]["nics"]["eth0"]
    assert nic["speed"] == pytest.approx(10.5e6 / 8) and nic["use"] == pytest.approx(1.2e6 / (10.5e6 / 8))
    assert nic["speed_source"].startswith("iperf3 10.9.9.1 -> 10.9.9.9 at 4 streams")
    # the inventory's stated speed comes first
    inv = parse_inventory({"hosts": {"stor1": {**STOR, "link": {"speed": "1gbit"}}}}, "hosts.yaml")
    _, rows = _remote(inv)
    df = pd.DataFrame([{**r, "cell_id": "c", "labels": json.dumps(r["labels"], sort_keys=True)} for r in rows])
    assert sh.host_figures(SampleIndex(df), "c", WINDOW, speeds)["stor1"]["nics"]["eth0"]["speed"] == 1e9 / 8
