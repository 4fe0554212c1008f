"""Small statistics: a Stats object (pytest-benchmark style), a bootstrap confidence interval,
the standard error of a mean of autocorrelated samples, and Student's t quantiles.

Volatility is the sample standard deviation (ddof=1) and the coefficient of variation
CV = std / mean. The confidence interval of a mean over repeats is a percentile bootstrap
(2000 resamples, fixed seed: a report rendered twice shows the same interval). With fewer than
two values there is no interval (NaN), not a zero-width one.

**Autocorrelated samples.** A level's ~1-s blocks, a probe's 0.5-s fio intervals, the host's
CPU and the pool's op/s sampled every 0.5-1 s are not independent: a page-cache flush or a
BlueStore compaction spans several samples. Their mean's standard error is the samples' spread
over the square root of their *effective* number, n (1 - r) / (1 + r), r the lag-1
autocorrelation (the AR(1) correction; :func:`mean_rel_se`, the one implementation the level
rates, the window figures of the attribution and the fio probes all use). Treating them as
independent understated it: for r = 0.6 by a factor 2.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np
from scipy import stats as _sp

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20240
LAG1_MAX = 0.95  # near 1 the AR(1) correction has no meaning (n_eff -> 0)
MIN_SAMPLES = 3  # fewer samples than this: no lag-1 estimate, no error (NaN)
BIAS_MIN = 10  # lag1's bias correction from this many samples (tests/unit/figures: checked 10-40)
VAR_FLOOR = 0.5  # _sd_ar1: the spread is at most sqrt(2) times its sample value (a short series)


def t_quantile(confidence: float, dof: float) -> float:
    """Student's t quantile (one-sided ``confidence``) for ``dof`` degrees of freedom; the
    normal's for infinite (or unknown: NaN) dof. t(0.95, 1) = 6.31, t(0.95, 3) = 2.35."""
    if not math.isfinite(dof):
        return NormalDist().inv_cdf(confidence)
    if dof < 1:
        raise ValueError(f"a t quantile needs at least 1 degree of freedom, got {dof}")
    return float(_sp.t.ppf(confidence, dof))


