"""host-cpu proven by intervention: every role under one quota at half the host must take the
rate down in proportion; a level that keeps its rate is not host-cpu, whatever the rule said."""

from __future__ import annotations

from xcbench.selftest import intervene
from xcbench.selftest.scenarios import SCENARIOS, Check


def _check(verdict: str = "host-cpu") -> Check:
    return Check("host-cpu", "tmpfs", "abc", 4, ("host-cpu",), verdict, "why", verdict == "host-cpu")


def test_the_quota_takes_every_role_and_half_the_host():
    assert intervene.roles(False) == "gateway+client+mount"
    assert intervene.roles(True) == "gateway+client+mount+osd+mds+mon+mgr"
    assert intervene.quota(2) == 1.0 and intervene.quota(3) == 1.5


def test_a_rate_that_halves_checks_host_cpus_proportion_never_confirms_the_name():
    c = intervene.apply(_check(), {"rate": 52e6, "rate_rel_se": 0.03}, {"rate": 100e6, "rate_rel_se": 0.03},
                        1.0, 2.0)
    # every rival predicts the same fall under a quota below the roles' use
    assert c.ok and c.cause["outcome"] == "proportion checked" and c.cause["ratio"] < 0.55
    assert "proportion checked by intervention" in c.note and "not the name" in c.note
    assert c.cause["slowdown"] > 1.8


def test_a_rate_that_holds_under_half_the_host_refutes_the_name():
    c = intervene.apply(_check(), {"rate": 97e6, "rate_rel_se": 0.03}, {"rate": 100e6, "rate_rel_se": 0.03},
                        1.0, 2.0)
    assert not c.ok and c.cause["outcome"] == "refuted" and "NOT met" in c.note


def test_a_wrong_name_stays_wrong_even_when_the_rate_halves():
    c = intervene.apply(_check("gateway"), {"rate": 50e6, "rate_rel_se": 0.03},
                        {"rate": 100e6, "rate_rel_se": 0.03}, 1.0, 2.0)
    assert not c.ok


def test_no_rate_under_the_quota_is_no_proof():
    c = intervene.apply(_check(), None, {"rate": 100e6, "rate_rel_se": 0.03}, 1.0, 2.0)
    assert not c.ok and c.cause["outcome"] == "inconclusive"


def test_the_host_cpu_scenario_asks_for_the_intervention():
    assert SCENARIOS["host-cpu"].intervene == "half-host"


def test_the_ec_cost_is_predicted_from_raw_bytes_not_the_rules_ratio():
    assert intervene.ec_prediction({"raw_per_logical": 1.5, "ec_ratio": 0.99}, {"raw_per_logical": 1.0}) \
        == 1 / 1.5
    assert intervene.ec_prediction({"raw_expected": 1.5}, {"raw_expected": 1.0}) == 1 / 1.5
    assert intervene.ec_prediction({"raw_per_logical": 1.0}, {"raw_per_logical": 1.0}) is None


def test_ec_pairs_take_the_twin_and_the_ec_cell_from_both_runs():
    ev = {("rep", 4): {"evidence": {"rate": 100.0, "rate_rel_se": 0.02}},
          ("ec", 4): {"evidence": {"rate": 60.0, "rate_rel_se": 0.02}}}
    pairs = intervene.ec_pairs(ev, ev, "ec", "rep", 4)
    assert pairs == [((100.0, 0.02), (60.0, 0.02))] * 2
    assert intervene.ec_pairs(ev, {}, "ec", "rep", 8) == []


def test_the_right_ec_verdicts_follow_the_interleaved_experiment():
    assert intervene.ec_expect({"outcome": "confirmed", "why": "x"}, {})[0] == ("ec-overhead",)
    refuted = intervene.ec_expect({"outcome": "refuted", "why": "x"}, {})[0]
    assert "ec-overhead" not in refuted and "host-cpu" in refuted
    assert intervene.ec_expect({"outcome": "inconclusive", "why": "x"}, {})[0] == ("inconclusive",)
    assert "ec-overhead" in intervene.ec_expect({"outcome": "inconclusive", "why": "x"}, {"borderline": True})[0]
    assert SCENARIOS["ec-uncapped"].intervene == "ec-twin"


def test_the_quota_is_half_of_what_the_roles_had():
    assert intervene.quota(2.0, None) == 1.0
    assert intervene.quota(2.0, 3.0) == 1.0  # never above the host
    assert intervene.quota(2.0, 1.1) == 0.55  # others held the rest of the host
    evs = [{"roles": {"gateway": {"cpu": 0.8}, "client": {"cpu": 0.3}, "probe": {"cpu": 1.0}}},
           {"roles": {"gateway": {"cpu": 0.9}, "client": {"cpu": 0.3}}}, None]
    assert abs((intervene.used(evs, "gateway+client+mount") or 0) - 1.1) < 1e-9
    assert intervene.used([None, {}], "gateway") is None
