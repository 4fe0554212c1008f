"""iperf3 JSON parsing (real iperf3 3.12 output kept under tests/data/iperf3/) and the sweep's
bookkeeping with a recording runner (which host runs what, server bound and always stopped)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xcbench.errors import XcbError
from xcbench.network import baseline
from xcbench.system import proc

DATA = Path(__file__).parents[2] / "data" / "iperf3"


def _load(name: str) -> tuple[str, dict]:
    text = (DATA / name).read_text()
    return text, json.loads(text)


def test_forward_result_gives_receiver_rate_sender_retransmits_and_cpu():
    text, raw = _load("loopback-P2.json")
    got = baseline.parse_iperf3(text)
    assert got["direction"] == "write" and got["streams"] == 2 and got["seconds"] == 1
    assert got["bits_per_second"] == raw["end"]["sum_received"]["bits_per_second"]
    assert got["bits_per_second"] != raw["end"]["sum_sent"]["bits_per_second"]
    assert got["retransmits"] == raw["end"]["sum_sent"]["retransmits"]
    assert got["cpu_host"] == raw["end"]["cpu_utilization_percent"]["host_total"]
    assert got["cpu_remote"] == raw["end"]["cpu_utilization_percent"]["remote_total"]


def test_reverse_result_is_the_read_direction():
    text, raw = _load("loopback-P2-R.json")
    got = baseline.parse_iperf3(text)
    assert got["direction"] == "read" and raw["start"]["test_start"]["reverse"] == 1
    assert got["bits_per_second"] == raw["end"]["sum_received"]["bits_per_second"]
    assert got["retransmits"] == raw["end"]["sum_sent"]["retransmits"] > 0


@pytest.mark.parametrize("text, msg", [
    ((DATA / "refused.json").read_text(), "iperf3: unable to connect to server"),
    ("", "iperf3: no JSON result"),
    ("iperf3: error - something\n", "iperf3: no JSON result"),
    ("[1, 2]", "not an object"),
    ('{"start": {}, "end": {}}', "no end.sum_received"),
])
def test_errors_are_one_line(text, msg):
    with pytest.raises(XcbError, match=msg) as e:
        baseline.parse_iperf3(text)
    assert "\n" not in str(e.value)


def test_client_command_binds_the_client_and_reverses_only_reads():
    w = [str(a) for a in baseline.client_cmd("10.0.0.1", "10.0.0.2", 5201, 8, "write", 2)]
    r = [str(a) for a in baseline.client_cmd("10.0.0.1", "10.0.0.2", 5201, 8, "read", 2)]
    assert w[:3] == ["iperf3", "-c", "10.0.0.2"] and w[w.index("-B") + 1] == "10.0.0.1"
    assert w[w.index("-P") + 1] == "8" and w[w.index("-t") + 1] == "2" and "-J" in w
    assert "-R" not in w and r == w + ["-R"]


class RecordingPairRunner:
    """Answers every client command with a captured result; remembers where things ran."""

    def __init__(self, fail_streams: int | None = None):
        self.runs: list[tuple[str, list[str]]] = []
        self.spawned: list[tuple[str, list[str]]] = []
        self.stopped: list[str] = []
        self.fail_streams = fail_streams

    def run(self, host, cmd, *, timeout):
        cmd = [str(c) for c in cmd]
        self.runs.append((host, cmd))
        n = int(cmd[cmd.index("-P") + 1])
        name = "refused.json" if n == self.fail_streams else \
            ("loopback-P2-R.json" if "-R" in cmd else "loopback-P2.json")
        return proc.Completed(cmd, 0, (DATA / name).read_text(), "", 0.1)

    def spawn(self, host, cmd, *, name, procs):
        self.spawned.append((host, [str(c) for c in cmd]))
        return object()

    def stop(self, host, p):
        self.stopped.append(host)


@pytest.fixture
def no_wait(monkeypatch):
    monkeypatch.setattr(baseline, "_wait_server", lambda *a: None)


def test_sweep_runs_every_point_from_the_client_against_the_gateway(no_wait, tmp_path):
    r = RecordingPairRunner()
    pairs = [("10.1.0.1", "10.2.0.1"), ("10.1.0.2", "10.2.0.1")]
    rows = baseline.sweep(pairs, streams=[1, 4], seconds=1, pair_runner=r, raw_dir=tmp_path)
    assert [(x["client"], x["streams"], x["direction"]) for x in rows] == [
        (c, n, d) for c, _ in pairs for n in (1, 4) for d in ("write", "read")]
    assert all(x["gateway"] == x["host"] == "10.2.0.1" and x["bits_per_second"] > 0 for x in rows)
    assert {h for h, _ in r.runs} == {"10.1.0.1", "10.1.0.2"}
    assert [h for h, _ in r.spawned] == ["10.2.0.1", "10.2.0.1"] == r.stopped
    for _, cmd in r.spawned:
        assert cmd[:2] == ["iperf3", "-s"] and cmd[cmd.index("-B") + 1] == "10.2.0.1"
    assert len(list(tmp_path.glob("*.json"))) == 8


def test_a_failed_point_is_a_row_with_its_error_and_the_sweep_goes_on(no_wait):
    r = RecordingPairRunner(fail_streams=4)
    rows = baseline.sweep(streams=[1, 4, 8], pair_runner=r)
    bad = [x for x in rows if x["error"]]
    assert [x["streams"] for x in bad] == [4, 4] and all(x["bits_per_second"] is None for x in bad)
    assert all(x["bits_per_second"] > 0 for x in rows if x["streams"] != 4)
    assert r.stopped == ["127.0.0.1"]


def test_the_server_is_stopped_when_the_sweep_fails(monkeypatch):
    r = RecordingPairRunner()

    def boom(*a):
        raise XcbError("iperf3: server did not start")
    monkeypatch.setattr(baseline, "_wait_server", boom)
    with pytest.raises(XcbError):
        baseline.sweep(streams=[1], pair_runner=r)
    assert r.stopped == ["127.0.0.1"] and not r.runs


@pytest.mark.parametrize("kw, msg", [({"streams": []}, "streams"), ({"streams": [0]}, "streams"),
                                     ({"seconds": 0}, "seconds"), ({"seconds": 1.5}, "seconds"),
                                     ({"directions": ["up"]}, "directions")])
def test_bad_settings_are_refused_before_any_process(kw, msg):
    r = RecordingPairRunner()
    with pytest.raises(XcbError, match=msg):
        baseline.sweep(pair_runner=r, **kw)
    assert not r.spawned


def test_rows_carry_the_declared_baseline_columns(no_wait):
    from xcbench.store.tables import BASELINE
    rows = baseline.sweep(streams=[1], pair_runner=RecordingPairRunner())
    assert all(set(x) == set(BASELINE) for x in rows)


def test_a_control_connection_reset_is_retried(no_wait, monkeypatch):
    monkeypatch.setattr(baseline.time, "sleep", lambda s: None)
    reset = json.dumps({"start": {}, "intervals": [], "end": {},
                        "error": "unable to receive control message: Connection reset by peer"})

    class Flaky(RecordingPairRunner):
        def run(self, host, cmd, *, timeout):
            done = super().run(host, cmd, timeout=timeout)
            return done if len(self.runs) > 1 else proc.Completed(done.args, 1, reset, "", 0.1)
    r = Flaky()
    rows = baseline.sweep(streams=[1], directions=["write"], pair_runner=r)
    assert len(r.runs) == 2 and rows[0]["error"] is None and rows[0]["bits_per_second"] > 0
    r = RecordingPairRunner(fail_streams=1)  # "unable to connect": not transient, not retried
    rows = baseline.sweep(streams=[1], directions=["write"], pair_runner=r)
    assert len(r.runs) == 1 and "unable to connect" in rows[0]["error"]


def test_the_runs_baseline_measures_the_directions_it_is_given(no_wait):
    """A run whose campaigns only push (the self-test's) asks for the write direction only."""
    r = RecordingPairRunner()
    rows = baseline.iperf3(streams=[1, 4], seconds=1, pair_runner=r, directions=("write",))
    assert [(x["streams"], x["direction"]) for x in rows] == [(1, "write"), (4, "write")]
    assert not any("-R" in cmd for _, cmd in r.runs)
