"""Causes, not names: a capped level held against the same level uncapped (constructed evidence)."""

from __future__ import annotations

import json

import pytest

from xcbench.selftest import SCENARIOS, output
from xcbench.selftest.cause import compare
from xcbench.selftest.judging import judge_levels, verdict_ok
from xcbench.selftest.scenarios import DECOY, Check, sizes_for


def _ev(rate: float, se: float, use: float | None = None, saturated: bool = False) -> dict:
    roles = {} if use is None else {"gateway": {"cpu": use * 0.2, "limit": 0.2, "use": use,
                                                "throttled": 0.9 if saturated else 0.01,
                                                "saturated": saturated, "source": "cgroup v1"}}
    return {"rate": rate, "rate_rel_se": se, "roles": roles}


def test_a_capped_level_slower_beyond_its_noise_with_the_role_at_its_quota_is_a_cause():
    c = compare(_ev(60e6, 0.02, 0.98, True), _ev(180e6, 0.02), "gateway")
    assert c["ok"] and c["slower"] and c["at_quota"]
    assert c["slowdown"] == pytest.approx(3.0) and 1.0 < c["slowdown_low"] < 3.0
    assert "capped 60.0 MB/s (±2.0 %) vs uncapped 180.0 MB/s" in c["note"]


def test_a_drop_within_the_noise_is_not_a_cause_even_when_the_name_is_right():
    # 5 % slower, each level +-5 %: the lower bound of uncapped/capped is below 1
    c = compare(_ev(95e6, 0.05, 0.98, True), _ev(100e6, 0.05), "gateway")
    assert not c["slower"] and not c["ok"] and "NOT slower beyond the noise" in c["note"]
    # the same drop, far more precise levels: it is beyond the noise
    assert compare(_ev(95e6, 0.005, 0.98, True), _ev(100e6, 0.005), "gateway")["slower"]


def test_a_role_below_its_quota_did_not_cause_the_drop():
    c = compare(_ev(60e6, 0.02, 0.5, False), _ev(180e6, 0.02), "gateway")
    assert c["slower"] and not c["at_quota"] and not c["ok"] and "NOT at its quota" in c["note"]


def test_no_uncapped_level_is_no_cause():
    c = compare(_ev(60e6, 0.02, 0.98, True), None, "gateway")
    assert not c["ok"] and "no uncapped rate" in c["note"]


def test_a_decoy_is_right_when_it_does_not_bind_and_the_role_is_not_named():
    s = SCENARIOS["decoy"]
    assert s.decoy and s.cap == "gateway" and "gateway" not in s.expected and "host-cpu" in s.expected
    assert compare(_ev(170e6, 0.02, 0.4), _ev(180e6, 0.02), "gateway", decoy=True)["ok"]
    bound = compare(_ev(170e6, 0.02, 0.97, True), _ev(180e6, 0.02), "gateway", decoy=True)
    assert not bound["ok"] and "not a decoy" in bound["note"]
    assert DECOY > 1


def _verdicts(verdict: str, rate: float, use: float, sat: bool) -> dict:
    return {("cap", 4): {"verdict": verdict, "reason": "r", "evidence": _ev(rate, 0.02, use, sat)}}


def test_the_judge_fails_a_right_name_without_its_cause_and_the_json_carries_both_rates():
    s = SCENARIOS["gateway"]
    cap = {"role": "gateway", "cores": 0.2, "fraction": 0.5, "uncapped_least_cores": 0.4}
    unc = {4: _ev(100e6, 0.02)}
    # right name, the capped level as fast as uncapped: a rule naming the throttled role would pass
    (c,) = judge_levels(s, "tmpfs", "cap", (4,), _verdicts("gateway", 99e6, 0.98, True), {}, cap, unc)
    assert c.verdict == "gateway" and not c.ok
    (c,) = judge_levels(s, "tmpfs", "cap", (4,), _verdicts("gateway", 50e6, 0.98, True), {}, cap, unc)
    assert c.ok and c.cause["slower"]
    d = json.loads(output.as_json({"checks": [c], "runs": {}, "ok": True}))
    cause = d["checks"][0]["cause"]
    assert cause["capped_bytes_per_s"] == 50e6 and cause["uncapped_bytes_per_s"] == 100e6
    assert cause["capped_rel_se"] == 0.02 and cause["uncapped_rel_se"] == 0.02
    assert "x2.00 (>=x" in output.text({"checks": [c], "runs": {}, "ok": True})


