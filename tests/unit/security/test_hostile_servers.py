"""A hostile Prometheus or FTS server (small real HTTP servers on 127.0.0.1): whatever it answers,
a request ends within its deadline, an answer is cut at its cap, no announced figure is trusted
past its bound and nothing is written outside the run."""

from __future__ import annotations

import json
import threading
import time
import tracemalloc
from datetime import UTC, datetime

import pytest

from tests.support.peers import HttpPeer, endless, send, trickle
from xcbench.campaign.spec import CampaignSpec
from xcbench.scaleout import fts3
from xcbench.system import bounded_http
from xcbench.telemetry import promapi
from xcbench.telemetry import prometheus as prom
from xcbench.telemetry.promapi import PromClient, PromError

SLACK = 5.0  # s: thread start and scheduling on a shared 2-core machine; not what is measured


def test_a_trickling_prometheus_costs_one_deadline_not_forever():
    stop = threading.Event()
    with HttpPeer(lambda h: trickle(h, 0.2, stop)) as peer:
        c = PromClient(peer.url, timeout=1.5)  # each byte comes well within the per-read timeout
        t0 = time.monotonic()
        with pytest.raises(PromError, match="no answer in 1.5 s"):
            c.query("up")
        took = time.monotonic() - t0
        stop.set()
    assert 1.5 <= took < 1.5 + SLACK


def test_an_endless_answer_is_cut_at_the_cap_and_memory_stays_bounded(monkeypatch):
    monkeypatch.setattr(promapi, "MAX_ANSWER", 2 << 20)
    with HttpPeer(endless) as peer:
        c = PromClient(peer.url, timeout=30)
        tracemalloc.start()
        with pytest.raises(PromError, match="more than 2,097,152 bytes"):
            c.query("up")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 8 << 20  # the cap and one chunk, not the 6 GB the server would send


def test_a_declared_huge_answer_is_refused_before_it_is_read(monkeypatch):
    monkeypatch.setattr(promapi, "MAX_ANSWER", 1 << 20)
    with HttpPeer(lambda h: send(h, b"{}", headers={"Content-Length": str(10 << 30)})) as peer:
        with pytest.raises(PromError, match="10,737,418,240 bytes"):
            PromClient(peer.url, timeout=5).query("up")


def test_a_redirect_is_not_followed_and_credentials_stay():
    with HttpPeer(lambda h: send(h, b"{}")) as elsewhere:
        with HttpPeer(lambda h: send(h, b"", 302, {"Location": elsewhere.url + "/x"})) as peer:
            c = PromClient(peer.url, ("bearer", "a-token-that-must-stay-here"), timeout=5)
            with pytest.raises(PromError, match="HTTP 302"):
                c.query("up")
    assert len(peer.requests) == 1 and elsewhere.requests == []


def test_a_gzip_bomb_is_not_inflated():
    import gzip
    bomb = gzip.compress(b" " * (64 << 20))
    with HttpPeer(lambda h: send(h, bomb, headers={"Content-Encoding": "gzip"})) as peer:
        with pytest.raises(PromError, match="compressed answer"):
            PromClient(peer.url, timeout=5).query("up")
    assert peer.requests[0][2].get("Accept-Encoding") == "identity"


def _config(interval: str):
    body = {"status": "success", "data": {"yaml": f"global:\n  scrape_interval: {interval}\n"}}
    return json.dumps(body).encode()


def _stale_prometheus(h):
    """A config announcing a scrape interval of a year; every scrape long in the past."""
    if h.path.startswith("/api/v1/status/config"):
        return send(h, _config("365d"))
    old = {"resultType": "vector", "result": [{"metric": {}, "value": [1.0, "1000"]}]}
    send(h, json.dumps({"status": "success", "data": old}).encode())


def test_an_announced_scrape_interval_is_capped_and_the_wait_for_ingestion_too(tmp_path, monkeypatch):
    monkeypatch.setattr(prom, "MAX_INGEST_WAIT", 2.0)  # the real cap is 121 s
    with HttpPeer(_stale_prometheus) as peer:
        s = prom.PrometheusSampler(PromClient(peer.url, timeout=2), cell_id="c",
                                   sink=lambda *a: None, raw_dir=tmp_path / "run" / "raw")
        s.start()
        assert s.step == prom.MAX_ANNOUNCED_STEP
        now = time.time()
        t0 = time.monotonic()
        s.level_end(now - 10, now, {})
        took = time.monotonic() - t0
    assert took < 2.0 + len(prom.pq.QUERIES) * 2 + SLACK
    assert {p.name for p in tmp_path.rglob("*")} <= {"run", "raw", "queries.promql", "hosts.json",
                                                     "levels.jsonl"}


