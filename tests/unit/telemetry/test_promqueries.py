"""The prometheus device's queries and host mapping, on output recorded from this machine's
real exporters (node_exporter 1.5.0, ceph-mgr 16.2.15 prometheus module) and Prometheus 2.42
API answers (tests/data/prometheus/capture.py made them, under an EC 2+1 rados bench)."""

import json
import math
import re

import pytest

from tests.support.promserver import ANSWERS, DATA, OSD_META, UNAME
from xcbench.hosts.inventory import parse_inventory
from xcbench.telemetry import promqueries as pq
from xcbench.telemetry.prometheus import parse_duration as _seconds

NODE_TXT = (DATA / "node_exporter-1.5.0.txt").read_text()
MGR_TXT = (DATA / "ceph-mgr-16.2.15.txt").read_text()
OSD_SERIES = ANSWERS["instant"]["ceph_osd_metadata"]["data"]["result"]


def _exported(text: str) -> set[str]:
    return set(re.findall(r"^([a-z_]+)(?:\{| )", text, re.M))


@pytest.mark.parametrize("name", sorted(pq.QUERIES))
def test_every_query_reads_metrics_the_real_exporters_export(name):
    have = _exported(NODE_TXT if name.startswith("node.") else MGR_TXT)
    used = set(re.findall(r"\b((?:node|ceph)_[a-z_]+)\b", pq.QUERIES[name]))
    assert used and used <= have, used - have
    assert pq.NEEDS[name] in used


def test_the_promql_is_valid_and_answered_by_the_real_server():
    """Every query, as written into a run, got a success answer from Prometheus 2.42."""
    for name, answer in ANSWERS["range"].items():
        assert answer["status"] == "success", (name, answer)
        assert answer["data"]["resultType"] == "matrix"
    assert pq.window(1.0) == "4s" and pq.window(15) == "60s"
    assert "[4s]" in pq.promql("node.disk_busy", 1.0) and "{w}" not in pq.promql("node.disk_busy", 1.0)


def test_hosts_and_osds_from_osd_metadata():
    hosts = pq.HostMap(UNAME, OSD_META)
    inst = UNAME[0]["metric"]["instance"]
    assert hosts.host(inst) == "vm"
    assert hosts.osds_on(inst) == ["osd.0", "osd.1", "osd.2"]
    assert hosts.roles(inst) == ["local", "osd"]  # a loopback target: this machine
    assert hosts.osd_devices(inst) == {"vda": ["osd.0", "osd.1", "osd.2"]}
    assert hosts.osds["osd.1"]["ips"] == ["127.0.0.1"]
    assert json.loads(json.dumps(hosts.describe()))["instances"][inst]["osds"] == ["osd.0", "osd.1", "osd.2"]


def test_without_a_cluster_handle_the_mgr_series_name_the_osd_hosts():
    hosts = pq.HostMap(UNAME, [], osd_series=OSD_SERIES)
    inst = UNAME[0]["metric"]["instance"]
    assert hosts.osds_on(inst) == ["osd.0", "osd.1", "osd.2"] and "osd" in hosts.roles(inst)
    assert hosts.osd_devices(inst) == {}  # the mgr series carry no devices


def test_an_unknown_host_name_is_matched_by_address():
    meta = [{**o, "hostname": "storage-7.example.org"} for o in OSD_META]
    hosts = pq.HostMap(UNAME, meta)  # nodename "vm" differs; the target's IP is the OSDs'
    inst = UNAME[0]["metric"]["instance"]
    assert hosts.osds_on(inst) == ["osd.0", "osd.1", "osd.2"]
    other = [{**o, "hostname": "s7", "front_addr": "[v2:10.1.2.3:6800/1,v1:10.1.2.3:6801/1]",
              "back_addr": "[v2:10.1.2.3:6802/1,v1:10.1.2.3:6803/1]"} for o in OSD_META]
    assert pq.HostMap(UNAME, other).osds_on(inst) == []  # neither name nor address: not an OSD host


def test_roles_from_the_inventory(tmp_path):
    inv = parse_inventory({"hosts": {"g1": {"roles": ["gateway"], "transport": "local",
                                            "address": "127.0.0.1"}}}, "inv.yaml")
    hosts = pq.HostMap(UNAME, OSD_META, inv)
    assert hosts.roles(UNAME[0]["metric"]["instance"]) == ["gateway", "local", "osd"]


def test_an_emulated_storage_host_sharing_the_machines_name_gets_its_own_osds():
    """A node_exporter in a network namespace reports the machine's nodename: the OSDs' address
    decides which target is their host."""
    netns = {"metric": {**UNAME[0]["metric"], "instance": "10.77.0.30:9100"}}
    meta = [{**o, "front_addr": "[v2:10.77.0.30:6800/1,v1:10.77.0.30:6801/1]", "back_addr": ""}
            for o in OSD_META]
    hosts = pq.HostMap([*UNAME, netns], meta)
    assert hosts.osds_on("10.77.0.30:9100") == ["osd.0", "osd.1", "osd.2"]
    assert hosts.osds_on(UNAME[0]["metric"]["instance"]) == []
    assert hosts.roles("10.77.0.30:9100") == ["osd"] and hosts.roles(UNAME[0]["metric"]["instance"]) == ["local"]


def _rows(name):
    return pq.rows(name, ANSWERS["range"][name]["data"]["result"], pq.HostMap(UNAME, OSD_META), 0.0)


