"""host-cpu proven by intervention: every role under one quota at half the host must take the
rate down in proportion; a level that keeps its rate is not host-cpu, whatever the rule said."""

from __future__ import annotations

from xcbench.selftest import intervene
from xcbench.selftest.scenarios import SCENARIOS, Check


def _check(verdict: str = "host-cpu") -> Check:
    return Check("host-cpu", "tmpfs", "abc", 4, ("host-cpu",), verdict, "why", verdict == "host-cpu")


def test_the_quota_takes_every_role_and_half_the_host():
    assert intervene.roles(False) == "gateway+client"
    assert intervene.roles(True) == "gateway+client+osd+mds+mon+mgr"
    assert intervene.quota(2) == 1.0 and intervene.quota(3) == 1.5


def test_a_rate_that_halves_confirms_host_cpu():
    c = intervene.apply(_check(), {"rate": 52e6, "rate_rel_se": 0.03}, {"rate": 100e6, "rate_rel_se": 0.03},
                        1.0, 2.0)
    assert c.ok and c.cause["outcome"] == "confirmed" and c.cause["ratio"] < 0.55
    assert "confirmed by intervention" in c.note and c.cause["slowdown"] > 1.8


def test_a_rate_that_holds_under_half_the_host_refutes_the_name():
    c = intervene.apply(_check(), {"rate": 97e6, "rate_rel_se": 0.03}, {"rate": 100e6, "rate_rel_se": 0.03},
                        1.0, 2.0)
    assert not c.ok and c.cause["outcome"] == "refuted" and "NOT confirmed" in c.note


def test_a_wrong_name_stays_wrong_even_when_the_rate_halves():
    c = intervene.apply(_check("gateway"), {"rate": 50e6, "rate_rel_se": 0.03},
                        {"rate": 100e6, "rate_rel_se": 0.03}, 1.0, 2.0)
    assert not c.ok


def test_no_rate_under_the_quota_is_no_proof():
    c = intervene.apply(_check(), None, {"rate": 100e6, "rate_rel_se": 0.03}, 1.0, 2.0)
    assert not c.ok and c.cause["outcome"] == "inconclusive"


def test_the_host_cpu_scenario_asks_for_the_intervention():
    assert SCENARIOS["host-cpu"].intervene == "half-host"
