"""The storage hosts' rules: an OSD host's NIC, disk or CPU at its limit, seen through Prometheus
(analysis.verdicts.storagehosts), on rows made from the recorded real answers and on evidence figures."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from tests.support.promserver import ANSWERS, OSD_META, UNAME
from tests.support.storagehost_samples import _samples
from xcbench.analysis.verdicts import storagehosts as sh
from xcbench.analysis.verdicts.attribution import NEAR, VERDICTS
from xcbench.analysis.verdicts.samples import SampleIndex
from xcbench.store.findings import finding
from xcbench.store.rundir import RunDir
from xcbench.telemetry import promqueries as pq

WINDOW = [(ANSWERS["start"] + 4, ANSWERS["end"])]




def test_recorded_one_box_figures():
    """The embedded cluster under a rados bench: its OSD disk's busy fraction and bytes, this
    machine's CPU marked local, loopback-only NICs without a speed."""
    figs = sh.host_figures(_samples(pq.HostMap(UNAME, OSD_META)), "c", WINDOW)
    vm = figs["vm"]
    assert set(vm["disks"]) == {"vda"}  # only the OSDs' disk (zram0 holds no OSD)
    vda = vm["disks"]["vda"]
    assert vda["osds"] == "osd.0,osd.1,osd.2" and 0.1 < vda["busy"] <= 1.0 and vda["write"] > 10e6
    assert vm["cpu"]["local"] and vm["cpu"]["cores"] == 2 and vm["cpu"]["use"] > 0.8
    assert all(n["speed"] is None and math.isnan(n["use"]) for n in vm["nics"].values())
    ev = {"rate": 200e6, "concurrency": 8, "direction": "write"}

    class RD:
        samples, run_id = _samples(pq.HostMap(UNAME, OSD_META)), "r"
    sh.add_evidence(RD, {"cell_id": "c", "pool_kind": "erasure", "pool_label": "ec2+1"}, WINDOW, ev)
    assert ev["storage_disk"]["device"] == "vda" and ev["storage_cpu"] is None  # local: host-cpu's
    assert ev["storage_nic"] is None and ev["storage_fanout_expected"] == pytest.approx(2.0)
    assert ev["sources"]["storage_hosts"]["promql"] == "raw/prometheus/c/queries.promql"


def test_busy_time_limits_a_rotational_disk_only():
    """The same recorded rows (the OSDs' metadata says their device is rotational, as the
    embedded cluster's does): the disk is storage-disk's. Said not rotational (an SSD or NVMe
    serves many IOs at once, busy 100 % long before its limit), it is evidence only, and no
    storage-disk verdict comes from it however busy."""
    class RD:
        run_id = "r"
    cell = {"cell_id": "c", "pool_kind": "replicated", "pool_label": "rep1"}
    for rot, meta in ((True, OSD_META), (False, [{**o, "bluestore_bdev_rotational": "0"} for o in OSD_META]),
                      (None, [{k: v for k, v in o.items() if "rotational" not in k} for o in OSD_META])):
        RD.samples = _samples(pq.HostMap(UNAME, meta))
        ev = {"rate": 200e6, "concurrency": 8, "direction": "write", "backend": "cephfs"}
        sh.add_evidence(RD, cell, WINDOW, ev)
        disk = ev["storage_disk"] if rot is not False else ev["storage_disk_not_rotational"]
        assert disk["device"] == "vda" and disk["rotational"] is rot
        full = {**ev, "storage_disk": ev["storage_disk"] and {**ev["storage_disk"], "busy": 0.99, "busy_rel_se": 0.01}}
        found = sh.storage_verdict(full, NEAR)
        assert (found is not None and found[0] == "storage-disk") == (rot is not False), (rot, found)


