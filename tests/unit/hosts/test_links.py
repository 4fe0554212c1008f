"""Link counters of emulated hosts and the `links` telemetry device, on a fake /sys/class/net."""

import pytest

from xcbench.errors import XcbError
from xcbench.hosts import parse_inventory
from xcbench.hosts.emulate import Record
from xcbench.hosts.links import link_counters, links_of, read_counters, recorded_links
from xcbench.telemetry.base import SampleGap
from xcbench.telemetry.link_sampler import LinksSampler

INV = parse_inventory({"hosts": {
    "c1": {"roles": ["client"], "transport": "netns", "address": "10.77.0.11",
           "link": {"rate": "200mbit"}},
    "g1": {"roles": ["gateway"], "transport": "netns", "address": "10.77.0.21"},
    "l": {"roles": ["client"]}}}, "h.yaml")


def _veth(root, name, rx, tx):
    d = root / name / "statistics"
    d.mkdir(parents=True)
    (d / "rx_bytes").write_text(f"{rx}\n")
    (d / "tx_bytes").write_text(f"{tx}\n")


def test_counters_are_the_hosts_view(tmp_path):
    _veth(tmp_path, "xcb-c1", rx=100, tx=7)
    assert read_counters("xcb-c1", tmp_path) == {"tx_bytes": 100, "rx_bytes": 7}
    with pytest.raises(XcbError, match="link xcb-g1: no counters"):
        read_counters("xcb-g1", tmp_path)
    with pytest.raises(XcbError, match="host l: transport local"):
        link_counters(INV.host("l"))


def test_sampler_rows_rates_and_limit(tmp_path):
    _veth(tmp_path, "xcb-c1", rx=0, tx=0)
    _veth(tmp_path, "xcb-g1", rx=0, tx=0)
    links = links_of(INV)
    assert [(x.host, x.limit_bytes) for x in links] == [("c1", 25e6), ("g1", None)]
    s = LinksSampler(links, sys_net=tmp_path)
    s.sample(0.0, 0.0)
    (tmp_path / "xcb-c1" / "statistics" / "rx_bytes").write_text("2000000")
    rows = s.sample(2.0, 2.0)
    by = {(r["metric"], r["labels"]["host"]): r["value"] for r in rows}
    assert by[("link.tx_bytes.rate", "c1")] == 1e6 and by[("link.rx_bytes.rate", "c1")] == 0
    assert by[("link.limit_bytes", "c1")] == 25e6 and by[("link.limit_bytes", "g1")] is None
    assert {r["labels"]["roles"] for r in rows if r["labels"]["host"] == "g1"} == {"gateway"}


def test_sampler_gap_names_the_missing_host(tmp_path):
    _veth(tmp_path, "xcb-c1", rx=1, tx=1)
    with pytest.raises(SampleGap, match="g1") as e:
        LinksSampler(links_of(INV), sys_net=tmp_path).sample(0.0, 0.0)
    assert {r["labels"]["host"] for r in e.value.rows} == {"c1"}


def test_recorded_links(tmp_path):
    rec = Record(tmp_path / "hosts-xcb0.json")
    rec.data["hosts"] = {"c1": {"veth": "xcb-c1", "roles": ["client"], "rate_bits_per_s": 2e8},
                         "g1": {"veth": "xcb-g1", "roles": ["gateway"], "rate_bits_per_s": None}}
    rec.save()
    got = recorded_links(tmp_path)
    assert [(x.host, x.veth, x.rate_bits_per_s) for x in got] == [("c1", "xcb-c1", 2e8),
                                                                  ("g1", "xcb-g1", None)]


def test_a_record_an_earlier_xcbench_wrote_reads_in_todays_names(tmp_path):
    """`hosts up` before the units rename wrote rate_bps / reshaped_bps (bits/s): a link it left
    tightened is still known, and the next confirm puts it back (xcbench.hosts.reshape)."""
    rec = Record(tmp_path / "hosts-xcb0.json")
    rec.data["hosts"] = {"c1": {"veth": "xcb-c1", "roles": ["client"], "rate_bps": 2e8,
                                "reshaped_bps": 1e8}}
    rec.save()
    h = Record.load(rec.path).data["hosts"]["c1"]
    assert h == {"veth": "xcb-c1", "roles": ["client"], "rate_bits_per_s": 2e8, "reshaped_bits_per_s": 1e8}
    assert [(x.host, x.rate_bits_per_s) for x in recorded_links(tmp_path)] == [("c1", 1e8)]
