"""The error of a mean of autocorrelated samples (figures.stats.mean_rel_se: AR(1)), the one
implementation the level rates, the window figures and the fio probes use, and the window's
choice counted (figures.buckets.window_rel_se)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.ar1 import ar1
from xcbench.figures.buckets import window_rel_se
from xcbench.figures.stats import effective_n, lag1, mean_rel_se, point_rel_se, t_quantile
from xcbench.figures.steady import is_steady, steady_table


def _coverage(se_of, rho: float, n: int = 20, trials: int = 2000) -> float:
    """How often the one-sided 95 % upper bound of the mean holds (the side the borderline
    and the judge read)."""
    rng = np.random.default_rng(44)
    hit = 0
    z = t_quantile(0.95, math.inf)
    for _ in range(trials):
        x = ar1(rng, n, rho)
        hit += x.mean() / 100.0 - 1.0 <= z * se_of(x)
    return hit / trials


@pytest.mark.parametrize("rho,n", [(0.0, 10), (0.3, 10), (0.6, 20), (0.8, 20), (0.8, 40)])
def test_the_ar1_error_covers_autocorrelated_samples_where_the_iid_one_does_not(rho, n):
    iid = _coverage(lambda x: x.std(ddof=1) / x.mean() / math.sqrt(x.size), rho, n)
    ar = _coverage(mean_rel_se, rho, n)
    assert ar >= 0.89, ar  # the stated 95 % within what ~10-40 samples can estimate
    if rho >= 0.6:
        assert iid < 0.86, iid  # the old window error held far less than it stated


def test_effective_n_and_lag1():
    assert effective_n(20, 0.0) == 20 and effective_n(20, 0.6) == pytest.approx(5.0)
    assert effective_n(3, 0.95) == 1.0
    assert lag1([1, 2, 3, 4, 5, 6, 7, 8]) > 0.5 and lag1([1, -1, 1, -1, 1, -1]) == 0.0
    assert lag1([5.0, 5.0, 5.0]) == 0.0 and lag1([1.0, 2.0]) == 0.0
    assert math.isnan(mean_rel_se([1.0, 2.0])) and math.isnan(mean_rel_se([0.0, 0.0, 0.0]))


def test_a_quiet_window_chosen_out_of_a_noisy_level_takes_the_levels_spread():
    rng = np.random.default_rng(1)
    level = ar1(rng, 30, 0.3, cv=0.2)
    quiet = np.full(6, level[-6:].mean()) + rng.normal(0, 0.5, 6)  # a window picked for its calm
    alone, chosen = mean_rel_se(quiet), mean_rel_se(quiet, spread_from=np.concatenate([level, quiet]))
    assert chosen > 5 * alone
    assert mean_rel_se(level[-6:], spread_from=level[-6:]) == mean_rel_se(level[-6:])


def test_the_level_window_error_counts_the_level_after_its_ramp_not_the_ramp():
    t = np.arange(1.0, 21.0)
    steady = np.r_[np.linspace(10, 90, 3), np.full(17, 100.0)] + np.r_[np.zeros(3), np.tile([4.0, -4.0], 8), 0]
    active = np.r_[1, 2, 4, np.full(17, 4)]
    se = window_rel_se(t, steady, steady, active, 14.0, 20.0, 4.0)
    assert 0 < se < 0.05  # the ramp (10 -> 90) is left out; the window's swings are counted
    loud = steady.copy()
    loud[5:10] += np.array([40, -40, 40, -40, 40])  # a loud stretch before the quiet window
    assert window_rel_se(t, loud, loud, active, 14.0, 20.0, 4.0) > 2 * se


def test_a_point_takes_the_window_error_over_its_repeats():
    p = {"repeats": 4, "rate_cv_repeats": 0.01, "window_cv": 0.3, "window_n": 9, "window_rel_se": 0.08}
    assert point_rel_se(p) == pytest.approx(0.04)  # the window's error over sqrt(repeats)
    p.pop("window_rel_se")  # an older run: cv / sqrt(buckets x repeats)
    assert point_rel_se(p) == pytest.approx(0.3 / 6)
    assert math.isnan(point_rel_se({}))


def test_t_quantiles():
    assert t_quantile(0.95, 1) == pytest.approx(6.3138, rel=1e-4)
    assert t_quantile(0.95, 3) == pytest.approx(2.3534, rel=1e-4)
    assert t_quantile(0.95, math.inf) == pytest.approx(1.6449, rel=1e-4)
    with pytest.raises(ValueError):
        t_quantile(0.95, 0)


def test_steady_table_flags_a_level_that_never_got_steady():
    import pandas as pd
    rows = [{"cell_id": "a", "campaign_id": "k", "concurrency": 2, "repeat": 0, "t": float(i),
             "wall": 1000.0 + i, "bytes": 100.0 + (i % 2) * 10, "rate": 100.0 + (i % 2) * 10, "active": 2}
            for i in range(1, 15)]
    tl = pd.DataFrame(rows)
    level = {"window": [8.0, 14.0], "ended_by": "max", "rule": {"rule": "autoterm"}}
    got = steady_table(tl, levels={"k": level}).iloc[0]
    assert got["method"] == "not steady" and not got["steady"] and got["window_rel_se"] > 0
    got = steady_table(tl, levels={"k": {**level, "ended_by": "steady", "t_end": 14.0}}).iloc[0]
    assert got["steady"] and is_steady("plateau") and not is_steady("whole")