def lag1(x) -> float:
    """Lag-1 autocorrelation of ``x``, bias-corrected for a short series (the sample estimate
    falls short of rho by about (1 + 3 rho) / n: Marriott & Pope, Biometrika 41, 1954; from
    BIAS_MIN samples on, the range the simulation checked) and
    clipped to [0, LAG1_MAX] (a negative one would claim more samples than were taken); 0 for
    fewer than MIN_SAMPLES or a constant series."""
    v = np.asarray(x, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < MIN_SAMPLES:
        return 0.0
    d = v - v.mean()
    den = float((d * d).sum())
    if den <= 0:
        return 0.0
    r = float((d[:-1] * d[1:]).sum()) / den
    if v.size >= BIAS_MIN:  # below it the correction overshoots (n = 4: +0.25 at r = 0)
        r += (1.0 + 3.0 * r) / v.size
    return min(LAG1_MAX, max(0.0, r))


def effective_n(n: float, r: float) -> float:
    """The number of independent samples ``n`` AR(1) samples with lag-1 correlation ``r`` are
    worth: n (1 - r) / (1 + r), at least 1."""
    return max(1.0, n * (1.0 - r) / (1.0 + r))


def _sd_ar1(v: np.ndarray, r: float) -> float:
    """The samples' standard deviation, corrected for the part of the variance an
    autocorrelated series hides from its own sample variance: E[s^2] = sigma^2 (1 - 2/(n-1)
    sum_k (1 - k/n) r^k) for AR(1) (the factor kept >= VAR_FLOOR)."""
    n = v.size
    k = np.arange(1, n)
    f = 1.0 - 2.0 / (n - 1) * float(((1.0 - k / n) * r ** k).sum())
    return float(v.std(ddof=1)) / math.sqrt(max(f, VAR_FLOOR))


def _ar1_rel_se(spread_of: np.ndarray, mean: float, n: int) -> float:
    """sd / mean / sqrt(n_eff) with the spread and correlation of ``spread_of`` for a mean of
    ``n`` samples, as a normal-equivalent error: scaled by t(dof) / z, dof the effective
    samples the spread was estimated from less one, so that the normal quantile the callers
    take (borderline, judge, ratio bounds) gives Student's interval for a spread known from few
    effective samples."""
    r = lag1(spread_of)
    n_eff = effective_n(n, r)
    dof = max(effective_n(spread_of.size, r) - 1.0, 1.0)
    small = t_quantile(CONFIDENCE, dof) / NormalDist().inv_cdf(CONFIDENCE)
    return _sd_ar1(spread_of, r) / mean / math.sqrt(n_eff) * small


def detrended(x) -> np.ndarray:
    """``x`` less its least-squares line (plus its mean): the fluctuation around a ramp."""
    v = np.asarray(x, dtype=float)
    if v.size < MIN_SAMPLES:
        return v
    i = np.arange(v.size, dtype=float)
    slope, icept = np.polyfit(i, v, 1)
    return v - (slope * i + icept) + v.mean()


def mean_rel_se(x, spread_from=None) -> float:
    """Relative standard error of the mean of ``x`` (autocorrelated samples: AR(1), the lag-1
    correlation bias-corrected, the variance corrected, Student's t for few effective samples:
    a normal-equivalent error, :func:`_ar1_rel_se`). ``spread_from``: the samples the spread
    and the correlation are also taken from, when ``x`` was chosen out of them for being quiet
    (a level's steady window out of its whole level after the ramp): the window's own spread
    would understate the noise, so the larger of the two errors is kept; those samples are
    taken around their trend (:func:`detrended`: a rate still ramping up is no noise of the
    window's mean). NaN with fewer than MIN_SAMPLES or a mean <= 0.

    Checked by simulation (tests/unit/figures/test_autocorrelated_noise.py): one-sided 95 %
    bounds hold 89-96 % of the time for 10-40 samples with rho 0-0.8 (the plain sd/sqrt(n):
    60-95 %)."""
    v = np.asarray(x, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < MIN_SAMPLES or not v.mean() > 0:
        return math.nan
    mean = float(v.mean())
    own = _ar1_rel_se(v, mean, v.size)
    if spread_from is None:
        return own
    pool = np.asarray(spread_from, dtype=float)
    pool = pool[np.isfinite(pool)]
    if pool.size < MIN_SAMPLES:
        return own
    return max(own, _ar1_rel_se(detrended(pool), mean, v.size))


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


def rate_rel_se(repeats: float, cv_repeats: float, window_cv: float, window_n: float,
                window_rel_se: float = math.nan) -> float:
    """Relative standard error of a steady rate (mean over repeats of window means).

    Two estimates, the larger kept: the spread between repeats (cv / sqrt(repeats), from two
    repeats on) and each repeat's own window error over sqrt(repeats). The window's error is
    ``window_rel_se`` (:func:`mean_rel_se` of its ~1-s blocks: autocorrelation and the window's
    choice counted, figures.steady) where the run has it; an older run's, cv / sqrt(blocks),
    treats the blocks as independent and is a floor. NaN when neither is known."""
    r = repeats if math.isfinite(repeats) and repeats >= 1 else 1.0
    est = []
    if r >= 2 and math.isfinite(cv_repeats):
        est.append(cv_repeats / math.sqrt(r))
    if math.isfinite(window_rel_se):
        est.append(window_rel_se / math.sqrt(r))
    elif math.isfinite(window_cv) and math.isfinite(window_n) and window_n >= 2:
        est.append(window_cv / math.sqrt(window_n * r))
    return max(est) if est else math.nan


POINT_NOISE = ("repeats", "rate_cv_repeats", "window_cv", "window_n", "window_rel_se")


def point_rel_se(point) -> float:
    """:func:`rate_rel_se` of a level's point (a mapping with the POINT_NOISE keys, as
    analysis.verdicts.run_data gives them; a missing or non-numeric one is unknown)."""
    def num(k: str) -> float:
        try:
            v = float(point.get(k, math.nan))
        except (TypeError, ValueError):
            return math.nan
        return v
    return rate_rel_se(*(num(k) for k in POINT_NOISE))


def ratio_lower_bound(lo: float, se_lo: float, hi: float, se_hi: float,
                      confidence: float = CONFIDENCE) -> float:
    """One-sided lower confidence bound of hi / lo, from each rate's relative standard error
    (normal on the log ratio: se = sqrt(se_lo^2 + se_hi^2)). Unknown errors count as 0: the
    bound is then the plain ratio."""
    if not (lo > 0 and math.isfinite(lo) and math.isfinite(hi)):
        return math.nan
    se = math.hypot(se_lo if math.isfinite(se_lo) else 0.0, se_hi if math.isfinite(se_hi) else 0.0)
    return hi / lo * math.exp(-NormalDist().inv_cdf(confidence) * se)