def test_a_yaml_bomb_in_the_announced_config_is_not_expanded():
    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True))
    body = json.dumps({"status": "success", "data": {"yaml": bomb}}).encode()
    with HttpPeer(lambda h: send(h, body)) as peer:
        s = prom.PrometheusSampler(PromClient(peer.url, timeout=5), cell_id="c")
        t0 = time.monotonic()
        assert s._scrape_interval() == prom.DEFAULT_STEP
    assert time.monotonic() - t0 < SLACK


# --- FTS ---------------------------------------------------------------------------------
ROOT = json.dumps({"api": {"major": 3, "minor": 12, "patch": 0},
                   "schema": {"major": 8, "minor": 0, "patch": 0},
                   "delegation": {"major": 1, "minor": 0, "patch": 0}}).encode()


def _fts_peer(files_answer):
    def answer(h):
        if h.path in ("/", "//"):
            return send(h, ROOT)
        return files_answer(h)
    return HttpPeer(answer)


def test_fts_a_trickling_answer_ends_at_the_request_deadline(monkeypatch):
    monkeypatch.setattr(fts3, "REQUEST_DEADLINE", 1.5)
    stop = threading.Event()
    with _fts_peer(lambda h: trickle(h, 0.2, stop)) as peer:
        ctx = fts3.connect(peer.url, token="fts-t0ken-for-the-test")
        t0 = time.monotonic()
        with pytest.raises(bounded_http.HttpLimit):
            ctx.get("/jobs/abc/files")
        took = time.monotonic() - t0
        stop.set()
    assert took < 1.5 + SLACK


def test_fts_an_endless_answer_is_cut(monkeypatch):
    monkeypatch.setattr(fts3, "MAX_ANSWER", 1 << 20)
    with _fts_peer(endless) as peer:
        ctx = fts3.connect(peer.url, token="fts-t0ken-for-the-test")
        with pytest.raises(bounded_http.HttpLimit, match="more than 1,048,576 bytes"):
            ctx.get("/jobs/abc/files")


def test_fts_timestamps_spanning_centuries_size_nothing():
    """One file from year 1 to year 9999 (and absurd sizes, durations, ids): the rows keep no
    time outside the job's life, and the rebuilt timeline stays the job's length."""
    from tests.support.fts3_double import Fts3Double

    class Hostile(Fts3Double):
        def get(self, path):
            if path.endswith("/retries"):
                return 200, [{"attempt": "x", "datetime": "0001-01-01T00:00:00", "reason": "r" * 10**6}]
            if path.endswith("/files"):
                return 200, [{"file_id": "../../config", "file_state": "FINISHED",
                              "start_time": "0001-01-01T00:00:00", "finish_time": "9999-12-31T23:59:59",
                              "filesize": 1e300, "tx_duration": "forever", "retry": 10**12,
                              "file_metadata": "{\"file_index\": -5}", "checksum": ["x"]},
                             {"file_id": 7, "file_state": "FAILED", "start_time": 5,
                              "finish_time": "2999-01-01T00:00:00", "filesize": -1}]
            return super().get(path)

    spec = CampaignSpec(campaign_id="c1", files=2, file_size=1 << 20)
    now = time.time()
    with Hostile(token="fts-t0ken-for-the-test") as double:
        ctx = fts3.connect(double.url, token="fts-t0ken-for-the-test")
        rows = fts3.harvest(ctx, "job1", spec, "cell", "fts3", window=(now - 60, now))
    assert len(rows) == 3  # file 7 with its failed attempt; the one with a bad id without
    for r in rows:
        assert r["start_time"] is None and r["finish_time"] is None
        assert r["file_size"] in (None, 0) and r["tx_duration"] is None
        assert r["retry"] <= fts3.MAX_RETRIES and len(r["reason"] or "") <= fts3.MAX_TEXT
    assert fts3.timeline_rows(rows, spec, "cell") == []
    real = dict(rows[0], start_time=now - 3, finish_time=now - 1, file_state="FINISHED",
                transferred=1)
    # a 2 s transfer: two 1 s buckets (figures.steady.timeline_from_transfers, the one rebuild)
    assert len(fts3.timeline_rows([real], spec, "cell")) == 2


def test_fts_times_within_the_window_are_kept():
    t = datetime.fromtimestamp(1_700_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    assert fts3._ts(t, (1_700_000_000 - 5, 1_700_000_000 + 5)) == 1_700_000_000
    assert fts3._ts(t, (1_800_000_000, 1_800_000_010)) is None
    assert fts3._ts("9999-12-31T23:59:59", None) is not None  # no window: parsed only
