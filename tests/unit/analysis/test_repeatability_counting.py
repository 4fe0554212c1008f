"""benchmarks/bench_repeatability.py's counting: a borderline verdict agrees with the cause it
names; contradictions (two different causes, neither borderline) are counted apart."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_repeatability", Path(__file__).parents[3] / "benchmarks" / "bench_repeatability.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("a, b, ca, cb, kind", [
    ("client", "client", {"client"}, set(), "agree"),
    ("ec-overhead", "host-cpu", {"ec-overhead"}, {"ec-overhead"}, "borderline"),  # agrees
    ("inconclusive", "client", {"client"}, set(), "borderline"),                   # agrees
    ("host-cpu", "inconclusive", set(), set(), "inconclusive"),
    ("gateway", "storage-bandwidth", set(), set(), "contradiction"),
    ("gateway", "storage-bandwidth", {"client"}, {"client"}, "borderline"),
    # a borderline pass names the verdict on the figure's other side, inconclusive too
    ("host-cpu", "inconclusive", {"host-cpu", "inconclusive"}, {"inconclusive"}, "borderline"),
    ("storage-bandwidth", "host-cpu", {"storage-bandwidth", "host-cpu"}, {"host-cpu"}, "borderline"),
    # two causes that could each be inconclusive still name two different causes
    ("gateway", "storage-bandwidth", {"gateway", "inconclusive"},
     {"storage-bandwidth", "inconclusive"}, "contradiction"),
])
def test_judge(a, b, ca, cb, kind):
    assert bench.judge(a, b, ca, cb) == kind


def test_summarise_two_runs_of_the_same_matrix(tmp_path):
    """Two synthetic runs of the same cells (different noise): every level is judged, the kinds
    add up, and the same known bottlenecks agree."""
    from tests.support.synthrun import GIB, SynthCell, make_run
    from xcbench.analysis.verdicts.run_data import RunData
    cells = [SynthCell("tmpfs", None, None, gateway=2 * GIB),
             SynthCell("cephfs", (4 << 20, 1, 4 << 20), "rep1", gateway=2 * GIB, fio_bw=0.3 * GIB)]
    a, _ = make_run(tmp_path, cells, seed=1, name="first")
    b, _ = make_run(tmp_path, cells, seed=2, name="second")
    s = bench.summarise(RunData(a), RunData(b))
    assert s["judged"] == s["rows"] > 0
    assert sum(s["kinds"].values()) == s["judged"]
    assert s["agree"] == s["kinds"]["agree"] + s["kinds"]["borderline"]
    assert s["kinds"]["contradiction"] == 0, "\n".join(s["lines"])


@pytest.mark.parametrize("a, b, la, lb, kind", [
    ("host-cpu", "ec-overhead", {"ec-overhead"}, set(), "agree"),   # both saw both: exact
    ("host-cpu", "ec-overhead", set(), {"host-cpu"}, "agree"),
    ("host-cpu", "ec-overhead", {"client"}, set(), "contradiction"),  # a co-limit of another name
])
def test_a_verdict_equal_to_the_others_co_limit_agrees_exactly(a, b, la, lb, kind):
    assert bench.judge(a, b, set(), set(), la, lb) == kind


def test_co_limits_are_read_from_names_or_entries_and_absent_is_none():
    assert bench.co_limits({}) == set()
    assert bench.co_limits({"co_limits": ["ec-overhead"]}) == {"ec-overhead"}
    assert bench.co_limits({"co_limits": [{"verdict": "host-cpu", "reason": "x"}, 3]}) == {"host-cpu"}


def test_the_report_prints_the_three_numbers_apart(tmp_path, capsys):
    from tests.support.synthrun import GIB, SynthCell, make_run
    from xcbench.analysis.verdicts.run_data import RunData
    cells = [SynthCell("tmpfs", None, None, gateway=2 * GIB)]
    a, _ = make_run(tmp_path, cells, seed=1, name="first")
    b, _ = make_run(tmp_path, cells, seed=2, name="second")
    s = bench.summarise(RunData(a), RunData(b))
    assert s["exact"] == s["kinds"]["agree"]
    bench.report(s, RunData(a), RunData(b), "", None, type("A", (), {"record": False})())
    out = capsys.readouterr().out
    assert (f"exact agreement {s['exact']}/{s['judged']}" in out and "through a borderline candidate"
            in out and "contradictions 0/" in out)


@pytest.mark.parametrize("x, y, se_x, se_y, holds", [
    (100.0, 110.0, 0.05, 0.05, True),    # log 1.1 = 0.095 <= 1.96 * 0.0707 = 0.139
    (100.0, 130.0, 0.05, 0.05, False),   # log 1.3 = 0.262
    (100.0, 100.0, 0.0, 0.0, True),
    (100.0, 130.0, float("nan"), 0.05, None),  # a level with no stated noise is not judged
    (0.0, 130.0, 0.05, 0.05, None),
])
def test_noise_holds_within_the_two_runs_stated_95_percent(x, y, se_x, se_y, holds):
    assert bench.noise_holds(x, y, se_x, se_y) == holds
