"""The prometheus device's live query (one request per telemetry tick) and the progress view's
storage line: the busiest storage host's NIC (use of its link), disk busy and CPU, from the real
answer recorded on this machine (Prometheus 2.42, node_exporter 1.5.0, the embedded cluster)."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path

from rich.console import Console

from tests.support.promserver import ANSWERS, OSD_META, UNAME, PromServer
from xcbench.run.progress import MatrixView
from xcbench.system.ports import free_port
from xcbench.telemetry import promqueries as pq
from xcbench.telemetry.promapi import PromClient
from xcbench.telemetry.prometheus import LIVE_METRICS, PrometheusSampler, live_line, live_rows

DATA = Path(__file__).resolve().parents[2] / "data" / "prometheus"
LIVE = json.loads((DATA / "prometheus-2.42-live.json").read_text())
INSTANCE = UNAME[0]["metric"]["instance"]  # the recorded host map's node_exporter


def _answer(instance: str = INSTANCE) -> list[dict]:
    """The recorded live answer, on the instance of the recorded host map."""
    return [{**s, "metric": {**s["metric"], "instance": instance}} for s in LIVE["answer"]["data"]["result"]]


def test_the_live_query_is_the_recorded_one():
    assert LIVE["query"] == pq.live_promql(LIVE["step"]) and LIVE["answer"]["status"] == "success"


def test_recorded_live_answer_names_the_osd_disk_and_the_cpu():
    fig = pq.live_figures(_answer(), pq.HostMap(UNAME, OSD_META))
    assert fig["host"] == "vm" and fig["disk"] == "vda"  # the OSDs' disk, not zram0
    assert fig["disk_busy"] == 0.3399999999999939 and fig["cpu_use"] == 0.9899999999998953
    assert fig["nic"] == "eth0" and fig["nic_bytes_per_s"] == 0 and fig["nic_use"] is None  # no link speed


def test_the_busiest_storage_host_and_its_link_use():
    """Two OSD hosts (the recorded one twice, on two addresses: CPU 99 %, disk 34 %); one NIC
    at its known 10 Gb/s link: that host is the busiest; a host without OSDs (a gateway at
    100 % CPU) is never the one shown."""
    uname = [{"metric": {**UNAME[0]["metric"], "instance": i, "nodename": n}}
             for i, n in (("10.0.0.1:9100", "stor1"), ("10.0.0.2:9100", "stor2"), ("10.0.0.3:9100", "gw1"))]
    meta = [{**o, "hostname": "stor1" if o["id"] == 0 else "stor2",
             "front_addr": f"[v2:10.0.0.{1 if o['id'] == 0 else 2}:6800/1]", "back_addr": "",
             "front_iface": "eth0"} for o in OSD_META]
    ans = _answer("10.0.0.1:9100") + _answer("10.0.0.2:9100") + _answer("10.0.0.3:9100")
    ans += [{"metric": {"instance": "10.0.0.2:9100", "device": "eth0", "xcb_live": "tx"}, "value": [0, "1.25e9"]},
            {"metric": {"instance": "10.0.0.2:9100", "device": "eth0", "xcb_live": "speed"}, "value": [0, "1.25e9"]},
            {"metric": {"instance": "10.0.0.3:9100", "xcb_live": "cpu"}, "value": [0, "1.5"]},
            # a busier NIC that is not the OSDs' (osd metadata names eth0): not the one shown
            {"metric": {"instance": "10.0.0.2:9100", "device": "eth9", "xcb_live": "tx"}, "value": [0, "2.5e9"]},
            {"metric": {"instance": "10.0.0.2:9100", "device": "eth9", "xcb_live": "speed"}, "value": [0, "2.5e9"]}]
    ans = [a for a in ans if not (a["metric"]["instance"] == "10.0.0.3:9100" and a["metric"]["xcb_live"] == "cpu"
                                  and a["value"][1] != "1.5")]
    fig = pq.live_figures(ans, pq.HostMap(uname, meta))
    assert fig["host"] == "stor2" and fig["nic"] == "eth0" and fig["nic_use"] == 1.0
    assert live_line(_rows(fig)) == "storage host stor2: NIC eth0 100 % of link, disk vda 34 % busy, CPU 99 %"


def _rows(fig):
    return live_rows(PrometheusSampler(PromClient("http://x")), 1.0, 1.0, fig)


def test_the_device_takes_the_live_figures_from_a_real_server_on_its_tick():
    answers = {**ANSWERS["instant"], LIVE["query"]: {**LIVE["answer"], "data": {
        **LIVE["answer"]["data"], "result": _answer()}}}
    with PromServer() as srv:
        srv.instant = answers
        s = PrometheusSampler(PromClient(srv.url), cell_id="c", step=LIVE["step"])
        s.hosts = pq.HostMap(UNAME, OSD_META)
        rows = s.sample(time.time(), time.monotonic())
    assert {r["metric"] for r in rows} == {"live.storage_nic_bytes_per_s", "live.storage_disk_busy", "live.storage_cpu_use"}
    assert set(LIVE_METRICS) >= {r["metric"] for r in rows} and all(r["labels"]["host"] == "vm" for r in rows)
    assert live_line(rows) == "storage host vm: NIC eth0 0 Mb/s (link speed unknown), disk vda 34 % busy, CPU 99 %"
    assert len(s.live_seconds) == 1  # one live query a tick (its time is the benchmarks', not a test's)


def test_a_down_or_slow_prometheus_costs_the_live_query_one_try_and_no_line():
    s = PrometheusSampler(PromClient(f"http://127.0.0.1:{free_port()}"), step=1.0)
    assert s.sample(time.time(), time.monotonic()) == [] and not s.live_ok
    assert s.sample(time.time(), time.monotonic()) == [] and len(s.live_seconds) == 1  # not asked again
    with PromServer("slow", delay=3.0) as srv:
        s = PrometheusSampler(PromClient(srv.url, timeout=5.0), step=1.0)
        t = time.monotonic()
        assert s.sample(time.time(), time.monotonic()) == [] and s.sample(time.time(), time.monotonic()) == []
        # the server answers after 3 s: under 3 s in all means the live query gave up at its own
        # LIVE_TIMEOUT (1 s), not the client's 5 s, and was not asked twice (a loaded box has the margin)
        assert time.monotonic() - t < 3.0
        assert s.api.timeout == 5.0  # the level's range queries keep their own


def _live(host="vm", cpu=0.5):
    return [{"sampler": "prometheus", "metric": "live.storage_cpu_use", "value": cpu, "labels": {"host": host}}]


def test_the_plain_view_says_the_storage_range_once_per_level(capsys):
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False))
    view.observe("samples", _live())  # before a level: nothing to say
    view.phase("cell", "campaign c=4 r=1/1")
    view.observe("samples", [{"sampler": "host", "metric": "cpu.busy", "value": 1.0, "labels": {}}])
    view.observe("samples", _live(cpu=0.42))
    view.observe("samples", _live(cpu=0.61))  # while the level runs: nothing printed
    assert "storage host" not in capsys.readouterr().err
    view.observe("campaigns", [{"campaign_id": "c", "concurrency": 4, "rate": 1e8, "finished": 1, "failed": 0}])
    view.observe("samples", _live(cpu=0.44))  # the level ended
    err = [line.split(" ", 1)[1] for line in capsys.readouterr().err.splitlines()]  # after HH:MM:SS
    assert [line for line in err if "storage host" in line] == \
        ["    storage host vm over the level: CPU 42–61 %"]
    assert err[-1].startswith("    storage host") and err[-2].strip().startswith("c=4:")
    assert view.storage is None


def test_one_box_says_no_storage_line(capsys):
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False), one_box=True)
    view.phase("cell", "campaign c=4 r=1/1")
    view.observe("samples", _live(cpu=0.42))
    view.observe("campaigns", [{"campaign_id": "c", "concurrency": 4, "rate": 1e8, "finished": 1, "failed": 0}])
    assert "storage host" not in capsys.readouterr().err and view.storage is None


def test_the_rich_view_has_a_storage_row():
    con = Console(file=io.StringIO(), force_terminal=True, width=120)
    view = MatrixView(con)
    view.phase("cell", "campaign c=1 r=1/1")
    view.observe("samples", _live(cpu=0.77))
    out = io.StringIO()
    Console(file=out, width=200).print(view._render())
    assert re.search(r"^storage +host vm: CPU 77 %", out.getvalue(), re.M), out.getvalue()