def test_a_remote_storage_host_with_a_known_link_speed():
    """The same recorded rows, the OSDs on a host of their own whose NIC reports 10 Mb/s."""
    remote = [{**u, "metric": {**u["metric"], "instance": "10.9.9.9:9100", "nodename": "stor1"}} for u in UNAME]
    meta = [{**o, "hostname": "stor1", "front_addr": "[v2:10.9.9.9:6800/1]", "back_addr": ""} for o in OSD_META]
    hosts = pq.HostMap(remote, meta)
    answers = {}
    for name in pq.QUERIES:
        res = ANSWERS["range"][name]["data"]["result"]
        answers[name] = [{**s, "metric": {**s["metric"], "instance": "10.9.9.9:9100"}} for s in res]
    rows = [r for name, res in answers.items() for r in pq.rows(name, res, hosts, 0.0)]
    eth0 = [r for r in rows if r["metric"] == "node.nic_tx_bytes_per_s" and r["labels"]["device"] == "eth0"]
    assert eth0
    speed = [{**r, "metric": "node.nic_speed_bytes_per_s", "value": 1.25e6} for r in eth0]  # 10 Mb/s
    busy = [{**r, "metric": "node.nic_rx_bytes_per_s", "value": 1.2e6} for r in eth0]  # 96 % of it
    df = pd.DataFrame([{**r, "cell_id": "c", "labels": json.dumps(r["labels"], sort_keys=True)}
                       for r in rows + speed + busy if not (r["metric"] == "node.nic_rx_bytes_per_s"
                                                            and r["labels"]["device"] == "eth0"
                                                            and r["value"] != 1.2e6)])
    figs = sh.host_figures(SampleIndex(df), "c", WINDOW)
    nic = figs["stor1"]["nics"]["eth0"]
    assert nic["speed"] == 1.25e6 and nic["use"] == pytest.approx(0.96) and nic["way"] == "received"
    assert not figs["stor1"]["cpu"]["local"]


def _ev(**kw):
    ev = {"rate": 100e6, "concurrency": 4, "direction": "write", "roles": {}}
    ev.update(kw)
    return ev


NIC = {"host": "stor1", "device": "ens1f0", "rx": 1.1e9, "tx": 0.4e9, "speed": 1.25e9, "use": 0.88,
       "way": "received"}


@pytest.mark.parametrize("ev, verdict, quoted", [
    (_ev(storage_nic=NIC, storage_fanout=2.2, storage_fanout_expected=2.25), "storage-network",
     ["storage host stor1's NIC ens1f0 received 8,800 Mb/s, 88 % of its 10,000 Mb/s link",
      "2.20 bytes per client byte (RAL's arithmetic for this pool: 2.25)"]),
    (_ev(storage_disk={"host": "stor2", "device": "sdc", "busy": 0.97, "write": 150e6, "osds": "osd.7"}),
     "storage-disk", ["storage host stor2's disk sdc (under osd.7) is busy 97 % of the time"]),
    (_ev(storage_cpu={"host": "stor3", "busy": 7.2, "cores": 8, "use": 0.9, "local": False}),
     "storage-host-cpu", ["storage host stor3's CPU is 90 % busy (7.2 of 8 cores)"]),
])
def test_each_storage_rule_names_its_host_and_device(ev, verdict, quoted):
    assert verdict in VERDICTS
    got, reason = sh.decide_storage(ev, "inconclusive", "The chain moves x.", NEAR)
    assert got == verdict, reason
    for q in quoted:
        assert q in reason, reason
    assert reason.endswith(".") and reason.count(". ") == 0


def test_below_the_limit_or_without_figures_the_verdict_stands():
    low = _ev(storage_nic={**NIC, "use": 0.84}, storage_disk={"host": "s", "device": "d", "busy": 0.5},
              storage_cpu={"host": "s", "busy": 1, "cores": 8, "use": 0.125})
    assert sh.decide_storage(low, "storage-bandwidth", "R.", NEAR) == ("storage-bandwidth", "R.")
    assert sh.decide_storage(_ev(), "gateway", "G.", NEAR) == ("gateway", "G.")
    unknown_speed = _ev(storage_nic={**NIC, "speed": None, "use": math.nan})
    assert sh.decide_storage(unknown_speed, "client", "C.", NEAR) == ("client", "C.")


def test_a_client_link_or_a_saturated_gateway_is_named_first_and_the_storage_host_is_quoted():
    v, r = sh.decide_storage(_ev(storage_nic=NIC), "network", "Client link full.", NEAR)
    assert v == "network" and "also the chain moves" in r and "stor1" in r
    gw = {"gateway": {"cpu": 0.25, "limit": 0.25, "use": 1.0, "saturated": True}}
    v, r = sh.decide_storage(_ev(storage_nic=NIC, roles=gw), "gateway", "Gateway at its limit.", NEAR)
    assert v == "gateway" and "ens1f0" in r


@pytest.mark.parametrize("cell, fanout", [
    ({"pool_kind": "erasure", "pool_label": "ec8+3"}, 2.25),  # RAL's dev cluster
    ({"pool_kind": "erasure", "pool_label": "ec2+1"}, 2.0),
    ({"pool_kind": "replicated", "pool_label": "rep3", "raw_ratio_expected": 3.0}, 3.0),
])
def test_the_fanout_by_rals_arithmetic(cell, fanout):
    assert sh.expected_fanout(cell) == pytest.approx(fanout)


