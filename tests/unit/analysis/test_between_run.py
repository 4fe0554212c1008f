"""Between-run noise (analysis.verdicts.between_run): measured from pairs of runs on fresh clusters,
kept per host, copied into a run's manifest, and added to the figures' own errors."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from tests.support.evidence import _ev, _role
from tests.support.synthrun import GIB, SynthCell, make_run
from xcbench.analysis.verdicts import between_run
from xcbench.analysis.verdicts.attribution import attribute, decide
from xcbench.store.rundir import RunDir


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


Q90_NORMAL = 1.6449 * math.sqrt(2)  # 90 % quantile of |d| for two runs each of spread 1


def test_sigma_puts_the_95_percent_bound_where_the_measured_pairs_put_it():
    assert math.isclose(between_run.sigma([0.0674, -0.0674, 0.0674]), 0.0674 / Q90_NORMAL, rel_tol=1e-4)
    assert math.isnan(between_run.sigma([]))
    # heavy tails: the same median, two differences in ten far out: the spread the 95 % bound
    # needs is theirs, not the median's
    body = [0.03] * 8
    assert between_run.sigma(body + [0.30] * 2) > 5 * between_run.sigma(body + [0.03] * 2)


def test_sigma_of_normal_differences_is_their_spread():
    rng = np.random.default_rng(7)
    d = rng.normal(0, 0.05, 20000) - rng.normal(0, 0.05, 20000)
    assert abs(between_run.sigma(list(d)) / 0.05 - 1) < 0.03


def test_a_term_needs_two_pairs_and_this_hosts_file_else_it_is_assumed(home):
    got = between_run.load()  # no file: every quantity assumed, and said so
    assert got["assumed"] == list(between_run.QUANTITIES) and got["rate"] == between_run.ASSUMED["rate"]
    one = between_run.record(("a", "b"), {"rate": [0.05] * 12, "host_busy": [0.01] * 12})
    assert one["rate"] == between_run.ASSUMED["rate"] and "rate" in one["assumed"]  # one pair is one draw
    got = between_run.record(("c", "d"), {"rate": [-0.05] * 4, "host_busy": [0.01] * 4})
    assert got["pairs"] == 2 and got["rate_levels"] == 16 and got["rate_pairs"] == 2  # pooled over both pairs
    assert math.isclose(got["rate"], 0.05 / Q90_NORMAL, rel_tol=1e-4)
    assert "rate" not in got["assumed"] and "fio_write_bw" in got["assumed"]  # no probe figures: assumed
    data = json.loads(between_run.path().read_text())
    data["host"]["hostname"] = "another-host"
    between_run.path().write_text(json.dumps(data))
    assert between_run.load()["assumed"] == list(between_run.QUANTITIES)  # another host's is not this one's
    between_run.path().write_text("{not json")
    assert between_run.load()["assumed"] == list(between_run.QUANTITIES)


def test_the_runs_own_noise_is_taken_out_of_their_differences_not_counted_twice(home):
    # levels 5 % apart whose own errors together were 4 %: 3 % is what differs between runs
    assert math.isclose(between_run.sigma([0.05] * 10, [0.04] * 10), 0.03 / Q90_NORMAL, rel_tol=1e-4)
    assert between_run.sigma([0.03] * 10, [0.05] * 10) == 0.0  # within their own noise: nothing more
    between_run.record(("a", "b"), {"rate": [0.05] * 6}, {"rate": [0.04] * 6})
    got = between_run.record(("c", "d"), {"rate": [0.05] * 6}, {"rate": [0.04] * 6})
    assert math.isclose(got["rate"], 0.03 / Q90_NORMAL, rel_tol=1e-4)


def test_each_quantity_has_a_term_once_two_pairs_measured_it(home):
    # the file of an older xcbench has no probe figures: its rate term still counts
    between_run.record(("a", "b"), {"rate": [0.05] * 12, "host_busy": [0.01] * 12})
    got = between_run.record(("c", "d"), {"rate": [0.05] * 12, "host_busy": [0.01] * 12,
                                          "fio_write_bw": [0.1] * 5, "fio_read_bw": [0.2] * 5})
    assert got["rate_levels"] == 24 and "fio_write_bw" in got["assumed"]  # one pair of probes yet
    got = between_run.record(("e", "f"), {"fio_write_bw": [-0.1] * 5, "fio_read_bw": [0.2] * 5})
    assert got["fio_write_bw_levels"] == 10 and math.isclose(got["fio_write_bw"], 0.1 / Q90_NORMAL, rel_tol=1e-4)
    assert math.isclose(got["fio_read_bw"], 0.2 / Q90_NORMAL, rel_tol=1e-4) and "fio_write_iops" in got["assumed"]
    assert between_run.of({"between_run": got})["fio_read_bw"] == got["fio_read_bw"]


def test_a_file_others_can_write_is_not_acted_on(home):
    between_run.record(("a", "b"), {"rate": [0.05] * 8, "host_busy": [0.01] * 8})
    between_run.record(("c", "d"), {"rate": [0.05] * 8, "host_busy": [0.01] * 8})
    assert "rate" not in between_run.load()["assumed"]
    os.chmod(between_run.path(), 0o666)
    assert "rate" in between_run.load()["assumed"]


def test_an_assumed_term_is_said_in_one_legend_line():
    got = {"between_run": {**between_run.ASSUMED, "assumed": list(between_run.QUANTITIES)}}
    line = between_run.legend(got)
    assert line.startswith("between-run noise assumed (no pairs recorded on this host): rate ±11 %")
    assert "host CPU ±2 %" in line and "--record" in line and "\n" not in line
    assert between_run.legend({"between_run": {"rate": 0.05, "pairs": 2}}) is None
    assert between_run.legend({}) is None and between_run.assumed({}) == []


def test_only_a_runs_own_record_counts():
    assert between_run.of({}) == {}
    assert between_run.of({"between_run": {"rate": 0.05, "host_busy": -1, "pairs": 2}}) == {"rate": 0.05}


def _host(busy, **kw):
    return _ev(rate=0.2 * GIB, cores=2.0, roles={"gateway": _role(0.5, 2.0), "client": _role(0.9, 2.0)},
               host_busy=busy, host_busy_rel_se=0.002, **kw)


def test_host_cpu_just_under_its_threshold_is_borderline_only_with_a_between_run_term():
    # 84.2 % busy, +-0.3 % of its own: surely under 85 % in this run, so not borderline; another
    # fresh cluster measured this level 1-2 % apart, and with that term it is
    ev = _host(0.842)
    assert decide(ev)[0] == "inconclusive" and ev["borderline"] is False
    ev = _host(0.842, between_run={"host_busy": 0.012})
    got, reason = decide(ev)
    assert got == "inconclusive" and "host-cpu" in {c["rule"] for c in ev["borderline_candidates"]}
    assert "borderline: host CPU busy" in reason


def test_a_run_with_a_recorded_term_widens_its_rates_errors(tmp_path, home):
    cells = [SynthCell("tmpfs", concurrency=(1, 4), files=16, repeats=1)]
    path, _ = make_run(tmp_path / "plain", cells)
    plain = {(r["cell_id"], r["concurrency"]): json.loads(r["evidence"]) for r in attribute(RunDir.open(path))}
    run = RunDir.open(path)
    run.state.extra["between_run"] = {"rate": 0.05, "host_busy": 0.01, "pairs": 2}
    run.save_manifest()
    wide = {(r["cell_id"], r["concurrency"]): json.loads(r["evidence"]) for r in attribute(RunDir.open(path))}
    for key, ev in wide.items():
        own = plain[key]["rate_rel_se"]
        assert math.isclose(ev["rate_rel_se"], math.hypot(own, 0.05))
        assert ev["between_run"]["rate"] == 0.05 and "between runs 5.0 %" in ev["rate_noise"]
    low = [ev for ev in wide.values() if "best_higher_growth_low" in ev]
    assert low and all(ev["best_higher_growth_low"] < plain[k]["best_higher_growth_low"]
                       for k, ev in wide.items() if "best_higher_growth_low" in ev)