def test_host_rows_name_host_device_and_the_osds_on_a_disk():
    busy = _rows("node.disk_busy")
    vda = [r for r in busy if r["labels"]["device"] == "vda"]
    assert vda and all(r["labels"]["osds"] == "osd.0,osd.1,osd.2" and r["labels"]["host"] == "vm"
                       and r["labels"]["role"] == "local,osd" for r in vda)
    assert all(0 <= r["value"] <= 1.01 for r in busy)  # a fraction of each second
    assert max(r["value"] for r in vda) > 0.1  # the bench kept the disk busy
    written = _rows("node.disk_write_bytes_per_s")
    assert max(r["value"] for r in written if r["labels"]["device"] == "vda") > 10e6
    cores = _rows("node.cpu_cores")
    assert {r["value"] for r in cores} == {2.0}
    busy_cores = _rows("node.cpu_busy_cores")
    # the bench kept both cores busy; scrape-time jitter moves a 4 s rate by a few %
    assert all(0 <= r["value"] <= 2 * 1.05 for r in busy_cores) and max(r["value"] for r in busy_cores) > 1.5
    nics = _rows("node.nic_tx_bytes_per_s")
    assert nics and "lo" not in {r["labels"]["device"] for r in nics}
    assert all(r["sampler"] == "prometheus" and r["metric"] == "node.nic_tx_bytes_per_s" for r in nics)


def test_the_recorded_exporter_knows_no_link_speed_here():
    """eth0 reports -1 Mb/s (unknown): the query keeps only known speeds, so no series."""
    assert 'node_network_speed_bytes{device="eth0"} -125000' in NODE_TXT
    assert _rows("node.nic_speed_bytes_per_s") == []


def test_osd_and_pool_rows():
    w = _rows("ceph.osd_write_bytes_per_s")
    assert {r["labels"]["osd"] for r in w} == {"osd.0", "osd.1", "osd.2"}
    assert {r["labels"]["host"] for r in w} == {"vm"}
    assert max(r["value"] for r in w) > 1e6
    lat = _rows("ceph.osd_write_latency_s")
    assert lat and all(0 < r["value"] < 10 for r in lat)
    assert all(math.isfinite(r["value"]) for r in _rows("ceph.osd_read_latency_s"))  # NaN (0/0) dropped
    pools = _rows("ceph.pool_write_bytes_per_s")
    names = {r["labels"]["pool"] for r in pools}
    assert {"xcb-ec2-1", "xcb-rep3"} <= names
    ec = [r["value"] for r in pools if r["labels"]["pool"] == "xcb-ec2-1"]
    assert max(ec) > 50e6  # the rados bench's 4 MiB writes
    walls = sorted({r["wall"] for r in pools})
    assert walls[0] >= ANSWERS["start"] - 1 and walls[-1] <= ANSWERS["end"] + 1
    assert all(b - a == pytest.approx(ANSWERS["step"], abs=0.01) for a, b in zip(walls, walls[1:], strict=False))


def test_rows_sit_on_the_monotonic_clock_too():
    rows = pq.rows("ceph.pool_write_ops", ANSWERS["range"]["ceph.pool_write_ops"]["data"]["result"],
                   pq.HostMap([]), 1000.0)
    assert rows and all(r["mono"] == r["wall"] - 1000.0 for r in rows)


def test_addresses_and_durations():
    assert pq.addr_ips("[v2:10.0.0.1:6802/123,v1:10.0.0.1:6803/123]") == {"10.0.0.1"}
    assert pq.addr_ips("[v2:[fd00::1]:6802/1]") == {"fd00::1"}
    assert pq.addr_ips("") == set()
    assert pq.instance_ip("10.0.0.2:9100") == "10.0.0.2" and pq.instance_ip("host-a:9100") is None
    assert pq.short("Storage-1.example.org") == "storage-1"
    assert _seconds("1s") == 1 and _seconds("1m30s") == 90 and _seconds("500ms") == 0.5
    for bad in ("", "1x", "s", "0s"):
        with pytest.raises(ValueError):
            _seconds(bad)


def test_an_emulated_host_is_named_by_its_inventory_name_and_its_link_is_its_nic_limit():
    netns = {"metric": {**UNAME[0]["metric"], "instance": "10.77.0.30:9100"}}
    meta = [{**o, "front_addr": "[v2:10.77.0.30:6800/1]", "back_addr": ""} for o in OSD_META]
    em = {"10.77.0.30": {"name": "st1", "rate_bits_per_s": 80e6, "device": "eth0"}}
    hosts = pq.HostMap([*UNAME, netns], meta, emulated=em)
    assert hosts.host("10.77.0.30:9100") == "st1" and hosts.host(UNAME[0]["metric"]["instance"]) == "vm"
    assert hosts.roles("10.77.0.30:9100") == ["local", "osd"]  # its CPU is this machine's
    rows = pq.link_rows(hosts, [100.0, 110.0], 50.0)
    assert [(r["wall"], r["mono"], r["value"]) for r in rows] == [(100.0, 50.0, 10e6), (110.0, 60.0, 10e6)]
    assert rows[0]["metric"] == "node.nic_limit_bytes_per_s" and rows[0]["labels"]["host"] == "st1"
    assert rows[0]["labels"]["device"] == "eth0" and "shaped to 80 Mb/s" in rows[0]["labels"]["source"]
    unshaped = pq.HostMap([*UNAME, netns], meta, emulated={"10.77.0.30": {**em["10.77.0.30"], "rate_bits_per_s": None}})
    assert pq.link_rows(unshaped, [1.0], 0.0) == []
