"""Two roles in one quota group are at their limit together: the verdict names both."""

from __future__ import annotations

from xcbench.analysis.verdicts.roles import at_limit_verdict, shared_limits

SRC = "cgroup v1 cpu.cfs_quota_us=30000/100000 at /sys/fs/cgroup/cpu/xcb-x-shared"


def _role(cpu, limit, source, throttled=None):
    use = cpu / limit if limit else None
    return {"cpu": cpu, "limit": limit, "source": source, "use": use, "throttled": throttled,
            "saturated": bool(use and use >= 0.85)}


def test_a_driver_and_a_gateway_in_one_quota_are_named_together():
    roles = {"gateway": _role(0.18, 0.3, SRC, 0.7), "client": _role(0.1, 0.3, SRC, 0.7),
             "osd": _role(0.1, 2.0, "host cores (2)")}
    assert not any(x["saturated"] for x in roles.values())  # neither alone is near the quota
    shared = shared_limits(roles)
    assert set(shared) == {"gateway", "client"} and shared["gateway"]["shared_with"] == ["gateway", "client"]
    ev = {"roles": roles}
    verdict, reason = at_limit_verdict(ev, "at 4 transfers (push)", "0.1 GiB/s")
    assert verdict == "gateway" and ev["limited_roles"] == ["gateway", "client"]
    assert "gateway (xrootd, cmsd) and the client (xcbench driver) share one CPU limit" in reason
    assert "0.28 of 0.3 cores" in reason


def test_roles_in_separate_groups_or_below_a_shared_quota_are_not_named_together():
    other = SRC.replace("shared", "other")
    roles = {"gateway": _role(0.18, 0.3, SRC, 0.7), "client": _role(0.1, 0.3, other, 0.0)}
    assert shared_limits(roles) == {}
    idle = {"gateway": _role(0.05, 0.3, SRC, 0.0), "client": _role(0.05, 0.3, SRC, 0.0)}
    assert shared_limits(idle) == {} and at_limit_verdict({"roles": idle}, "at 4", "x") is None
    host = {"gateway": _role(1.2, 2.0, "host cores (2)"), "client": _role(0.6, 2.0, "host cores (2)")}
    assert shared_limits(host) == {}  # the host is no quota group: that is host-cpu's question
