"""benchmarks/bench_repeatability.py's counting, strict: exact, co-limit matches, candidate
matches and contradictions each apart, the causes named per level, and the three criteria."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_repeatability", Path(__file__).parents[3] / "benchmarks" / "bench_repeatability.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("a, b, ca, cb, la, lb, kind", [
    ("client", "client", {"client"}, {"client"}, set(), set(), "exact"),
    ("host-cpu", "ec-overhead", {"host-cpu"}, {"ec-overhead"}, {"ec-overhead"}, set(), "co-limit"),
    ("host-cpu", "ec-overhead", {"host-cpu"}, {"ec-overhead"}, set(), {"host-cpu"}, "co-limit"),
    ("ec-overhead", "host-cpu", {"ec-overhead", "host-cpu"}, {"host-cpu"}, set(), set(), "candidate"),
    ("inconclusive", "client", {"inconclusive", "client"}, {"client"}, set(), set(), "candidate"),
    ("host-cpu", "inconclusive", {"host-cpu"}, {"inconclusive"}, set(), set(), "inconclusive"),
    ("gateway", "storage-bandwidth", {"gateway"}, {"storage-bandwidth"}, set(), set(), "contradiction"),
    # sharing a candidate no longer makes two different causes agree
    ("gateway", "storage-bandwidth", {"gateway", "client"}, {"storage-bandwidth", "client"}, set(), set(),
     "contradiction"),
    # a co-limit of a third name is no match
    ("host-cpu", "ec-overhead", {"host-cpu"}, {"ec-overhead"}, {"client"}, set(), "contradiction"),
    ("gateway", "storage-bandwidth", {"gateway", "inconclusive"},
     {"storage-bandwidth", "inconclusive"}, set(), set(), "contradiction"),
])
def test_each_kind_of_agreement_is_counted_apart(a, b, ca, cb, la, lb, kind):
    assert bench.judge(a, b, ca, cb, la, lb) == kind


def test_causes_named_per_level_count_the_verdict_its_co_limits_and_candidates():
    assert bench.named("host-cpu", {"host-cpu", "ec-overhead"}, {"concurrency"}) == 3
    assert bench.named("inconclusive", {"inconclusive"}, set()) == 0


def _two_runs(tmp_path):
    from tests.support.synthrun import GIB, SynthCell, make_run
    from xcbench.analysis.verdicts.run_data import RunData
    cells = [SynthCell("tmpfs", None, None, gateway=2 * GIB),
             SynthCell("cephfs", (4 << 20, 1, 4 << 20), "rep1", gateway=2 * GIB, fio_bw=0.3 * GIB)]
    a, _ = make_run(tmp_path, cells, seed=1, name="first")
    b, _ = make_run(tmp_path, cells, seed=2, name="second")
    return RunData(a), RunData(b)


def test_summarise_two_runs_of_the_same_matrix(tmp_path):
    """Two synthetic runs of the same cells (different noise): every level is judged, the kinds
    add up, and the same known bottlenecks agree."""
    a, b = _two_runs(tmp_path)
    s = bench.summarise(a, b)
    assert s["judged"] == s["rows"] > 0
    assert sum(s["kinds"].values()) == s["judged"] and s["exact"] == s["kinds"]["exact"]
    assert s["kinds"]["contradiction"] == 0, "\n".join(s["lines"])
    assert 0 < s["causes_per_level"] <= 4


def test_co_limits_are_read_from_names_or_entries_and_absent_is_none():
    assert bench.co_limits({}) == set()
    assert bench.co_limits({"co_limits": ["ec-overhead"]}) == {"ec-overhead"}
    assert bench.co_limits({"co_limits": [{"verdict": "host-cpu", "reason": "x"}, 3]}) == {"host-cpu"}


def test_the_report_prints_the_four_counts_the_causes_per_level_and_the_criteria(tmp_path, capsys):
    a, b = _two_runs(tmp_path)
    s = bench.summarise(a, b)
    bench.report(s, a, b, "", None, type("A", (), {"record": False})())
    out = capsys.readouterr().out
    k, n = s["kinds"], s["judged"]
    assert (f"exact {k['exact']}/{n}, co-limit matches {k['co-limit']}/{n}, candidate matches "
            f"{k['candidate']}/{n}, contradictions {k['contradiction']}/{n}") in out
    assert "causes named per level" in out
    assert out.count("criterion ") == 3 and "contradictions 0 (0)" in out


def test_the_criteria_fail_where_they_should():
    s = {"judged": 12, "kinds": {"exact": 10, "contradiction": 1}, "noise_within": 4, "noise_rated": 12}
    assert [met for _, met in bench.criteria(s)] == [False, False, False]  # 83 %, 1, 33 %
    s = {"judged": 12, "kinds": {"exact": 11, "contradiction": 0}, "noise_within": 11, "noise_rated": 12}
    assert [met for _, met in bench.criteria(s)] == [True, True, True]


@pytest.mark.parametrize("x, y, se_x, se_y, holds", [
    (100.0, 110.0, 0.05, 0.05, True),    # log 1.1 = 0.095 <= 1.96 * 0.0707 = 0.139
    (100.0, 130.0, 0.05, 0.05, False),   # log 1.3 = 0.262
    (100.0, 100.0, 0.0, 0.0, True),
    (100.0, 130.0, float("nan"), 0.05, None),  # a level with no stated noise is not judged
    (0.0, 130.0, 0.05, 0.05, None),
])
def test_noise_holds_within_the_two_runs_stated_95_percent(x, y, se_x, se_y, holds):
    assert bench.noise_holds(x, y, se_x, se_y) == holds