def test_the_report_panels_and_the_fanout_text():
    from xcbench.analysis.report.storageplots import fanout_text, storage_host_panels
    s = _samples(pq.HostMap(UNAME, OSD_META))
    uri = storage_host_panels(s, "c", ANSWERS["start"], "cell: storage hosts")
    assert uri and uri.startswith("data:image/png;base64,")
    assert storage_host_panels(s, "other-cell", 0.0, "x") is None  # no prometheus rows: no figure
    assert storage_host_panels(_samples(pq.HostMap([]), []), "c", 0.0, "x") is None  # no host named osd
    text = fanout_text([(2.0, {"storage_fanout": 2.18, "storage_fanout_expected": 2.25}),
                        (4.0, {"storage_fanout": None})])
    assert text == "bytes on the OSD hosts' NICs per client byte: 2.18 at 2 (RAL's arithmetic 2.25)"
    assert fanout_text([(1.0, {})]) == ""


def test_one_box_both_views_of_the_cpu_must_agree():
    hosts = {"vm": {"loopback": True, "cpu": {"use": 0.9, "busy": 1.8, "cores": 2, "local": True},
                    "nics": {}, "disks": {}}}
    assert sh.views_agree(hosts, 0.85)["agree"]
    bad = sh.views_agree(hosts, 0.3)
    assert not bad["agree"] and "90 % busy for Prometheus but 30 % for the host device" in bad["finding"]
    assert bad["host"] == "vm" and bad["tolerance"] == sh.AGREE
    # a window noisier than the measured noise widens the tolerance by its own standard error
    assert not sh.views_agree(hosts, 0.78, 0.01)["agree"]  # 12 points apart, 3*1.41*0.01 < 0.10
    wide = sh.views_agree(hosts, 0.78, 0.04)  # the host view's mean is only known to +-4 points
    assert wide["agree"] and wide["tolerance"] == pytest.approx(3 * math.sqrt(2) * 0.04)
    assert sh.views_agree(hosts, math.nan) is None
    assert sh.views_agree({"s1": {**hosts["vm"], "loopback": False}}, 0.3) is None  # a remote host


def test_recorded_one_box_views_agree_with_the_recorded_host_load():
    """The recorded run kept both cores busy: a host device reading 99 % agrees."""
    class RD:
        samples, run_id = _samples(pq.HostMap(UNAME, OSD_META)), "r"
    ev = {"rate": 200e6, "concurrency": 8, "direction": "write", "host_busy": 0.99}
    sh.add_evidence(RD, {"cell_id": "c", "pool_kind": "erasure", "pool_label": "ec2+1"}, WINDOW, ev)
    assert ev["storage_views"]["agree"] and ev["storage_views"]["prometheus_cpu"] > 0.9


def test_a_rate_point_counts_only_when_its_range_lies_in_the_window():
    """The level before idled (28-71 %), the level ran at 81 %: each point averages the 4 s
    before it, so the first four points of the window reach into the idle time. Counted, they
    put Prometheus 10 points under the host device (a false "views disagree"); left out, the
    figure is the level's (this machine's run of 2026-11-28, test_run_prometheus)."""
    t0, ramp = 1000.0, [0.278, 0.513, 0.708, 0.797]
    busy = ramp + [0.81] * 7  # cores busy / 2, one point per second from the window's start
    hosts = pq.HostMap(UNAME, OSD_META)
    series = [{"metric": {"instance": UNAME[0]["metric"]["instance"]},
               "values": [[t0 + i, str(2 * b)] for i, b in enumerate(busy)]}]
    rows = pq.rows("node.cpu_busy_cores", series, hosts, 0.0, range_s=pq.range_seconds(1.0))
    assert rows and all(r["labels"]["range_s"] == 4.0 for r in rows)
    cores = [{**rows[0], "metric": "node.cpu_cores", "value": 2.0}]
    df = pd.DataFrame([{**r, "cell_id": "c", "labels": json.dumps(r["labels"], sort_keys=True)}
                       for r in rows + cores])
    figs = sh.host_figures(SampleIndex(df), "c", [(t0, t0 + 10)])
    assert figs["vm"]["cpu"]["use"] == pytest.approx(0.81)  # the points from t0 + 4 on
    # a window shorter than the range has no point of its own: no figure, rather than another's
    assert not sh.host_figures(SampleIndex(df), "c", [(t0 + 6, t0 + 9)]).get("vm", {}).get("cpu")
    # without the range (runs before it was kept), a point stands for its instant, as then
    plain = pd.DataFrame([{**r, "cell_id": "c", "labels": json.dumps(
        {k: v for k, v in r["labels"].items() if k != "range_s"}, sort_keys=True)} for r in rows + cores])
    assert sh.host_figures(SampleIndex(plain), "c", [(t0, t0 + 10)])["vm"]["cpu"]["use"] == \
        pytest.approx(sum(busy) / len(busy))


