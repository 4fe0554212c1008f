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
    from tests.unit.synthrun import GIB, SynthCell, make_run
    from xcbench.analysis.run_data import RunData
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
    # both runs see both causes: the rules' order named one first on each
    ("ec-overhead", "host-cpu", {"host-cpu"}, set(), "agree"),
    ("host-cpu", "ec-overhead", set(), {"host-cpu"}, "agree"),
    ("host-cpu", "ec-overhead", {"storage-bandwidth"}, set(), "contradiction"),
])
def test_a_verdict_among_the_others_co_limits_agrees_exactly(a, b, la, lb, kind):
    assert bench.judge(a, b, set(), set(), la, lb) == kind