def test_a_level_not_run_fails_unless_its_scenario_is_allowed_missing():
    c = Check("storage", "cephfs-rep", "x", 4, ("storage-iops",), "not run", "no OSD CPU", False)
    assert not verdict_ok({"checks": [c]})
    assert verdict_ok({"checks": [c], "allow_missing": ["storage"]})
    assert not verdict_ok({"checks": [], "not_run": []})  # nothing checked is not a pass


@pytest.mark.parametrize("cores", [1, 2, 8, 64])
def test_levels_follow_the_hosts_cores(cores):
    quick, full = sizes_for(True, cores), sizes_for(False, cores)
    assert quick.levels == (2 * cores, 4 * cores) and full.levels == (2 * cores, 4 * cores, 8 * cores)


def test_this_hosts_levels_are_sized_from_its_own_affinity():
    import os

    from xcbench.selftest.scenarios import QUICK, host_cores
    assert host_cores() == len(os.sched_getaffinity(0))
    assert QUICK.levels[0] == 2 * host_cores()


def test_a_shared_quota_must_name_both_roles_and_is_sized_from_their_summed_cpu():
    from xcbench.selftest.judging import least_use
    s = SCENARIOS["shared-quota"]
    assert s.cap == "gateway+client" and set(s.expected) == {"gateway", "client"}
    ok, note = s.extra({"limited_role": "gateway", "limited_roles": ["gateway", "client"]})
    assert ok and "gateway, client" in note
    ok, note = s.extra({"limited_role": "gateway"})
    assert not ok and "both expected" in note
    base = {("c", 4): {"evidence": {"roles": {"gateway": {"cpu": 1.0}, "client": {"cpu": 0.3}}}},
            ("c", 8): {"evidence": {"roles": {"gateway": {"cpu": 1.2}, "client": {"cpu": 0.2}}}}}
    assert least_use(base, "c", "gateway+client", (4, 8)) == pytest.approx(1.3)
    assert least_use(base, "c", "gateway", (4, 8)) == pytest.approx(1.0)


def test_a_decoys_quota_comes_from_what_the_gateway_could_use_not_from_a_loaded_runs_use():
    """Measured under others' load, the gateway used 0.4 cores while others held 1.2 of the
    box's 2: it could have used 1.6, and the decoy's quota is 1.5 x that (a quota of 1.5 x 0.4
    = 0.6 bound once the others' load went away). On a quiet box (others 0) it is its use."""
    from xcbench.selftest.judging import could_use
    roles = {"gateway": {"cpu": 0.4}, "client": {"cpu": 0.2}, "mount": {"cpu": 0.0}}
    loaded = {("c", 4): {"evidence": {"roles": roles, "host_busy": 0.9, "cores": 2.0}}}
    assert could_use(loaded, "c", "gateway", (4,), 2.0, False) == pytest.approx(0.4 + (1.8 - 0.6))
    quiet = {("c", 4): {"evidence": {"roles": {**roles, "gateway": {"cpu": 1.3}}, "host_busy": 0.75,
                                     "cores": 2.0}}}
    assert could_use(quiet, "c", "gateway", (4,), 2.0, False) == pytest.approx(1.3)
    full = {("c", 4): {"evidence": {"roles": roles, "host_busy": 1.0, "cores": 4.0}}}
    assert could_use(full, "c", "gateway", (4,), 2.0, False) == pytest.approx(2.0)  # at most the host
    assert could_use({}, "c", "gateway", (4,), 2.0, False) is None