def _one_box_verdict(host_busy: float, concurrency: int = 8) -> dict:
    """A verdict row whose evidence holds the recorded run's storage figures (this machine's CPU
    as Prometheus saw it, ~99 % of 2 cores) beside a host device's reading ``host_busy``."""
    class RD:
        samples, run_id = _samples(pq.HostMap(UNAME, OSD_META)), "r"
    ev = {"rate": 200e6, "concurrency": concurrency, "direction": "write", "host_busy": host_busy}
    sh.add_evidence(RD, {"cell_id": "c", "pool_kind": "erasure", "pool_label": "ec2+1"}, WINDOW, ev)
    return {"cell_id": "c", "concurrency": concurrency, "verdict": "host-cpu", "reason": "r.",
            "evidence": json.dumps(ev, default=str), "direction": "write"}


def test_recorded_one_box_views_that_agree_give_no_finding():
    assert sh.views_findings([_one_box_verdict(0.99), _one_box_verdict(0.93, 4)]) == []


def test_recorded_one_box_views_that_disagree_are_one_finding_naming_host_and_figures():
    rows = [_one_box_verdict(0.99, 4), _one_box_verdict(0.55, 8)]
    prom = json.loads(rows[1]["evidence"])["storage_views"]["prometheus_cpu"]
    (f,) = sh.views_findings(rows)
    assert f["cell_id"] == "c" and f["severity"] == "warning"
    assert f["what"] == (f"CPU views disagree on vm at 8 transfers (write): Prometheus "
                         f"{prom * 100:.0f} %, host device 55 % of the cores busy")
    assert f"differ by {abs(prom - 0.55) * 100:.0f} points" in f["why"]


def test_views_findings_are_stored_once_and_replaced_when_attributed_again(tmp_path):
    run = RunDir.create(tmp_path, name="views", fingerprint=False)
    other = finding("c", "something else", "why", "fix")
    run.append("findings", [other])
    sh.store_views_findings(run, [_one_box_verdict(0.55)])
    sh.store_views_findings(run, [_one_box_verdict(0.40)])  # a resumed run attributes c again
    f = run.table("findings")
    assert list(f["what"]) == ["something else", f["what"].iloc[1]] and "host device 40 %" in f["what"].iloc[1]
    run.finalize("complete")
    sh.store_views_findings(run, [_one_box_verdict(0.99)])  # `xcbench report` again: they agree
    assert list(RunDir.open(run.path).table("findings")["what"]) == ["something else"]


def test_a_disk_busy_within_its_noise_of_the_line_is_borderline_either_side():
    # the busy samples' own error is the rule's noise band: 86 % +- 5 % names storage-disk, and
    # says another run may not; 84 % with the same noise leaves the verdict and names the disk
    disk = {"host": "stor2", "device": "sdc", "busy": 0.86, "busy_rel_se": 0.05, "write": 150e6}
    ev = _ev(storage_disk=disk)
    got, _ = sh.decide_storage(ev, "inconclusive", "The chain moves x.", NEAR)
    assert got == "storage-disk"
    (cand,) = ev["borderline_candidates"]
    assert cand["rule"] == "storage-disk" and cand["low"] < NEAR < cand["high"]
    ev = _ev(storage_disk={**disk, "busy": 0.84})
    assert sh.decide_storage(ev, "inconclusive", "The chain moves x.", NEAR)[0] == "inconclusive"
    assert [c["rule"] for c in ev["borderline_candidates"]] == ["storage-disk"]
    ev = _ev(storage_disk={**disk, "busy": 0.97, "busy_rel_se": 0.01})  # surely over: not borderline
    sh.decide_storage(ev, "inconclusive", "x.", NEAR)
    assert not ev.get("borderline_candidates")


def test_a_tmpfs_cell_has_no_storage_host_verdict_nor_candidate():
    """No OSD is in a tmpfs cell's chain: a busy disk, NIC or CPU of the cluster's hosts is not its
    cause, not even a borderline one (the same figures name a CephFS cell's storage host)."""
    figures = dict(storage_nic=NIC, storage_cpu={"host": "stor3", "busy": 7.2, "cores": 8, "use": 0.9,
                                                 "local": False},
                   storage_disk={"host": "s", "device": "vda", "busy": 0.84, "busy_rel_se": 0.1})
    tmpfs = _ev(backend="tmpfs", **figures)
    assert sh.decide_storage(tmpfs, "concurrency", "C.", NEAR) == ("concurrency", "C.")
    assert not tmpfs.get("borderline_candidates")
    assert sh.decide_storage(_ev(backend="cephfs", **figures), "concurrency", "C.", NEAR)[0] == "storage-network"
