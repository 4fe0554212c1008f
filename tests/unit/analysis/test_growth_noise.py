"""The "rate still grows with concurrency" rule judged against the levels' own noise."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from tests.support.evidence import _ev
from tests.support.synthrun import GIB, MIB, SynthCell, make_run
from xcbench.analysis.verdicts.attribution import attribute_data, decide
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.figures.stats import rate_rel_se, ratio_lower_bound


def test_rel_se_takes_the_larger_of_repeats_and_window():
    assert rate_rel_se(1, math.nan, 0.30, 9) == 0.30 / 3           # one repeat: the window's
    assert rate_rel_se(4, 0.20, 0.30, 9) == 0.20 / 2               # repeats spread more
    assert rate_rel_se(4, 0.01, 0.30, 9) == 0.30 / 6               # the window spreads more
    assert math.isnan(rate_rel_se(1, math.nan, math.nan, math.nan))  # an old run: unknown


def test_lower_bound_is_the_ratio_without_noise_and_falls_with_it():
    assert ratio_lower_bound(1.0, 0.0, 1.3, 0.0) == 1.3
    assert ratio_lower_bound(1.0, math.nan, 1.3, math.nan) == 1.3
    # one-sided 95 %: 1.645 standard errors of the log ratio
    assert math.isclose(ratio_lower_bound(1.0, 0.1, 1.3, 0.0), 1.3 * math.exp(-1.6449 * 0.1), rel_tol=1e-4)
    assert math.isnan(ratio_lower_bound(0.0, 0.1, 1.3, 0.1))


@given(lo=st.floats(1e3, 1e10), hi=st.floats(1e3, 1e10), a=st.floats(0, 1), b=st.floats(0, 1),
       extra=st.floats(0.001, 1))
def test_lower_bound_never_exceeds_the_ratio_and_more_noise_lowers_it(lo, hi, a, b, extra):
    low = ratio_lower_bound(lo, a, hi, b)
    assert low <= hi / lo * (1 + 1e-12)
    assert ratio_lower_bound(lo, a + extra, hi, b) < low


def _grow(growth: float, se: float, **kw):
    return _ev(rate=0.2 * GIB, concurrency=1, best_higher_level=4, best_higher_rate=growth * 0.2 * GIB,
               best_higher_growth_low=ratio_lower_bound(1.0, se, growth, se), **kw)


def test_growth_beyond_the_noise_is_concurrency():
    verdict, reason = decide(_grow(1.9, 0.05))
    assert verdict == "concurrency", reason
    assert "x1.9; at least x1.69 at 95 %" in reason


def test_growth_within_the_noise_is_not_called_and_is_a_borderline_candidate():
    # +30 % measured, but each level's rate is known to +-10 %: 1.25 is not surely passed
    ev = _grow(1.3, 0.10, rate_noise="steady window, one repeat")
    verdict, reason = decide(ev)
    assert "noise (steady window, one repeat)" in reason
    assert verdict == "inconclusive", reason
    assert "not shown to grow with concurrency" in reason and "x1.3" in reason
    assert ev["thresholds"]["scaling_confidence"] == 0.95
    # another run would call it: the verdict names concurrency as its borderline candidate
    assert ev["borderline"] is True and [c["rule"] for c in ev["borderline_candidates"]] == ["concurrency"]
    assert "borderline: growth x1.3 is within its noise of x1.25" in reason and ": concurrency?)" in reason


def test_the_same_growth_on_quiet_levels_is_concurrency():
    assert decide(_grow(1.3, 0.005))[0] == "concurrency"


def test_growth_below_scaling_says_nothing_of_it():
    verdict, reason = decide(_grow(1.1, 0.01))
    assert verdict == "inconclusive" and "grow" not in reason


def test_without_noise_figures_the_plain_ratio_decides():
    ev = _ev(rate=0.2 * GIB, concurrency=1, best_higher_level=4, best_higher_rate=0.26 * GIB)
    assert decide(ev)[0] == "concurrency"


def test_a_run_gives_each_level_its_noise_and_the_growth_bound(tmp_path):
    # per-transfer rate bound: 4 transfers go ~4x faster than 1, far beyond any noise
    path, _ = make_run(tmp_path, [SynthCell("tmpfs", per_stream=50 * MIB, concurrency=(1, 4),
                                            gateway=4 * GIB)])
    rows = {r["concurrency"]: r for r in attribute_data(RunData(path))}
    ev = json.loads(rows[1]["evidence"])
    assert 0 < ev["rate_rel_se"] < 0.5
    assert ev["best_higher_level"] == 4
    assert 1.25 <= ev["best_higher_growth_low"] < ev["best_higher_rate"] / ev["rate"]
    assert ev["rate_noise"] == "repeats and steady window"  # two repeats (SynthCell's default)
    assert rows[1]["verdict"] == "concurrency", rows[1]["reason"]
    assert "given the levels' noise (repeats and steady window)" in rows[1]["reason"]
    assert "best_higher_growth_low" not in json.loads(rows[4]["evidence"])  # no higher level
