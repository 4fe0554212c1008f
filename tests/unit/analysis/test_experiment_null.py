"""A null experiment (the changed arm identical to the control), judged as a relief and as a
tightening with the usual predictions, comes out confirmed no more often than the stated
confidence promises (5 %). Each run's rate is the mean of ~1-s samples of an AR(1) series
(lag-1 correlation 0.6, CV 10 %: what a level's blocks look like on the 2-core box) around a
run mean that drifts from run to run (3-5 %); its error is the one the runs state
(figures.stats.mean_rel_se)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.ar1 import ar1
from xcbench.analysis.verdicts import experiment as ex
from xcbench.figures.stats import mean_rel_se

TRIALS = 600
STATED = 1 - ex.CONFIDENCE  # a one-sided 95 % bound: at most 5 % false confirmations


def _run(rng: np.random.Generator, drift: float, se_of=mean_rel_se) -> tuple[float, float]:
    x = ar1(rng, 10, 0.6, 100e6 * math.exp(rng.normal(0.0, drift)), 0.10)
    return float(x.mean()), se_of(x)


def _false_rate(kind: str, predicted: float, drift: float, between: float | None, pairs: int,
                need: float | None = None, se_of=mean_rel_se, seed: int = 44) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(TRIALS):
        got = [(_run(rng, drift, se_of), _run(rng, drift, se_of)) for _ in range(pairs)]
        hits += ex.judge(kind, predicted, got, between, need=need)["outcome"] == "confirmed"
    return hits / TRIALS


@pytest.mark.parametrize("kind,predicted", [("relieve", 2.0), ("tighten", 0.5), ("relieve", 1.05),
                                            ("tighten", 0.95)])
@pytest.mark.parametrize("drift,between", [(0.03, 0.03), (0.05, None)])
def test_a_null_experiment_is_confirmed_no_more_often_than_stated(kind, predicted, drift, between):
    assert _false_rate(kind, predicted, drift, between, 2) <= STATED


@pytest.mark.parametrize("pairs", [2, 4])
def test_even_asked_only_to_beat_no_change_a_null_experiment_stays_within_the_stated_rate(pairs):
    # the line at x1.00: any rise beyond the noise would confirm; the noise alone decides
    for kind in ex.KINDS:
        assert _false_rate(kind, 2.0 if kind == "relieve" else 0.5, 0.05, None, pairs, need=1.0) <= STATED


def test_a_judge_that_trusted_independent_samples_and_its_model_alone_would_not(monkeypatch):
    # the check can fail: window errors as if the samples were independent, the pairs' own
    # spread ignored (the model alone) and the normal quantile: far more than 5 % confirmed
    def iid(x):
        return float(np.std(x, ddof=1) / np.mean(x) / math.sqrt(len(x)))
    monkeypatch.setattr(ex, "stdev", lambda _: 0.0)
    monkeypatch.setattr(ex, "t_quantile", lambda c, d: 1.6449)
    assert _false_rate("relieve", 2.0, 0.05, None, 2, need=1.0, se_of=iid) > 2 * STATED
