"""Borderline verdicts (analysis.verdicts.borderline): the rules decide as before; a figure within its own
measured noise of a rule's threshold makes that rule a borderline candidate of the verdict, so
two runs whose figures fall on either side of it both name that cause."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.evidence import _ev, _one_sentence, _role
from tests.support.synthrun import GIB
from xcbench.analysis.verdicts import borderline
from xcbench.analysis.verdicts.attribution import NEAR, SCALING, decide

Z = borderline.Z


def _ec(ratio: float, se: float, rep_se: float = 0.0, **kw):
    """An EC point: the replicated twin ran 1 GiB/s, this one ``ratio`` of it."""
    return _ev(rate=ratio * GIB, gateway_ceiling=4 * GIB, fio_bw=8 * GIB, ec_ratio=ratio,
               rep_pool="rep3", rep_rate=1.0 * GIB, rate_rel_se=se, rep_rate_rel_se=rep_se, **kw)


def _causes(ev, verdict):
    return borderline.causes(verdict, ev)


@pytest.mark.parametrize("ratio, verdict", [(0.82, "ec-overhead"), (0.84, "ec-overhead"),
                                            (0.86, "inconclusive"), (0.88, "inconclusive")])
def test_an_ec_ratio_within_its_noise_of_the_threshold_is_a_borderline_candidate(ratio, verdict):
    # +-5 % on each rate: 0.85 lies inside every one of these figures' intervals
    ev = _ec(ratio, 0.05, 0.05)
    got, reason = decide(ev)
    assert got == verdict and ev["borderline"] is True, reason  # the rule decides as before
    assert _causes(ev, got) >= {"ec-overhead"}  # and both sides name EC
    (c,) = [c for c in ev["borderline_candidates"] if c["figure"] != "otherwise"]
    assert c["rule"] == "ec-overhead" and c["threshold"] == NEAR and c["at_most"]
    assert c["low"] < NEAR < c["high"]
    assert math.isclose(c["high"] / ratio, math.exp(Z * math.hypot(0.05, 0.05)))  # both rates' errors
    assert "; borderline: EC/replicated rate" in reason and _one_sentence(reason)


def test_an_ec_ratio_beyond_its_noise_is_not_borderline():
    ev = _ec(0.6, 0.05)
    assert decide(ev)[0] == "ec-overhead" and ev["borderline"] is False
    ev = _ec(0.97, 0.02)  # surely above 0.85: EC costs nothing worth naming
    v, reason = decide(ev)
    assert v != "ec-overhead" and ev["borderline"] is False and "borderline" not in reason


def test_without_noise_figures_nothing_is_borderline():
    for ratio in (0.84, 0.86):
        ev = _ec(ratio, math.nan)  # an old run: no rate error recorded
        decide(ev)
        assert ev["borderline"] is False


@pytest.mark.parametrize("busy, verdict", [(0.82, "inconclusive"), (0.88, "host-cpu")])
def test_host_cpu_busy_within_its_samples_noise_is_a_borderline_candidate(busy, verdict):
    ev = _ev(rate=0.2 * GIB, cores=2.0, roles={"gateway": _role(0.5, 2.0), "client": _role(0.9, 2.0)},
             host_busy=busy, host_busy_rel_se=0.03)
    got, reason = decide(ev)
    assert got == verdict and _causes(ev, got) >= {"host-cpu"}, reason
    assert "borderline: host CPU busy" in reason


def test_a_host_pegged_at_its_cores_is_not_borderline():
    # every sample at 100 %: no spread, whatever the rate's noise
    ev = _ev(rate=0.2 * GIB, cores=2.0, roles={"gateway": _role(0.5, 2.0)}, host_busy=1.0,
             host_busy_rel_se=0.0, rate_rel_se=0.2)
    assert decide(ev)[0] == "host-cpu" and ev["borderline"] is False


@pytest.mark.parametrize("share, verdict", [(0.83, "inconclusive"), (0.87, "storage-bandwidth")])
def test_a_fio_ceiling_share_within_the_noise_is_a_borderline_candidate(share, verdict):
    ev = _ev(rate=share * GIB, gateway_ceiling=4 * GIB, fio_bw=1.0 * GIB, rate_rel_se=0.03)
    got, reason = decide(ev)
    assert got == verdict and _causes(ev, got) >= {"storage-bandwidth"}, reason
    assert "borderline: share of the fio ceiling 8" in reason


def test_the_gateway_ceiling_counts_the_noise_of_both_rates():
    # R/G = 0.83: the chain's rate is exact here, the tmpfs ceiling's is +-5 %
    ev = _ev(rate=0.83 * GIB, gateway_ceiling=1.0 * GIB, fio_bw=8 * GIB, rate_rel_se=0.0,
             gateway_ceiling_rel_se=0.05)
    assert decide(ev)[0] == "inconclusive" and _causes(ev, "inconclusive") == {"inconclusive", "gateway"}
    ev = _ev(rate=0.83 * GIB, gateway_ceiling=1.0 * GIB, fio_bw=8 * GIB, rate_rel_se=0.0,
             gateway_ceiling_rel_se=0.0)
    assert decide(ev)[0] == "inconclusive" and ev["borderline"] is False


def test_a_rule_after_the_verdict_is_never_a_candidate():
    # the gateway is surely at its ceiling; fio's share straddles 0.85 but was never looked at
    ev = _ev(rate=0.99 * GIB, gateway_ceiling=1.0 * GIB, fio_bw=1.17 * GIB, rate_rel_se=0.05,
             gateway_ceiling_rel_se=0.0)
    assert decide(ev)[0] == "gateway" and ev["borderline"] is False


def test_a_growth_surely_past_the_threshold_is_concurrency_not_borderline():
    from xcbench.figures.stats import ratio_lower_bound
    ev = _ev(rate=0.2 * GIB, concurrency=1, best_higher_level=4, best_higher_rate=0.4 * GIB,
             best_higher_growth_low=ratio_lower_bound(1.0, 0.05, 2.0, 0.05))
    assert decide(ev)[0] == "concurrency" and ev["borderline"] is False


@given(se=st.floats(0.005, 0.2), a=st.floats(-1, 1), b=st.floats(-1, 1))
def test_two_runs_whose_figures_both_straddle_the_threshold_name_the_same_cause(se, a, b):
    """Two runs of one EC point: each figure anywhere in the band where its interval holds the
    threshold. Whichever side of 0.85 each falls on, both name ec-overhead: as the verdict or
    as its borderline candidate."""
    band = Z * math.hypot(se, se) * 0.999
    for x in (a, b):
        ev = _ec(NEAR * math.exp(x * band), se, se)
        verdict = decide(ev)[0]
        assert "ec-overhead" in _causes(ev, verdict)


@given(g=st.floats(1.0, 1.6), se=st.floats(0.001, 0.15))
def test_growth_is_named_surely_or_as_a_candidate_exactly_when_its_interval_reaches_it(g, se):
    low, high = g * math.exp(-Z * se), g * math.exp(Z * se)
    ev = _ev(rate=0.2 * GIB, concurrency=1, best_higher_level=4, best_higher_rate=g * 0.2 * GIB,
             best_higher_growth_low=low)
    verdict = decide(ev)[0]
    if low >= SCALING * (1 + 1e-9):
        assert verdict == "concurrency" and not ev["borderline"]
    elif low < SCALING * (1 - 1e-9) and high > SCALING * (1 + 1e-9):
        assert verdict == "inconclusive" and _causes(ev, verdict) == {"inconclusive", "concurrency"}
    elif high < SCALING * (1 - 1e-9):
        assert verdict == "inconclusive" and not ev["borderline"]


def _bw_and_busy_host(share: float, busy: float, **kw):
    """A storage point at ``share`` of its fio ceiling on a host ``busy`` (no role at a limit)."""
    return _ev(rate=share * GIB, gateway_ceiling=4 * GIB, fio_bw=1.0 * GIB, rate_rel_se=0.03,
               cores=2.0, roles={"gateway": _role(0.5, 2.0), "client": _role(0.9, 2.0)},
               host_busy=busy, host_busy_rel_se=0.002, **kw)


def test_a_verdict_decided_within_its_noise_names_what_its_other_side_would_be():
    # 87 % of the fio ceiling (+-3 %): storage-bandwidth, but 85 % is inside its interval; had it
    # fallen short, the busy host (90 %) was next: host-cpu is named as the other side
    ev = _bw_and_busy_host(0.87, 0.90)
    got, reason = decide(ev)
    assert got == "storage-bandwidth" and _causes(ev, got) == {"storage-bandwidth", "host-cpu"}, reason
    (other,) = [c for c in ev["borderline_candidates"] if c["figure"] == "otherwise"]
    assert other == {"rule": "host-cpu", "figure": "otherwise", "otherwise_of": "storage-bandwidth"}
    assert "on its other side the verdict would be host-cpu" in reason and _one_sentence(reason)
    # the run whose share fell short names host-cpu, with storage-bandwidth as its candidate
    ev2 = _bw_and_busy_host(0.83, 0.90)
    assert decide(ev2)[0] == "host-cpu" and _causes(ev2, "host-cpu") == {"host-cpu", "storage-bandwidth"}
    # surely past the threshold: nothing on the other side is named
    ev3 = _bw_and_busy_host(0.97, 0.90)
    assert decide(ev3)[0] == "storage-bandwidth" and ev3["borderline"] is False
    assert "_skip_rules" not in ev and "_skip_rules" not in ev3  # the other side's trial is a copy


def test_a_borderline_pass_with_nothing_after_it_names_inconclusive():
    ev = _ev(rate=0.87 * GIB, gateway_ceiling=4 * GIB, fio_bw=1.0 * GIB, rate_rel_se=0.03)
    got, reason = decide(ev)
    assert got == "storage-bandwidth" and _causes(ev, got) == {"storage-bandwidth", "inconclusive"}
    assert "the verdict would be inconclusive" in reason


@pytest.mark.parametrize("direction, term", [("write", "fio_write_bw"), ("read", "fio_read_bw")])
def test_a_fio_ceiling_share_takes_its_probes_between_run_term(direction, term):
    # 80 % of the ceiling, +-1 % on the rate: surely under 85 %; the probe on another fresh
    # cluster gave a ceiling 9 % apart, and with that term the share is borderline
    kw = dict(rate=0.8 * GIB, gateway_ceiling=4 * GIB, fio_bw=1.0 * GIB, rate_rel_se=0.01, direction=direction)
    ev = _ev(**kw)
    assert decide(ev)[0] == "inconclusive" and ev["borderline"] is False
    other = "fio_read_bw" if term == "fio_write_bw" else "fio_write_bw"
    ev = _ev(**kw, between_run={other: 0.09})  # the other direction's term does not apply
    assert decide(ev)[0] == "inconclusive" and ev["borderline"] is False
    ev = _ev(**kw, between_run={term: 0.09})
    got, reason = decide(ev)
    assert got == "inconclusive" and _causes(ev, got) == {"inconclusive", "storage-bandwidth"}, reason
    (c,) = ev["borderline_candidates"]
    assert math.isclose(c["high"] / 0.8, math.exp(Z * math.hypot(0.01, 0.09)))


def test_a_fio_iops_share_takes_its_probes_between_run_term():
    # small ops at 80 % of fio's IOPS, the op count's own noise 1 %
    kw = dict(rate=0.05 * GIB, gateway_ceiling=4 * GIB, fio_bw=8 * GIB, fio_iops=1000.0,
              pool_write_ops=800.0, pool_write_ops_rel_se=0.01, pool="rep3", fio_iops_job="randwrite-64k",
              fio_iops_bs=64 << 10)
    ev = _ev(**kw)
    assert decide(ev)[0] != "storage-iops" and "storage-iops" not in _causes(ev, "x")
    ev = _ev(**kw, between_run={"fio_write_iops": 0.15})
    decide(ev)
    assert "storage-iops" in _causes(ev, "x")
