"""Judging a confirmation: control and changed runs of one cell, interleaved, against a prediction.

An experiment relieves the limit a verdict names (the rate must rise) or tightens it (the rate
must fall). Its runs interleave in A-B-B-A order (``schedule``), at least PAIRS pairs, so a
drift of the box (page cache, BlueStore, others' load) that is linear in time cancels from the
mean of the pairs' log ratios instead of falling on one arm.

The noise of that mean is the larger of two estimates:

- **modelled**: each run's own relative standard error (its steady window: autocorrelation and
  the window's choice counted, figures.stats.mean_rel_se) and the between-run term
  (analysis.verdicts.between_run: how much two runs differ beyond what their windows say), once
  per run, in quadrature over the pair (sa^2 + sc^2 + 2 b^2), divided by sqrt(pairs). The runs'
  own errors come without the term (``rate_rel_se_own`` of their evidence): it is added here
  once, for reliefs and tightenings alike;
- **seen**: the spread of the pairs' own log ratios (sample deviation / sqrt(pairs)).

The bound takes Student's t with pairs - 1 degrees of freedom (t(0.95, 1) = 6.31 for 2 pairs;
the normal's 1.645 promised a 95 % it does not hold with so few); a single pair (the
self-test's interventions, min_pairs=1) has no spread of its own and takes the normal quantile
on its modelled noise.

**Minimum effect.** A limit that binds explains the rate; relieving it must buy a real share of
what proportion predicts, not just any rise past 1 (a 3 % rise beyond noise says the limit was
a minor part of the cap). A relief must give at least MIN_RELIEF (a fifth) of the predicted
change: x2 predicted asks for at least x1.2. A relief is cut short where the next limit binds,
which a verdict cannot know, so a fifth is asked, not all. A tightening cannot be rescued by
another limit: a limit that binds takes the rate down with it, diluted only by the part of the
work it does not govern, so at least MIN_TIGHTEN (half) of the predicted fall is asked: x0.5
predicted asks for at most x0.75. With no prediction (a relief of unknown size) the x2 rule's
figure is asked: at least x1.2. An experiment's own line (``need``: ec-overhead asks the rule's
own 0.85) replaces it.

**Rivals.** Each experiment states what it predicts under the named cause and under each rival
cause a run could plausibly have named instead (analysis.verdicts.experiment_choice,
docs/experiments.md). The line asked is never past a rival's prediction: where the nearest
rival's predicted outcome would pass the line, the line moves to the geometric midpoint between
the two predictions. Where a rival predicts the same as the named cause (within SAME), the
experiment cannot tell them apart: it checks a proportion, and its outcome is **proportion
checked**, never "confirmed" (it can still refute: the named cause's prediction not met).

Outcome, at CONFIDENCE one-sided: **confirmed** when the bound on the near side passes the
line; **refuted** when the bound on the far side falls short of the minimum effect (the effect
is surely smaller than the named cause gives, whatever the rivals); **inconclusive** otherwise (the interval straddles the line: more pairs
would decide, ``pairs_needed`` says how many). The measured ratio is reported beside the
predicted one with the prediction error, measured / predicted - 1, as causal profilers (Coz)
and Monotasks report theirs.

**False alarms.** A null experiment (the changed arm identical to the control) must come out
confirmed no more often than 1 - CONFIDENCE: tests/unit/analysis/test_experiment_null.py
simulates it with autocorrelated 1-s samples and run-to-run drift, and
benchmarks/bench_null_experiments.py runs it on the embedded cluster.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import stdev
from typing import Any

from xcbench.figures.numbers import as_float
from xcbench.figures.stats import CONFIDENCE, t_quantile

PAIRS = 2  # control/changed pairs per experiment (A-B-B-A), at least
MAX_PAIRS = 8  # more pairs than one experiment may take (8 pairs: 16 replays, ~4 min at 15 s each)
POWER = 0.80  # pairs_needed: the chance the predicted effect passes the line (the usual 80 %)
SAME = 0.01  # two predictions within 1 % of each other are one (quotas and rates are rounded)
MIN_RELIEF = 0.2  # a relief must give this share of the predicted rise (x2 -> x1.2)
MIN_TIGHTEN = 0.5  # a tightening must give this share of the predicted fall (x0.5 -> x0.75)
UNPREDICTED_RELIEF = 2.0  # a relief of unknown size is asked what a x2 relief is asked
KINDS = ("relieve", "tighten")
OUTCOMES = ("confirmed", "proportion checked", "refuted", "inconclusive")
Rate = tuple[float, float]  # (B/s, relative standard error without the between-run term; nan: unknown)


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


def _expected(kind: str, predicted: float | None) -> float | None:
    if predicted is not None and math.isfinite(predicted) and predicted > 0:
        return float(predicted)
    return UNPREDICTED_RELIEF if kind == "relieve" else None


def line(kind: str, predicted: float | None, rivals: dict[str, float] | None = None,
         need: float | None = None) -> tuple[float, bool, str | None]:
    """(the ratio asked, whether the experiment separates the named cause from every rival,
    the nearest rival). The minimum effect (or ``need``), moved to the geometric midpoint
    between the prediction and the nearest rival's where that rival's outcome would pass it; a
    rival predicting the same (within SAME), or a change the wrong way, leaves the experiment
    unable to confirm."""
    asked = need if need is not None else minimum(kind, predicted)
    live = {k: v for k, v in (rivals or {}).items() if isinstance(v, (int, float)) and v > 0}
    if kind == "relieve" and (predicted is None or not math.isfinite(predicted)) and live:
        # the named cause's rise is of unknown size: it confirms only a rise beyond what the
        # rival that explains the most could give
        name, top = max(live.items(), key=lambda kv: kv[1])
        return (max(asked, top * (1.0 + SAME)), True, name) if top > 1.0 else (asked, True, name)
    p = _expected(kind, predicted)
    if not live or p is None:
        return asked, True, None
    up = kind == "relieve"
    name, near = min(live.items(), key=lambda kv: abs(math.log(p / kv[1])))
    if abs(math.log(p / near)) < math.log(1.0 + SAME) or (p > near) != up:
        return asked, False, name
    if (near >= asked) if up else (near <= asked):  # the rival's outcome would pass the line
        asked = math.sqrt(p * near)
    return asked, True, name


def pairs_needed(kind: str, predicted: float | None, asked: float, pair_rel_se: float,
                 confidence: float = CONFIDENCE, power: float = POWER) -> int | None:
    """Pairs the experiment needs for the predicted effect to pass the line ``asked`` with
    probability ``power``: the least n >= PAIRS with (t(conf, n-1) + t(power, n-1)) s / sqrt(n)
    <= |log(predicted / asked)|, s = one pair's log-ratio noise (:func:`pair_noise`). None
    when no n up to MAX_PAIRS will (the effect is within the noise of this level) or nothing is
    predicted."""
    p = _expected(kind, predicted)
    if p is None or not math.isfinite(pair_rel_se) or asked <= 0:
        return None
    gap = math.log(p / asked) if kind == "relieve" else math.log(asked / p)
    if gap <= 0:
        return None
    for n in range(PAIRS, MAX_PAIRS + 1):
        if (t_quantile(confidence, n - 1) + t_quantile(power, n - 1)) * pair_rel_se / math.sqrt(n) <= gap:
            return n
    return None


def _sq(v: float) -> float:
    return v * v if math.isfinite(v) else 0.0


def pair_noise(own: Sequence[Any], between: float | None) -> float:
    """One pair's log-ratio noise: both runs' own errors and the between-run term once per run,
    sqrt(sa^2 + sc^2 + 2 b^2); an unknown error counts 0."""
    return math.sqrt(sum(_sq(as_float(x)) for x in own) + 2 * _sq(as_float(between)))


def judge(kind: str, predicted: float | None, pairs: Sequence[tuple[Rate, Rate]],
          between: float | None = None, confidence: float = CONFIDENCE,
          min_pairs: int = PAIRS, rivals: dict[str, float] | None = None,
          need: float | None = None) -> dict[str, Any]:
    """The outcome of one experiment from its pairs ((control, changed) rates, run order kept;
    each rate's relative error its run's own, without the between-run term, which ``between``
    adds once per run). ``rivals``: {cause: the ratio the experiment predicts under it};
    ``need``: the experiment's own line instead of the minimum effect.

    Returns {"outcome", "why", "ratio", "low", "high", "predicted", "minimum", "separates",
    "nearest_rival", "rivals", "prediction_error", "pairs", "pairs_needed", "pair_ratios",
    "rel_se", "rel_se_model", "rel_se_seen", "quantile", "between", "confidence"}."""
    asked, separates, rival = line(kind, predicted, rivals, need)
    b = as_float(between)
    good = [(a, c) for a, c in pairs if as_float(a[0]) > 0 and as_float(c[0]) > 0]
    logs = [math.log(c[0] / a[0]) for a, c in good]
    noise = [pair_noise((a[1], c[1]), b) for a, c in good]
    typical = math.sqrt(sum(x * x for x in noise) / len(noise)) if noise else math.nan
    out: dict[str, Any] = {"kind": kind, "predicted": predicted, "minimum": asked, "pairs": len(good),
                           "separates": separates, "nearest_rival": rival,
                           "rivals": dict(rivals) if rivals else None,
                           "pair_ratios": [math.exp(x) for x in logs], "confidence": confidence,
                           "between": b if math.isfinite(b) else None, "ratio": None, "low": None,
                           "high": None, "prediction_error": None, "rel_se": None,
                           "rel_se_model": None, "rel_se_seen": None, "quantile": None,
                           "pairs_needed": pairs_needed(kind, predicted, asked, typical, confidence)}
    if len(good) < min_pairs:
        out.update(outcome="inconclusive",
                   why=f"{len(good)} of {len(pairs)} pairs measured a steady rate in both runs "
                       f"(at least {min_pairs} needed)")
        return out
    n = len(good)
    model = typical / math.sqrt(n)
    seen = stdev(logs) / math.sqrt(n) if n >= 2 else math.nan
    se = max(model, seen) if math.isfinite(seen) else model
    q = t_quantile(confidence, n - 1 if n >= 2 else math.inf)
    ratio = math.exp(sum(logs) / n)
    low, high = ratio * math.exp(-q * se), ratio * math.exp(q * se)
    out.update(ratio=ratio, low=low, high=high, rel_se=se, rel_se_model=model, quantile=q,
               rel_se_seen=seen if math.isfinite(seen) else None,
               prediction_error=(ratio / predicted - 1.0) if predicted else None)
    floor = need if need is not None else minimum(kind, predicted)  # what refutes: the minimum effect
    out.update(_outcome(kind, ratio, low, high, asked, floor, separates, rival, confidence,
                        out["pairs_needed"], n))
    pred = (f"predicted x{predicted:.2f}, prediction error {(ratio / predicted - 1) * 100:+.0f} %"
            if predicted else "no prediction")
    out["why"] += f" ({pred}; {n} pairs, noise ±{se * 100:.1f} %, t quantile {q:.2f})"
    return out


def _outcome(kind: str, ratio: float, low: float, high: float, asked: float, floor: float,
             separates: bool, rival: str | None, confidence: float, needed: int | None,
             n: int) -> dict[str, str]:
    """Confirmed past ``asked`` (the line beyond the rivals); refuted short of ``floor`` (the
    minimum effect the named cause demands); between them, inconclusive."""
    pct = f"{confidence * 100:.0f} %"
    up = kind == "relieve"
    near, far = (low, high) if up else (high, low)
    if (near >= asked) if up else (near <= asked):
        why = (f"x{ratio:.2f}, {'at least' if up else 'at most'} x{near:.2f} at {pct} "
               f"{'>=' if up else '<='} x{asked:.2f} asked")
        if separates:
            return {"outcome": "confirmed", "why": why}
        return {"outcome": "proportion checked",
                "why": why + f"; {rival} predicts the same: a proportion checked, not the name"}
    if (far < floor) if up else (far > floor):
        return {"outcome": "refuted", "why": f"x{ratio:.2f}, {'at most' if up else 'at least'} "
                                             f"x{far:.2f} at {pct} {'<' if up else '>'} x{floor:.2f}, the "
                                             "least the named cause gives"}
    more = f"; {needed} pairs would decide" if needed and needed > n else ""
    return {"outcome": "inconclusive",
            "why": f"x{ratio:.2f}, bounds x{low:.2f} and x{high:.2f} at {pct} one-sided straddle "
                   f"the x{asked:.2f} asked{more}"}


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
