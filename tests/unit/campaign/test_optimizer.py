"""The FTS3 optimizer emulation on scripted inputs: each rule of OptimizerConnections.cpp."""

import math

import pytest

from xcbench.campaign.optimizer import AttemptView, Optimizer, PairState, observe
from xcbench.campaign.spec import OptimizerSpec

MB = 1 << 20


def opt(mode="normal", **kw):
    return Optimizer(OptimizerSpec(mode=mode, **kw), max_active=60)


def state(t, thr=100 * MB, sr=100.0, queue=1000, fs=100 * MB, retries=0):
    return PairState(timestamp=t, throughput=thr, success_rate=sr, queue_size=queue,
                     filesize_avg=fs, retry_count=retries)


def started(o, value, t=0.0, **kw):
    """An optimizer that already decided ``value`` (FTS: a value stored in t_optimizer)."""
    d = o.step(state(t, **kw))
    assert d.reason.startswith("No information.")
    o.value = value
    return o


def test_first_decision_starts_halfway_with_ema_seeded():
    o = opt()
    d = o.step(state(0, thr=5 * MB))
    assert (d.previous, d.decision) == (0, 2 + (60 - 2) // 2)
    assert d.reason == "No information. Start halfway."
    assert d.ema == 5 * MB


def test_configured_range_starts_at_max_and_fixed_range_stays():
    d = opt(range_configured=True, min_active=5, max_active=40).step(state(0))
    assert (d.decision, d.reason) == (40, "No information. Use configured range max.")
    o = opt(min_active=8, max_active=8)
    o.step(state(0))
    d = o.step(state(70, thr=1))
    assert (d.decision, d.reason) == (8, "Range fixed")


def test_ema_uses_alpha_and_ignores_zero_samples():
    o = started(opt(), 20, thr=100.0)
    o.step(state(70, thr=200.0))
    assert o.previous.ema == pytest.approx(0.1 * 200 + 0.9 * 100)
    before = o.previous.ema
    o.step(state(140, thr=0.0))
    assert o.previous.ema == before


def test_steady_state_is_skipped_until_the_steady_interval():
    o = started(opt(), 20, thr=100.0)
    assert o.step(state(30, thr=0.0)) is None  # same success rate and EMA, 30 s < 60 s
    d = o.step(state(61, thr=0.0))
    assert d is not None and d.reason == "Good link efficiency. Increment"


def test_good_success_and_rising_throughput_steps_up_by_mode():
    for mode, step in (("conservative", 1), ("normal", 2), ("aggressive", 2)):
        o = started(opt(mode), 20, thr=100.0)
        d = o.step(state(70, thr=200.0))
        assert d.decision == 20 + step, mode
        assert d.reason == ("Good link efficiency, current average throughput is larger than "
                            "the preceding average")


def test_throughput_deterioration_rules():
    # small deterioration (same order of magnitude of the EMA): hold
    o = started(opt(), 20, thr=100 * MB)
    d = o.step(state(70, thr=50 * MB))
    assert (d.decision, d.reason) == (20, "Good link efficiency, small throughput deterioration")
    # EMA loses an order of magnitude (rounded log10): step down
    o = started(opt(ema_alpha=0.9), 20, thr=100 * MB)
    d = o.step(state(70, thr=1 * MB))
    assert (d.decision, d.reason) == (19, "Good link efficiency, throughput deterioration")
    # ... unless the files got an order of magnitude smaller: step up
    o = started(opt(ema_alpha=0.9), 20, thr=100 * MB, fs=1000 * MB)
    d = o.step(state(70, thr=1 * MB, fs=10 * MB))
    assert d.decision == 22
    assert d.reason == "Good link efficiency, throughput deterioration, avg. filesize decreasing"


def test_queue_emptying_holds():
    o = started(opt(), 20, thr=100.0)
    d = o.step(state(70, thr=200.0, queue=5))
    assert (d.decision, d.reason) == (20, "Queue emptying. Hold on.")


def test_low_success_rate_backs_off_unless_improving():
    o = started(opt(), 20, sr=100.0)
    d = o.step(state(70, sr=90.0))
    assert (d.decision, d.reason) == (19, "Bad link efficiency")
    d = o.step(state(140, sr=90.0, thr=101 * MB))
    assert (d.decision, d.reason) == (18, "Bad link efficiency, no changes")
    d = o.step(state(210, sr=96.0))  # better, >= base 96, retries not up: keep
    assert (d.decision, d.reason) == (18, "Bad link efficiency but progressively improving")
    d = o.step(state(280, sr=96.5, retries=3))  # better but more retries: back off
    assert d.decision == 17


def test_no_throughput_information_holds():
    o = started(opt(), 20, thr=0.0)
    d = o.step(state(70, thr=0.0, sr=99.0))
    assert (d.decision, d.reason) == (20, "Steady, not enough throughput information")


def test_clamped_to_the_range_with_reasons():
    o = started(opt(min_active=2, max_active=21), 20, thr=100.0)
    d = o.step(state(70, thr=200.0))
    assert d.decision == 21
    assert d.reason.endswith(". Hit upper range limit. Using *->* link configuration")
    o = started(opt(min_active=20, max_active=30), 20, sr=100.0)
    d = o.step(state(70, sr=50.0))
    assert d.decision == 20 and ". Hit lower range limit" in d.reason
    o = started(opt(min_active=2, max_active=21, range_configured=True), 20, thr=100.0)
    d = o.step(state(70, thr=200.0))
    assert d.reason.endswith(". Hit upper range limit")


def test_conservative_mode_needs_files_in_the_queue():
    o = started(opt("conservative"), 20, thr=100.0)
    d = o.step(state(70, thr=200.0, queue=20))
    assert (d.decision, d.reason.split(". ")[-1]) == (20, "Not enough files in the queue")


def test_normal_mode_limits_connections_to_queue_times_streams():
    o = started(opt("normal", max_streams=1), 20, thr=100.0)
    d = o.step(state(70, thr=200.0, queue=21))  # 22 > 21 * 1
    assert (d.decision, d.reason.split(". ")[-1]) == (20, "Too many streams")


def test_a_scripted_trajectory():
    """Ramp-up while throughput rises, hold at the plateau, back off on failures."""
    o = opt(min_active=2, max_active=12)
    decisions = [o.step(state(0, thr=10.0)).decision]
    for k, (thr, sr) in enumerate([(20, 100), (40, 100), (80, 100), (80, 100), (60, 100),
                                   (60, 90), (60, 90), (60, 100)], start=1):
        d = o.step(state(70.0 * k, thr=float(thr), sr=float(sr)))
        decisions.append(d.decision if d else None)
    assert decisions == [7, 9, 11, 12, 12, 12, 11, 10, 12]


def test_observe_matches_the_fts_data_source():
    now = 1000.0
    views = [AttemptView(900, 950, 100, 100, "FINISHED"),       # 100 B in 50 s, inside window
             AttemptView(960, 980, 200, 200, "FINISHED"),
             AttemptView(970, 990, 50, 10, "FAILED", recoverable=True),
             AttemptView(975, 985, 50, 0, "FAILED", recoverable=False),  # EEXIST etc.: ignored
             AttemptView(990, None, 1000, 300, "ACTIVE")]
    s = observe(views, queue_size=7, retry_waiting=2, now=now, scale=0.1)
    # avg duration 35 s > 30*0.1 -> 15 min window scaled: 90 s, from 910
    window = 900 * 0.1
    expect = (100 / 50 * (950 - 910) + 200 + 300 / 10 * 10) / window
    assert s.throughput == pytest.approx(expect)
    assert s.success_rate == math.ceil(2 * 100 / 3)
    assert (s.queue_size, s.retry_count, s.active) == (7, 2, 1)
    assert s.filesize_avg == pytest.approx((100 + 200 + 1000) / 3)
    assert observe([], queue_size=0, retry_waiting=0, now=now).success_rate == 100.0
