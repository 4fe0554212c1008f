"""Judging a confirmation: control and changed runs of one cell, interleaved, against a prediction.

An experiment relieves the limit a verdict names (the rate must rise) or tightens it (the rate
must fall). Its runs interleave in A-B-B-A order (``schedule``), at least PAIRS pairs, so a
drift of the box (page cache, BlueStore, others' load) that is linear in time cancels from the
mean of the pairs' log ratios instead of falling on one arm.

The noise of that mean is the larger of two estimates:

- **modelled**: each run's own relative standard error (its steady window) and, per run, the
  between-run term (analysis.verdicts.between_run: how much two runs differ beyond what their windows
  say), added in quadrature over the pair and divided by sqrt(pairs);
- **seen**: the spread of the pairs' own log ratios (sample deviation / sqrt(pairs)).

**Minimum effect.** A limit that binds explains the rate; relieving it must buy a real share of
what proportion predicts, not just any rise past 1 (a 3 % rise beyond noise says the limit was
a minor part of the cap). A relief must give at least MIN_RELIEF (a fifth) of the predicted
change: x2 predicted asks for at least x1.2. A relief is cut short where the next limit binds,
which a verdict cannot know, so a fifth is asked, not all. A tightening cannot be rescued by
another limit: a limit that binds takes the rate down with it, diluted only by the part of the
work it does not govern, so at least MIN_TIGHTEN (half) of the predicted fall is asked: x0.5
predicted asks for at most x0.75. With no prediction (a relief of unknown size) the x2 rule's
figure is asked: at least x1.2.

Outcome, at CONFIDENCE one-sided: **confirmed** when the bound on the near side passes the
minimum effect; **refuted** when the bound on the far side falls short of it (the effect is
surely smaller than asked); **inconclusive** otherwise (the interval straddles the minimum:
more pairs would decide). The measured ratio is reported beside the predicted one with the
prediction error, measured / predicted - 1, as causal profilers (Coz) and Monotasks report
theirs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist, stdev
from typing import Any

from xcbench.figures.numbers import as_float
from xcbench.figures.stats import CONFIDENCE

PAIRS = 2  # control/changed pairs per experiment (A-B-B-A)
MIN_RELIEF = 0.2  # a relief must give this share of the predicted rise (x2 -> x1.2)
MIN_TIGHTEN = 0.5  # a tightening must give this share of the predicted fall (x0.5 -> x0.75)
UNPREDICTED_RELIEF = 2.0  # a relief of unknown size is asked what a x2 relief is asked
KINDS = ("relieve", "tighten")
OUTCOMES = ("confirmed", "refuted", "inconclusive")
Rate = tuple[float, float]  # (B/s, relative standard error; nan: unknown)


def schedule(pairs: int = PAIRS) -> list[tuple[int, str]]:
    """The order of the runs, (pair, arm): A-B-B-A, then A-B-B-A again for four pairs."""
    if pairs < 1:
        raise ValueError(f"pairs must be >= 1, got {pairs}")
    out: list[tuple[int, str]] = []
    for i in range(pairs):
        arms = ("control", "changed") if i % 2 == 0 else ("changed", "control")
        out += [(i, a) for a in arms]
    return out


def minimum(kind: str, predicted: float | None) -> float:
    """The ratio changed / control the measured effect must pass (see the module's text)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == "relieve":
        p = predicted if predicted is not None and math.isfinite(predicted) and predicted > 1 \
            else UNPREDICTED_RELIEF
        return 1.0 + MIN_RELIEF * (p - 1.0)
    if predicted is None or not (math.isfinite(predicted) and 0 < predicted < 1):
        raise ValueError(f"a tightening needs a predicted ratio in (0, 1), got {predicted}")
    return 1.0 - MIN_TIGHTEN * (1.0 - predicted)


def _sq(v: float) -> float:
    return v * v if math.isfinite(v) else 0.0


def judge(kind: str, predicted: float | None, pairs: Sequence[tuple[Rate, Rate]],
          between: float | None = None, confidence: float = CONFIDENCE,
          min_pairs: int = PAIRS) -> dict[str, Any]:
    """The outcome of one experiment from its pairs ((control, changed) rates, run order kept).

    Returns {"outcome", "why", "ratio", "low", "high", "predicted", "minimum",
    "prediction_error", "pairs", "pair_ratios", "rel_se", "rel_se_model", "rel_se_seen",
    "between", "confidence"}."""
    need = minimum(kind, predicted)
    b = as_float(between)
    good = [(a, c) for a, c in pairs if as_float(a[0]) > 0 and as_float(c[0]) > 0]
    logs = [math.log(c[0] / a[0]) for a, c in good]
    out: dict[str, Any] = {"kind": kind, "predicted": predicted, "minimum": need, "pairs": len(good),
                           "pair_ratios": [math.exp(x) for x in logs], "confidence": confidence,
                           "between": b if math.isfinite(b) else None, "ratio": None, "low": None,
                           "high": None, "prediction_error": None, "rel_se": None,
                           "rel_se_model": None, "rel_se_seen": None}
    if len(good) < min_pairs:
        out.update(outcome="inconclusive",
                   why=f"{len(good)} of {len(pairs)} pairs measured a steady rate in both runs "
                       f"(at least {min_pairs} needed)")
        return out
    n = len(good)
    var = [_sq(as_float(a[1])) + _sq(as_float(c[1])) + 2 * _sq(b) for a, c in good]
    model = math.sqrt(sum(var) / n) / math.sqrt(n)
    seen = stdev(logs) / math.sqrt(n) if n >= 2 else math.nan
    se = max(model, seen) if math.isfinite(seen) else model
    ratio = math.exp(sum(logs) / n)
    z = NormalDist().inv_cdf(confidence)
    low, high = ratio * math.exp(-z * se), ratio * math.exp(z * se)
    out.update(ratio=ratio, low=low, high=high, rel_se=se, rel_se_model=model,
               rel_se_seen=seen if math.isfinite(seen) else None,
               prediction_error=(ratio / predicted - 1.0) if predicted else None)
    pct = f"{confidence * 100:.0f} %"
    pred = (f"predicted x{predicted:.2f}, prediction error {(ratio / predicted - 1) * 100:+.0f} %"
            if predicted else "no prediction")
    if kind == "relieve":
        if low >= need:
            outcome, why = "confirmed", f"x{ratio:.2f}, at least x{low:.2f} at {pct} >= x{need:.2f} asked"
        elif high < need:
            outcome, why = "refuted", f"x{ratio:.2f}, at most x{high:.2f} at {pct} < x{need:.2f} asked"
        else:
            outcome, why = "inconclusive", (f"x{ratio:.2f}, bounds x{low:.2f} and x{high:.2f} at {pct} one-sided "
                                            f"straddles the x{need:.2f} asked")
    else:
        if high <= need:
            outcome, why = "confirmed", f"x{ratio:.2f}, at most x{high:.2f} at {pct} <= x{need:.2f} asked"
        elif low > need:
            outcome, why = "refuted", f"x{ratio:.2f}, at least x{low:.2f} at {pct} > x{need:.2f} asked"
        else:
            outcome, why = "inconclusive", (f"x{ratio:.2f}, bounds x{low:.2f} and x{high:.2f} at {pct} one-sided "
                                            f"straddles the x{need:.2f} asked")
    out.update(outcome=outcome, why=f"{why} ({pred}; {n} pairs, noise ±{se * 100:.1f} %)")
    return out


def proportion(strengths: Sequence[float], ratios: Sequence[float | None]) -> dict[str, Any]:
    """Does the rate follow a limit set at several strengths? The slope of log(ratio) on
    log(strength) through the control's point: 1 is strict proportion, 0 no effect.
    ``strengths``: each changed arm's limit / the control's measured use; ``ratios``: the
    measured changed / control (None: not measured)."""
    pts = [(math.log(s), math.log(r)) for s, r in zip(strengths, ratios, strict=True)
           if r is not None and r > 0 and s > 0 and s != 1]
    if not pts:
        return {"slope": None, "points": 0}
    slope = sum(x * y for x, y in pts) / sum(x * x for x, _ in pts)  # least squares through 0
    return {"slope": slope, "points": len(pts)}
