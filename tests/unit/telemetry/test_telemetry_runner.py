"""TelemetryRunner driven by a fake clock: the loop's schedule, gaps, partial samples, lifecycle."""

from __future__ import annotations

import time

import pytest

from tests.support.samplers import Collect, Counting, FakeTime
from xcbench.store.tables import GAP, SAMPLE
from xcbench.telemetry import HostSampler, Rates, SampleGap, Sampler, TelemetryRunner


class Broken(Sampler):
    name = "broken"

    def sample(self, wall: float, mono: float) -> list[dict]:
        raise ConnectionError("cluster unreachable")


def make(samplers, fake: FakeTime, sink: Collect, interval: float = 1.0) -> TelemetryRunner:
    return TelemetryRunner(samplers, interval=interval, sink=sink, cell_id="cell-1",
                           clock=fake.clock, mono=fake.mono_clock, sleep=fake.sleep)


def test_rows_have_the_sample_columns_cell_id_and_the_runner_clock():
    fake, sink = FakeTime(), Collect()
    r = make([Counting()], fake, sink).start()
    fake.step(3)
    fake.finish(r)
    rows = sink.rows("samples")
    assert len(rows) >= 4  # 4 ticks in the loop + the final one at stop
    for row in rows:
        assert set(row) == set(SAMPLE)
        assert row["cell_id"] == "cell-1" and row["sampler"] == "counting"
        assert row["labels"] == {"k": "v"}
    walls = [row["wall"] for row in rows[:4]]
    assert walls == [1_700_000_000.0, 1_700_000_001.0, 1_700_000_002.0, 1_700_000_003.0]
    assert [row["mono"] for row in rows[:4]] == [100.0, 101.0, 102.0, 103.0]
    assert fake.sleeps[:3] == [1.0, 1.0, 1.0]


def test_a_failing_sampler_writes_gaps_and_the_others_go_on():
    fake, sink = FakeTime(), Collect()
    good = Counting()
    r = make([Broken(), good], fake, sink).start()
    fake.step(4)
    fake.finish(r)
    gaps = sink.rows("gaps")
    assert len(gaps) >= 5 and good.calls >= 5
    assert len(sink.rows("samples", "counting")) == good.calls
    for g in gaps:
        assert set(g) == set(GAP)
        assert g["sampler"] == "broken" and g["cell_id"] == "cell-1"
        assert "ConnectionError: cluster unreachable" in g["error"]
    assert [g["wall"] for g in gaps[:3]] == [1_700_000_000.0, 1_700_000_001.0, 1_700_000_002.0]
    assert r.gaps == len(gaps)


def test_a_slow_sampler_skips_missed_ticks_and_keeps_the_grid():
    fake, sink = FakeTime(), Collect()
    slow = Counting(fake, cost=2.5)  # each sample takes 2.5 fake seconds with a 1 s interval
    r = make([slow], fake, sink).start()
    fake.step(3)
    fake.finish(r)
    # tick at 100 ends at 102.5 -> next grid point 103 (101, 102 skipped): sleeps of 0.5 s
    assert fake.sleeps[:3] == [0.5, 0.5, 0.5]
    monos = [row["mono"] for row in sink.rows("samples")[:3]]
    assert monos == [100.0, 103.0, 106.0]
    assert r.skipped >= 6


def test_sample_gap_keeps_the_partial_rows():
    class Partial(Sampler):
        name = "partial"

        def sample(self, wall, mono):
            raise SampleGap("xrootd pid 42 is gone", [self.row(wall, mono, "proc.rss_bytes", 1.0)])

    fake, sink = FakeTime(), Collect()
    r = make([Partial()], fake, sink).start()
    fake.step(1)
    fake.finish(r)
    assert sink.rows("samples")[0]["metric"] == "proc.rss_bytes"
    assert sink.rows("gaps")[0]["error"] == "xrootd pid 42 is gone"


def test_a_sampler_that_cannot_start_is_left_out_with_a_gap():
    class NoStart(Counting):
        name = "nostart"

        def start(self):
            raise PermissionError("no admin socket")

    fake, sink = FakeTime(), Collect()
    bad, good = NoStart(), Counting()
    r = make([bad, good], fake, sink).start()
    fake.step(2)
    fake.finish(r)
    assert bad.calls == 0 and not bad.stopped
    assert good.calls >= 3 and good.started and good.stopped
    gaps = sink.rows("gaps")
    assert len(gaps) == 1 and gaps[0]["error"].startswith("start: PermissionError")


def test_a_failing_sink_does_not_stop_the_loop():
    fake = FakeTime()
    calls = []

    def sink(table, rows):
        calls.append(table)
        raise OSError("disk full")

    s = Counting()
    r = TelemetryRunner([s], interval=0.5, sink=sink, clock=fake.clock, mono=fake.mono_clock,
                        sleep=fake.sleep).start()
    fake.step(3)
    fake.finish(r)
    assert s.calls >= 4 and len(calls) >= 4
    assert fake.sleeps[:3] == [0.5, 0.5, 0.5]


def test_context_manager_with_the_real_clock_takes_a_final_sample_and_stops_samplers():
    sink = Collect()
    s = Counting()
    with TelemetryRunner([s, HostSampler()], interval=60, sink=sink) as r:
        assert r.running
        while r.ticks < 1:
            time.sleep(0.01)
        time.sleep(0.1)  # /proc/stat counts in 10 ms ticks: let some pass for cpu.busy
    assert not r.running and s.stopped
    assert s.calls == 2  # one at start, one at stop; stop() did not wait for the 60 s interval
    metrics = {row["metric"] for row in sink.rows("samples", "host")}
    assert {"net.rx_bytes", "net.rx_bytes.rate", "cpu.busy", "mem.available"} <= metrics


def test_interval_must_be_positive():
    with pytest.raises(ValueError):
        TelemetryRunner([], interval=0, sink=Collect())


def test_rates_from_counters_and_a_counter_reset():
    r = Rates()
    assert r.update(("m",), 10.0, 100) is None
    assert r.update(("m",), 12.0, 300) == 100.0
    assert r.update(("m",), 13.0, 50) is None  # restarted process: start over
    assert r.update(("m",), 14.0, 150) == 100.0
    s = Counting()
    rows = r.counter_rows(s, 1.0, 20.0, "x", 5.0, {"a": 1})
    assert [row["metric"] for row in rows] == ["x"]
    rows = r.counter_rows(s, 2.0, 22.0, "x", 9.0, {"a": 1})
    assert [(row["metric"], row["value"]) for row in rows] == [("x", 9.0), ("x.rate", 2.0)]


def test_min_interval_makes_a_slow_source_skip_ticks():
    class Slow(Counting):
        name = "slow"
        min_interval = 1.0

    fake, sink = FakeTime(), Collect()
    fast, slow = Counting(), Slow()
    r = make([fast, slow], fake, sink, interval=0.25).start()
    fake.step(8)
    assert fake._slept.acquire(timeout=10)  # 9 ticks done: 100.0, 100.25, ... 102.0
    assert fast.calls == 9
    assert slow.calls == 3  # at 100, 101, 102
    assert [row["mono"] for row in sink.rows("samples", "slow")] == [100.0, 101.0, 102.0]
    fake._slept.release()
    fake.finish(r)
