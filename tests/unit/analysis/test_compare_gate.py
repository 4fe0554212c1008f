"""The regression gate's arithmetic (analysis.verdicts.compare.slower): a level fails when even the upper
confidence bound of contender / base is below 1 - PCT/100, from both levels' relative errors."""

from __future__ import annotations

import math

import pytest

from xcbench.analysis.verdicts.compare import slower
from xcbench.figures.stats import CONFIDENCE


def _row(b, c, se_b=0.0, se_c=0.0, only_in=""):
    return {"label": "tmpfs", "concurrency": 4.0, "base_rate": b, "contender_rate": c,
            "base_rel_se": se_b, "contender_rel_se": se_c, "only_in": only_in, "pct": (c / b - 1) * 100}


def test_a_fall_beyond_pct_with_no_noise_fails_and_one_within_passes():
    assert [r["fell_at_least"] for r in slower([_row(100, 70)], 20)] == [pytest.approx(0.3)]
    assert slower([_row(100, 85)], 20) == []
    assert slower([_row(100, 130)], 0) == []  # faster: never a fall


def test_noise_widens_the_bound_until_the_fall_is_no_longer_sure():
    from statistics import NormalDist
    z = NormalDist().inv_cdf(CONFIDENCE)
    se = 0.1  # each level; the ratio's error is their quadrature sum
    (r,) = slower([_row(100, 50, se, se)], 20)
    assert r["fell_at_least"] == pytest.approx(1 - 0.5 * math.exp(z * math.hypot(se, se)))
    # a 30 % fall is not surely more than 20 % with 10 % errors on each side
    assert slower([_row(100, 70, se, se)], 20) == []


def test_unknown_errors_count_as_none_a_zero_rate_fell_and_one_sided_levels_are_not_judged():
    assert len(slower([_row(100, 70, math.nan, math.nan)], 20)) == 1
    assert slower([_row(100, 0.0)], 50)[0]["fell_at_least"] == 1.0
    assert slower([_row(100, math.nan, only_in="base")], 0) == []
