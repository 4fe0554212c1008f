"""benchmarks/bench_null_experiments.py's judging and counting: each null experiment judged as
a relief and as a tightening; every confirmation counted as a false alarm."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "bench_null_experiments", Path(__file__).parents[3] / "benchmarks" / "bench_null_experiments.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _pairs(*ratios, se=0.02):
    return [((100e6, se), (100e6 * r, se)) for r in ratios]


def test_a_null_experiment_is_judged_both_ways_and_confirms_neither():
    res = bench.judge_null(_pairs(1.01, 0.98), 0.05)
    assert set(res) == {"relieve", "tighten"}
    assert res["relieve"]["minimum"] > 1 > res["tighten"]["minimum"]
    assert {r["outcome"] for r in res.values()} <= {"refuted", "inconclusive"}


def test_the_summary_counts_every_confirmation_as_a_false_alarm():
    quiet = [bench.judge_null(_pairs(1.0, 1.01), 0.02) for _ in range(3)]
    loud = bench.judge_null(_pairs(1.6, 1.62, se=0.001), None)  # an arm that did change: confirmed
    s = bench.summary([*quiet, loud])
    assert s["judgements"] == 8 and s["measured"] == 8
    assert s["confirmed"] == 1  # the loud relief; its tightening is refuted
    assert s["rated"] == 4 and s["inside"] == 3  # x1 outside the loud one's interval


_spec2 = importlib.util.spec_from_file_location(
    "bench_confirm_demo", Path(__file__).parents[3] / "benchmarks" / "bench_confirm_demo.py")
demo = importlib.util.module_from_spec(_spec2)
_spec2.loader.exec_module(demo)


def test_the_demo_confirm_counts_outcomes_and_flags_a_confirmation_that_could_not_refute():
    xs = [{"verdict": "host-cpu", "outcome": "not testable here"},
          {"verdict": "host-cpu", "outcome": "proportion checked", "separates": False},
          {"verdict": "gateway", "outcome": "confirmed", "separates": True},
          {"verdict": "ec-overhead", "outcome": "confirmed", "separates": False},  # must not happen
          {"verdict": "concurrency", "outcome": "refuted", "separates": True}]
    c = demo.counts({"confirmations": xs})
    assert c["all"]["confirmed"] == 2 and c["all"]["not testable here"] == 1
    assert c["unseparated_confirmed"] == 1
    assert demo.line(c["by_verdict"]["host-cpu"]).startswith("0 confirmed / 1 proportion checked / 1 not testable here")
