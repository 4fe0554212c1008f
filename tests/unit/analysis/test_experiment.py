"""Judging a confirmation: A-B-B-A order, the noise with the between-run term, the minimum
effect, and the three outcomes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xcbench.analysis.verdicts.experiment import (
    MAX_PAIRS,
    MIN_RELIEF,
    MIN_TIGHTEN,
    PAIRS,
    judge,
    line,
    minimum,
    pair_noise,
    pairs_needed,
    proportion,
    schedule,
)


def _pairs(control: float, changed: list[float], se: float = 0.02):
    return [((control, se), (c, se)) for c in changed]


def test_runs_interleave_a_b_b_a():
    assert [a for _, a in schedule(2)] == ["control", "changed", "changed", "control"]
    assert [p for p, _ in schedule(2)] == [0, 0, 1, 1]
    assert [a[:2] for _, a in schedule(4)] == ["co", "ch", "ch", "co"] * 2
    with pytest.raises(ValueError):
        schedule(0)


def test_the_minimum_effect_is_a_fifth_of_a_relief_and_half_of_a_tightening():
    assert minimum("relieve", 2.0) == pytest.approx(1.2)  # the stated rule: x2 asks x1.2
    assert minimum("relieve", None) == pytest.approx(1.2)  # no prediction: as for x2
    assert minimum("relieve", 1.5) == pytest.approx(1 + MIN_RELIEF * 0.5)
    assert minimum("tighten", 0.5) == pytest.approx(0.75)
    assert minimum("tighten", 0.8) == pytest.approx(1 - MIN_TIGHTEN * 0.2)
    with pytest.raises(ValueError):
        minimum("tighten", None)


def test_a_relief_that_doubles_the_rate_is_confirmed_with_its_prediction_error():
    r = judge("relieve", 2.0, _pairs(100e6, [190e6, 185e6]))
    assert r["outcome"] == "confirmed" and r["pairs"] == 2
    assert r["ratio"] == pytest.approx(math.sqrt(1.9 * 1.85))
    assert r["prediction_error"] == pytest.approx(r["ratio"] / 2 - 1)
    assert r["low"] >= 1.2


def test_a_rise_beyond_noise_but_below_the_minimum_effect_is_refuted_not_confirmed():
    r = judge("relieve", 2.0, _pairs(100e6, [108e6, 109e6], se=0.01))
    assert r["low"] > 1.0  # the old rule (any rise past 1) would have confirmed it
    assert r["outcome"] == "refuted" and r["high"] < 1.2


def test_an_interval_that_straddles_the_minimum_is_inconclusive():
    r = judge("relieve", 2.0, _pairs(100e6, [112e6, 135e6], se=0.05))
    assert r["outcome"] == "inconclusive" and r["low"] < 1.2 < r["high"]


def test_the_between_run_term_widens_the_noise():
    a = judge("relieve", 2.0, _pairs(100e6, [150e6, 150e6], se=0.01))
    b = judge("relieve", 2.0, _pairs(100e6, [150e6, 150e6], se=0.01), between=0.10)
    assert a["outcome"] == "confirmed" and b["outcome"] == "inconclusive"
    assert b["rel_se"] > a["rel_se"] and b["between"] == 0.10


def test_pairs_that_disagree_widen_the_noise_beyond_their_own_errors():
    r = judge("relieve", 2.0, _pairs(100e6, [250e6, 110e6], se=0.01))
    assert r["rel_se_seen"] > r["rel_se_model"] and r["rel_se"] == r["rel_se_seen"]
    assert r["outcome"] == "inconclusive"


def test_a_tightening_must_fall_by_half_of_the_prediction():
    assert judge("tighten", 0.5, _pairs(100e6, [52e6, 55e6]))["outcome"] == "confirmed"
    assert judge("tighten", 0.5, _pairs(100e6, [95e6, 97e6]))["outcome"] == "refuted"


def test_too_few_measured_pairs_are_inconclusive_and_say_so():
    r = judge("relieve", 2.0, [((100e6, 0.01), (200e6, 0.01)), ((math.nan, 0.01), (200e6, 0.01))])
    assert r["outcome"] == "inconclusive" and "1 of 2 pairs" in r["why"]


def test_proportion_is_the_slope_of_log_rate_on_log_limit():
    assert proportion([0.5, 0.25], [0.5, 0.25])["slope"] == pytest.approx(1.0)
    assert proportion([0.5, 0.25], [1.0, 1.0])["slope"] == pytest.approx(0.0)
    assert proportion([0.5], [None]) == {"slope": None, "points": 0}


rates = st.floats(min_value=1e6, max_value=1e10)
ses = st.floats(min_value=0.0, max_value=0.3)


@given(st.lists(st.tuples(rates, ses, rates, ses), min_size=2, max_size=6),
       st.floats(min_value=1.05, max_value=8.0), st.one_of(st.none(), st.floats(0, 0.3)))
def test_the_interval_holds_the_ratio_and_the_outcome_follows_it(runs, predicted, between):
    pairs = [((a, sa), (b, sb)) for a, sa, b, sb in runs]
    r = judge("relieve", predicted, pairs, between)
    assert r["low"] <= r["ratio"] * (1 + 1e-9) and r["ratio"] <= r["high"] * (1 + 1e-9)
    need = minimum("relieve", predicted)
    want = "confirmed" if r["low"] >= need else "refuted" if r["high"] < need else "inconclusive"
    assert r["outcome"] == want


@given(st.lists(st.tuples(rates, ses, rates, ses), min_size=2, max_size=6), st.floats(0.05, 0.3))
def test_more_noise_never_turns_an_inconclusive_into_a_decision(runs, extra):
    pairs = [((a, sa), (b, sb)) for a, sa, b, sb in runs]
    a, b = judge("relieve", 2.0, pairs, 0.0), judge("relieve", 2.0, pairs, extra)
    if a["outcome"] == "inconclusive":
        assert b["outcome"] == "inconclusive"
    assert b["rel_se"] >= a["rel_se"]


@given(st.lists(st.tuples(rates, rates), min_size=2, max_size=4), st.floats(0.2, 5.0))
def test_swapping_the_arms_inverts_the_ratio(runs, k):
    pairs = [((a, 0.02), (b, 0.02)) for a, b in runs]
    flip = [((b, 0.02), (a, 0.02)) for a, b in runs]
    assert judge("relieve", 2.0, pairs)["ratio"] * judge("relieve", 2.0, flip)["ratio"] == pytest.approx(1.0)


def test_two_pairs_take_student_t_with_one_degree_of_freedom():
    r = judge("relieve", 2.0, _pairs(100e6, [190e6, 185e6]))
    assert r["quantile"] == pytest.approx(6.3138, rel=1e-4)
    assert r["low"] == pytest.approx(r["ratio"] * math.exp(-6.3138 * r["rel_se"]), rel=1e-4)
    four = judge("relieve", 2.0, _pairs(100e6, [190e6, 185e6, 190e6, 185e6]))
    assert four["quantile"] == pytest.approx(2.3534, rel=1e-4)  # t(0.95, 3)
    one = judge("relieve", 2.0, _pairs(100e6, [190e6]), min_pairs=1)
    assert one["quantile"] == pytest.approx(1.6449, rel=1e-4)  # no spread of its own: the model's


def test_the_between_run_term_counts_once_per_run_for_reliefs_and_tightenings_alike():
    for kind, pred, changed in (("relieve", 2.0, 150e6), ("tighten", 0.5, 60e6)):
        r = judge(kind, pred, _pairs(100e6, [changed, changed], se=0.02), between=0.05)
        assert r["rel_se_model"] == pytest.approx(math.sqrt(0.02 ** 2 * 2 + 2 * 0.05 ** 2) / math.sqrt(2))
        assert pair_noise((0.02, 0.02), 0.05) == pytest.approx(math.sqrt(0.0008 + 0.005))


def test_an_experiment_whose_rival_predicts_the_same_checks_a_proportion_never_the_name():
    # every role under one quota below what the roles used: x0.5 whatever capped the level
    r = judge("tighten", 0.5, _pairs(100e6, [50e6, 51e6], se=0.01), rivals={"gateway": 0.5})
    assert r["outcome"] == "proportion checked" and not r["separates"] and r["nearest_rival"] == "gateway"
    assert "gateway predicts the same" in r["why"]
    r = judge("tighten", 0.5, _pairs(100e6, [99e6, 101e6], se=0.01), rivals={"gateway": 0.5})
    assert r["outcome"] == "refuted"  # the proportion not met: it can still refute


def test_the_line_moves_between_the_prediction_and_a_rival_that_would_pass_it():
    # a halved link at 67 % use falls to x0.75 with headroom: the minimum x0.75 would "confirm" it
    asked, sep, name = line("tighten", 0.5, {"a link with headroom": 0.75})
    assert sep and name == "a link with headroom" and asked == pytest.approx(math.sqrt(0.5 * 0.75))
    r = judge("tighten", 0.5, _pairs(100e6, [75e6, 76e6, 75e6, 76e6], se=0.005),
              rivals={"a link with headroom": 0.75})
    assert r["outcome"] == "inconclusive"  # the rival's outcome: no confirmation, not short of x0.75
    r = judge("tighten", 0.5, _pairs(100e6, [95e6, 96e6, 95e6, 96e6], se=0.005),
              rivals={"a link with headroom": 0.75})
    assert r["outcome"] == "refuted"
    assert line("relieve", 2.0, {"gateway": 1.0}) == (pytest.approx(1.2), True, "gateway")
    assert line("relieve", 2.0, {"x": 2.5})[1] is False  # a rival predicting more: cannot tell


def test_pairs_needed_grows_as_the_effect_nears_its_noise():
    big = pairs_needed("relieve", 2.0, 1.2, 0.05)
    small = pairs_needed("relieve", 1.3, minimum("relieve", 1.3), 0.05)
    assert big == PAIRS and small is not None and small > big
    assert pairs_needed("relieve", 1.05, minimum("relieve", 1.05), 0.05) is None  # beyond MAX_PAIRS
    assert pairs_needed("tighten", 0.5, 0.75, 0.05) == PAIRS
    r = judge("relieve", 1.3, _pairs(100e6, [112e6, 135e6], se=0.05))
    assert r["outcome"] == "inconclusive" and r["pairs_needed"] and r["pairs_needed"] <= MAX_PAIRS


def test_a_relief_of_unknown_size_must_rise_beyond_what_any_rival_explains():
    # the storage taken out on one box also frees the OSDs' CPU: host-cpu explains up to x2
    asked, sep, name = line("relieve", None, {"gateway": 1.0, "host-cpu": 2.0})
    assert sep and name == "host-cpu" and asked == pytest.approx(2.0 * 1.01)
    r = judge("relieve", None, _pairs(100e6, [580e6, 590e6, 600e6, 585e6], se=0.05),
              rivals={"gateway": 1.0, "host-cpu": 2.0})
    assert r["outcome"] == "confirmed"  # x5.9: more than the freed CPU could give
    r = judge("relieve", None, _pairs(100e6, [180e6, 190e6, 185e6, 182e6], se=0.05),
              rivals={"gateway": 1.0, "host-cpu": 2.0})
    assert r["outcome"] == "inconclusive"  # a rise the freed CPU explains too: it cannot tell
    r = judge("relieve", None, _pairs(100e6, [101e6, 99e6, 100e6, 102e6], se=0.02),
              rivals={"gateway": 1.0, "host-cpu": 2.0})
    assert r["outcome"] == "refuted"  # no rise at all: short of the fifth the named cause gives
    assert line("relieve", None, {"gateway": 1.0}) == (pytest.approx(1.2), True, "gateway")
