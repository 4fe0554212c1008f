"""The xrd.report parser and the gateway sampler, on real packets from xrootd 5.5.3 (tests/data)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from xcbench.errors import XcbError
from xcbench.system import proc
from xcbench.telemetry import GatewaySampler, ReportListener, SampleGap, parse_report

DATA = Path(__file__).resolve().parents[2] / "data" / "xrd-report"
MiB = 1 << 20


def load(name: str):
    return parse_report((DATA / name).read_bytes())


def test_every_captured_packet_parses_with_its_header():
    files = sorted(DATA.glob("*.xml"))
    assert len(files) >= 10
    for f in files:
        rep = load(f.name)
        h = rep.header
        assert h["ver"] == "v5.5.3" and h["pgm"] in ("xrootd", "cmsd")
        assert isinstance(h["pid"], int) and isinstance(h["tod"], int) and h["tod"] >= h["tos"]
        assert rep.source == f"{h['pgm']}:{h['ins']}:{h['pid']}"
        assert f.name.startswith(h["ins"])
        for key in ("link.in", "link.out", "link.num", "sched.threads", "sched.inq", "buff.mem"):
            assert key in rep.values, (f.name, key)


def test_idle_server_counts_nothing():
    v = load("gwa-idle.xml").values
    assert v["link.in"] == v["link.out"] == v["link.tot"] == 0
    assert v["xrootd.ops.wr"] == v["xrootd.ops.open"] == 0
    assert v["sched.threads"] > 0


def test_root_upload_shows_in_link_in_and_write_ops():
    v = load("gwa-after-root-upload.xml").values
    assert 64 * MiB <= v["link.in"] <= 64 * MiB * 1.01  # protocol overhead is ~0.1 %
    assert v["link.out"] < 4096
    assert v["xrootd.ops.wr"] == 8 and v["xrootd.ops.open"] == 1  # xrdcp: 8 MiB chunks


def test_http_upload_counts_on_the_same_link_and_xrootd_counters():
    before, after = load("gwa-after-root-upload.xml").values, load("gwa-after-http-upload.xml").values
    assert 16 * MiB <= after["link.in"] - before["link.in"] <= 16 * MiB * 1.01
    assert after["xrootd.ops.wr"] > before["xrootd.ops.wr"]


def test_read_back_shows_in_link_out():
    before, after = load("gwa-after-http-upload.xml").values, load("gwa-after-read.xml").values
    assert 64 * MiB <= after["link.out"] - before["link.out"] <= 64 * MiB * 1.01
    assert after["xrootd.ops.rd"] > before["xrootd.ops.rd"]


def test_tpc_source_grants_and_destination_links_do_not_carry_the_data():
    src, dst = load("gwa-after-tpc.xml").values, load("gwb-after-tpc.xml").values
    assert src["ofs.tpc.grnt"] == 1 and src["ofs.tpc.err"] == 0
    assert src["link.out"] - load("gwa-after-read.xml").values["link.out"] >= 64 * MiB
    assert dst["link.in"] < 4096  # the pull runs in a child xrdcp: not on the server's links


def test_nested_and_structured_values():
    rep = load("gwa-after-read.xml")
    v, info = rep.values, rep.info
    assert isinstance(v["proc.usr"], float) and 0 < v["proc.usr"] < 100  # <s>+<u> -> seconds
    assert v["oss.paths"] == 1 and v["oss.paths.0.free"] <= v["oss.paths.0.tot"]
    assert info["ofs.role"] == "server" and info["info.name"] == "gwa"
    assert info["oss.paths.0.lp"] == "/"


def test_cmsd_packet():
    rep = load("mgr-after-tpc.xml")
    assert rep.header["pgm"] == "cmsd"
    assert "cmsm.node" in rep.values and "xrootd.ops.wr" not in rep.values
    assert rep.info["cmsm.role"] == "M"


def test_slow_upload_counters_move_while_the_link_is_open():
    series = [load(f"gwa-slow-{i}.xml").values for i in range(1, 6)]
    deltas = [b["link.in"] - a["link.in"] for a, b in zip(series, series[1:], strict=False)]
    assert all(4 * MiB <= d <= 4 * MiB + 4096 for d in deltas[:3])
    assert all(s["link.num"] == 1 for s in series)
    assert series[2]["ofs.opw"] == 1 and series[-1]["ofs.opw"] == 0


@pytest.mark.parametrize("junk", [b"", b"not xml", b"<other/>", b"<statistics><stats"])
def test_garbage_is_a_one_line_error(junk):
    with pytest.raises(XcbError, match="xrd.report"):
        parse_report(junk)


def send(listener: ReportListener, names: list[str], gap: float = 0.05) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for n in names:
            s.sendto((DATA / n).read_bytes() if n.endswith(".xml") else n.encode(),
                     (listener.host, listener.port))
            time.sleep(gap)


def test_gateway_sampler_turns_real_packets_into_counters_and_rates():
    with ReportListener() as listener:
        sampler = GatewaySampler(listener, pids=[])
        names = [f"gwa-slow-{i}.xml" for i in range(1, 6)]
        send(listener, names)
        assert listener.wait(len(names))
        rows = sampler.sample(time.time(), time.monotonic())
    link_in = [r for r in rows if r["metric"] == "xrd.link.in"]
    rates = [r for r in rows if r["metric"] == "xrd.link.in.rate"]
    assert [r["value"] for r in link_in] == [load(n).values["link.in"] for n in names]
    assert len(rates) == 4 and all(r["value"] >= 0 for r in rates) and rates[0]["value"] > 0
    assert link_in[0]["labels"] == {"gateway": "gwa", "pgm": "xrootd", "pid": 3332}
    assert all(r["sampler"] == "gateway" for r in rows)
    # rows carry the packets' arrival times, one per packet
    assert len({r["mono"] for r in link_in}) == 5
    metrics = {r["metric"] for r in rows}
    assert {"xrd.sched.threads", "xrd.sched.inq", "xrd.ofs.tpc.grnt", "xrd.xrootd.ops.wr.rate",
            "xrd.buff.mem", "xrd.proc.usr.rate", "xrd.link.num"} <= metrics


def test_gateway_sampler_reports_bad_packets_and_dead_servers_as_gaps():
    dead = proc.spawn(["true"])
    proc.stop(dead)
    me = proc.spawn(["sleep", "30"], name="xrootd")
    try:
        with ReportListener() as listener:
            sampler = GatewaySampler(listener, pids=[dead.pid])
            sampler.gateway = type("G", (), {"servers": [me]})()
            send(listener, ["gwa-idle.xml", "garbage"])
            assert listener.wait(2)
            with pytest.raises(SampleGap) as e:
                sampler.sample(time.time(), time.monotonic())
    finally:
        proc.stop(me)
    msg = str(e.value)
    assert "not XML" in msg and f"pid {dead.pid} is gone" in msg
    metrics = {(r["metric"], r["labels"].get("pid")) for r in e.value.rows}
    assert ("xrd.link.in", 3332) in metrics  # the good packet still counted
    assert ("proc.rss_bytes", me.pid) in metrics and ("proc.cpu_seconds", me.pid) in metrics
    assert sampler.bad_packets == 1


def test_a_silent_report_stream_is_a_gap():
    with ReportListener() as listener:
        sampler = GatewaySampler(listener, stale_after=0.0)
        time.sleep(0.05)
        with pytest.raises(SampleGap, match="no xrd.report packet"):
            sampler.sample(time.time(), time.monotonic())


def test_listener_saves_raw_packets(tmp_path):
    with ReportListener(save_dir=tmp_path / "raw") as listener:
        assert listener.addr == f"127.0.0.1:{listener.port}"
        send(listener, ["gwa-idle.xml"])
        assert listener.wait(1)
    saved = list((tmp_path / "raw").glob("*.xml"))
    assert len(saved) == 1 and saved[0].read_bytes() == (DATA / "gwa-idle.xml").read_bytes()
