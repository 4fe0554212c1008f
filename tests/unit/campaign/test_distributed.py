"""The coordinator (xcbench.scaleout.distributed) against scripted agents: real processes with
the agent's protocol, a virtual clock that runs fast, and a host clock offset."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from xcbench.campaign.spec import CampaignSpec
from xcbench.errors import XcbError
from xcbench.scaleout.distributed import host_specs, run_distributed
from xcbench.system import proc

# the agent's protocol with a virtual clock: one 1 s bucket every 20 ms of real time, its host
# clock ``offset`` s ahead of the run's; ``stop`` drains (one partial bucket), ``fail`` errors
FAKE = r'''
import json, sys, threading, time
name, offset, mode, start = sys.argv[1], float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
out = sys.stdout
def send(o):
    out.write(json.dumps(o) + "\n"); out.flush()
send({"hello": {"clock": time.time() + offset, "pid": 0, "version": "test"}})
req = json.loads(sys.stdin.readline())
spec = req["spec"]
stop = threading.Event()
def control():
    for line in sys.stdin:
        stop.set()
    stop.set()
threading.Thread(target=control, daemon=True).start()
if mode == "fail":
    time.sleep(0.1); send({"error": "no route to the gateway"}); sys.exit(1)
if mode == "hang":
    time.sleep(600)
if mode == "samples":
    send({"table": "samples", "rows": [{"wall": start + offset, "mono": 1.0, "sampler": "node", "metric": "link.tx_bytes.rate", "value": 5.0, "labels": {"host": "someone-else", "roles": "client"}}]})
rate = 1000 * spec["concurrency"]
wall, t, done, moved = start + offset, 0.0, 0, 0
rows = []
while not stop.is_set() and t < 500:
    time.sleep(0.02)
    if mode == "freeze" and t >= 3:
        time.sleep(600)  # a node gone silent: its process still there, no word from it
    if mode == "die" and t >= 3:
        out.flush(); import os; os._exit(0)  # a node gone: the stream ends, no word of its own
    wall += 1.0; t += 1.0; done += 1; moved += rate
    send({"table": "timeline", "rows": [{"t": t, "wall": wall, "bytes": rate, "active": spec["concurrency"], "done": done, "failed": 0, "campaign_id": spec["campaign_id"]}]})
    send({"table": "transfers", "rows": [{"campaign_id": spec["campaign_id"], "transfer_id": f"{spec['campaign_id']}-{done}", "start_time": wall - 1, "finish_time": wall, "file_size": rate, "file_state": "FINISHED", "concurrency": spec["concurrency"]}]})
wall += 0.4; t += 0.4
send({"table": "timeline", "rows": [{"t": t, "wall": wall, "bytes": rate // 2, "active": 0, "done": done, "failed": 0}]})
moved += rate // 2
send({"table": "campaigns", "rows": [{"cell_id": req["cell_id"], "campaign_id": spec["campaign_id"], "concurrency": spec["concurrency"], "repeat": 0, "mode": "push", "client": "xrootd", "files": done, "bytes": moved, "start_time": start + offset, "finish_time": wall, "rate": 0, "finished": done, "failed": 0, "settings": json.dumps({"spec": spec, "level": {"ended_by": "coordinator"}})}]})
send({"end": {"campaign": {}}})
'''


class Host:
    def __init__(self, name: str):
        self.name, self.transport, self.address = name, "fake", "10.0.0.1"


class FakeTransport:
    shares_fs = True

    def __init__(self, script: Path, host: Host, offset: float, mode: str, start: float):
        self.script, self.host, self.offset, self.mode, self.start = script, host, offset, mode, start
        self.argv: list[str] | None = None

    def ready(self) -> None:
        pass

    def spawn(self, argv, *, name, log=None, env=None, procs=None, pipe=False):
        self.argv = list(argv)
        return proc.spawn([sys.executable, str(self.script), self.host.name, str(self.offset),
                           self.mode, str(self.start)], name=name, log=log, procs=procs,
                          pipe=pipe, stdin=pipe)


@pytest.fixture
def setup(tmp_path):
    script = tmp_path / "fake_agent.py"
    script.write_text(FAKE)
    made: dict[str, FakeTransport] = {}

    def make(plan: dict[str, tuple[float, str, float]]):
        def transport_for(h):
            off, mode, start = plan[h.name]
            made[h.name] = FakeTransport(script, h, off, mode, start)
            return made[h.name]
        return transport_for
    return tmp_path, make, made


def collect():
    tables: dict[str, list[dict]] = {}
    lock = threading.Lock()

    def sink(table, rows):
        assert lock.acquire(blocking=False), "two sinks at once"
        try:
            tables.setdefault(table, []).extend(rows)
        finally:
            lock.release()
    return tables, sink


def spec(**kw):
    base = dict(files=4, file_size=1 << 20, concurrency=3, campaign_id="cell-c3-r0",
                delete_after_verify=True, duration={"min": 6, "max": 12},
                steady={"rule": "autoterm", "window": 4, "points": 2, "tolerance": 0.5})
    return CampaignSpec(**{**base, **kw})


def test_host_specs_split_slots_and_keep_names_apart():
    s = host_specs(spec(concurrency=5), ["a", "b", "c"])
    assert [x.concurrency for x in s.values()] == [2, 2, 1]
    assert len({x.campaign_id for x in s.values()}) == 3
    assert all(x.level.rule == "none" and x.level.max > 12 for x in s.values())  # coordinator ends it
    assert list(host_specs(spec(concurrency=1), ["a", "b"])) == ["a"]  # no slot: does not run
    fc = host_specs(CampaignSpec(files=5, concurrency=4), ["a", "b"])
    assert [x.files for x in fc.values()] == [3, 2] and fc["a"].level is None


def test_level_merged_across_hosts_on_the_run_clock(setup):
    tmp, make, made = setup
    now = time.time()
    # host b's clock is 7.5 s ahead and it starts its level 0.5 s after a
    transport_for = make({"a": (0.0, "ok", now), "b": (7.5, "ok", now + 0.5)})
    tables, sink = collect()
    procs = proc.ProcessSet(record=False)
    row = run_distributed(spec(), dest="root://10.0.0.9:1094", hosts=[Host("a"), Host("b")],
                          sink=sink, offsets={"a": {"offset_s": 0.0, "rtt_s": 1e-4},
                                              "b": {"offset_s": 7.5, "rtt_s": 2e-4}},
                          cell_id="cell", procs=procs, raw_dir=tmp / "raw",
                          transport_for=transport_for)
    assert made["a"].argv[-1] == "campaign-agent"
    tl = tables["timeline"]
    ts = [r["t"] for r in tl]
    assert ts[:-1] == [float(k + 1) for k in range(len(ts) - 1)]  # contiguous 1 s buckets
    assert abs(tl[0]["wall"] - (now + 1)) < 1e-6  # on the run's clock: b's offset removed
    hosts_bytes = 3000  # a has 2 slots x 1000 B/s, b 1
    assert sum(r["bytes"] for r in tl) == json.loads(row["settings"])["timeline"]["hosts_bytes"]
    assert tl[0]["bytes"] == 2000 + 500 and tl[3]["bytes"] == hosts_bytes
    s = json.loads(row["settings"])
    assert s["level"]["decided_by"] == "coordinator" and s["level"]["ended_by"] == "steady"
    assert s["level"]["t_end"] >= 6
    assert s["hosts"]["b"]["clock_offset_s"] == 7.5 and s["hosts"]["b"]["slots"] == 1
    assert row["campaign_id"] == "cell-c3-r0" and row["concurrency"] == 3
    tr = tables["transfers"]
    assert {r["host"] for r in tr} == {"a", "b"}
    assert {r["campaign_id"] for r in tr} == {"cell-c3-r0"} and {r["concurrency"] for r in tr} == {3}
    assert min(r["start_time"] for r in tr if r["host"] == "b") >= now + 0.5 - 1e-6
    assert row["bytes"] == sum(r["bytes"] for r in tl)
    assert list(procs) == [] and all(not (tmp / "raw" / f"cell-c3-r0.{h}.jsonl").stat().st_size == 0
                                     for h in "ab")


def test_a_failing_agent_names_its_host_and_nothing_is_left(setup):
    tmp, make, made = setup
    now = time.time()
    transport_for = make({"a": (0.0, "ok", now), "b": (0.0, "fail", now)})
    tables, sink = collect()
    procs = proc.ProcessSet(record=False)
    with pytest.raises(XcbError, match="client host b: no route to the gateway"):
        run_distributed(spec(), dest="root://10.0.0.9:1094", hosts=[Host("a"), Host("b")],
                        sink=sink, procs=procs, raw_dir=tmp / "raw", transport_for=transport_for)
    assert list(procs) == []


def test_stop_event_cancels_and_a_hanging_agent_is_stopped(setup, monkeypatch):
    from xcbench.scaleout import distributed
    monkeypatch.setattr(distributed, "CANCEL_WAIT", 2.0)
    tmp, make, made = setup
    now = time.time()
    transport_for = make({"a": (0.0, "hang", now)})
    tables, sink = collect()
    procs = proc.ProcessSet(record=False)
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    t0 = time.time()
    with pytest.raises(XcbError, match="client host a"):
        run_distributed(spec(), dest="root://10.0.0.9:1094", hosts=[Host("a")], sink=sink,
                        procs=procs, raw_dir=tmp / "raw", transport_for=transport_for,
                        stop_event=stop)
    assert time.time() - t0 < 20 and list(procs) == []


def test_a_host_lost_mid_level_fails_alone_and_the_rest_of_the_level_is_kept(setup):
    tmp, make, made = setup
    now = time.time()
    transport_for = make({"a": (0.0, "samples", now), "b": (0.0, "die", now)})
    tables, sink = collect()
    procs = proc.ProcessSet(record=False)
    row = run_distributed(spec(), dest="root://10.0.0.9:1094", hosts=[Host("a"), Host("b")],
                          sink=sink, offsets={"a": {"offset_s": 0.0}, "b": {"offset_s": 0.0}},
                          cell_id="cell", procs=procs, raw_dir=tmp / "raw",
                          transport_for=transport_for)
    s = json.loads(row["settings"])
    assert set(s["lost"]) == {"b"} and "without its records" in s["lost"]["b"]["why"]
    assert set(s["hosts"]) == {"a"} and s["level"]["ended_by"] == "steady"
    tl = tables["timeline"]
    b_bytes = 3 * 1000  # b's three buckets (1 slot) before it went: kept, counted once
    assert sum(r["bytes"] for r in tl) == s["timeline"]["hosts_bytes"] == row["bytes"] + b_bytes
    (f,) = tables["findings"]
    assert f["what"].startswith("client host b lost mid-level") and f["severity"] == "error"
    # a host's samples: on the run's clock, labelled with the host the coordinator knows
    (smp,) = tables["samples"]
    assert smp["labels"]["host"] == "a" and smp["cell_id"] == "cell" and smp["mono"] is None
    assert list(procs) == []


def test_a_host_lost_alone_fails_the_level(setup):
    tmp, make, made = setup
    transport_for = make({"b": (0.0, "die", time.time())})
    tables, sink = collect()
    with pytest.raises(XcbError, match="client host b: the agent ended without its records"):
        run_distributed(spec(concurrency=1), dest="root://10.0.0.9:1094", hosts=[Host("b")],
                        sink=sink, procs=proc.ProcessSet(record=False), raw_dir=tmp / "raw",
                        transport_for=transport_for)


def test_a_host_gone_silent_is_let_go_and_the_level_kept(setup, monkeypatch):
    from xcbench.scaleout import distributed
    monkeypatch.setattr(distributed, "STALL", 1.0)
    tmp, make, made = setup
    now = time.time()
    transport_for = make({"a": (0.0, "ok", now), "b": (0.0, "freeze", now)})
    tables, sink = collect()
    procs = proc.ProcessSet(record=False)
    row = run_distributed(spec(), dest="root://10.0.0.9:1094", hosts=[Host("a"), Host("b")],
                          sink=sink, procs=procs, raw_dir=tmp / "raw", transport_for=transport_for)
    s = json.loads(row["settings"])
    assert set(s["lost"]) == {"b"} and s["lost"]["b"]["why"].startswith("no word from it for 1 s")
    assert set(s["hosts"]) == {"a"} and list(procs) == []
