"""Small statistics: a Stats object (pytest-benchmark style) and a bootstrap confidence interval.

Volatility is the sample standard deviation (ddof=1) and the coefficient of variation
CV = std / mean. The confidence interval of a mean over repeats is a percentile bootstrap
(2000 resamples, fixed seed: a report rendered twice shows the same interval). With fewer than
two values there is no interval (NaN), not a zero-width one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20240


def bootstrap_ci(values, confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
                 seed: int = SEED) -> tuple[float, float]:
    """Percentile-bootstrap CI of the mean of ``values``; (nan, nan) for fewer than 2 values."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


@dataclass(frozen=True)
class Stats:
    n: int
    mean: float
    median: float
    std: float
    cv: float
    min: float
    max: float
    ci_low: float = math.nan
    ci_high: float = math.nan

    @classmethod
    def of(cls, values, *, ci: bool = False) -> Stats:
        """Describe ``values`` (NaNs dropped); ``ci`` adds the bootstrap CI of the mean."""
        x = np.asarray(values, dtype=float)
        x = x[np.isfinite(x)]
        if x.size == 0:
            return cls(0, *([math.nan] * 6))
        mean = float(x.mean())
        std = float(x.std(ddof=1)) if x.size > 1 else math.nan
        cv = std / mean if mean and math.isfinite(std) else math.nan
        lo, hi = bootstrap_ci(x) if ci else (math.nan, math.nan)
        return cls(int(x.size), mean, float(np.median(x)), std, cv, float(x.min()),
                   float(x.max()), lo, hi)

    def as_dict(self, prefix: str = "") -> dict[str, float]:
        return {prefix + k: v for k, v in asdict(self).items()}


def ci_overlap(a_lo: float, a_hi: float, b_lo: float, b_hi: float) -> bool | None:
    """Do two intervals overlap? None when either is missing (n < 2)."""
    if not all(math.isfinite(v) for v in (a_lo, a_hi, b_lo, b_hi)):
        return None
    return a_lo <= b_hi and b_lo <= a_hi


def pct_diff(base: float, contender: float) -> float:
    """(contender - base) / base in %; NaN when the base is 0 or missing."""
    if not (math.isfinite(base) and math.isfinite(contender)) or base == 0:
        return math.nan
    return (contender - base) / base * 100.0


def rate_rel_se(repeats: float, cv_repeats: float, window_cv: float, window_n: float) -> float:
    """Relative standard error of a steady rate (mean over repeats of window means).

    Two estimates, the larger kept: the spread between repeats (cv / sqrt(repeats), from two
    repeats on) and the spread of the steady window's buckets (cv / sqrt(buckets * repeats)).
    Buckets are autocorrelated, so the window's figure is a floor, not the whole noise. NaN
    when neither is known (an old run without window statistics)."""
    r = repeats if math.isfinite(repeats) and repeats >= 1 else 1.0
    est = []
    if r >= 2 and math.isfinite(cv_repeats):
        est.append(cv_repeats / math.sqrt(r))
    if math.isfinite(window_cv) and math.isfinite(window_n) and window_n >= 2:
        est.append(window_cv / math.sqrt(window_n * r))
    return max(est) if est else math.nan


def ratio_lower_bound(lo: float, se_lo: float, hi: float, se_hi: float,
                      confidence: float = CONFIDENCE) -> float:
    """One-sided lower confidence bound of hi / lo, from each rate's relative standard error
    (normal on the log ratio: se = sqrt(se_lo^2 + se_hi^2)). Unknown errors count as 0: the
    bound is then the plain ratio."""
    if not (lo > 0 and math.isfinite(lo) and math.isfinite(hi)):
        return math.nan
    se = math.hypot(se_lo if math.isfinite(se_lo) else 0.0, se_hi if math.isfinite(se_hi) else 0.0)
    return hi / lo * math.exp(-NormalDist().inv_cdf(confidence) * se)
