"""Saturation seen directly: a role's hottest thread and run-queue wait, the host's CPU pressure
and the scaling efficiency between levels, as the role and host-cpu rules use them."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from xcbench.analysis.verdicts import saturation as sat
from xcbench.analysis.verdicts.attribution import decide
from xcbench.analysis.verdicts.roles import host_cpu_verdict, role_usage
from xcbench.analysis.verdicts.samples import SampleIndex

GIB = float(1 << 30)
CG = "cgroup v1 cpu.cfs_quota_us=25000/100000 at /sys/fs/cgroup/cpu/xcb-r-gateway"
HOST = "host cores (2; no CFS quota or cpuset below them)"
WIN = [(2.0, 8.0)]


def rows(metric, value, labels):
    return [{"cell_id": "c", "wall": float(w), "metric": metric, "value": value,
             "labels": json.dumps(labels)} for w in range(10)]


def role(name, cpu, limit, source, wait=None, hot=None, throttled=None):
    out = rows("role_cpu_cores", cpu, {"role": name}) + \
        rows("role_cpu_limit_cores", limit, {"role": name, "source": source})
    if throttled is not None:
        out += rows("role_cpu_throttled", throttled, {"role": name})
    if wait is not None:
        out += rows("role_runq_wait", wait, {"role": name})
    if hot is not None:
        lab = {"role": name, "thread": "xrootd", "tid": 7}
        out += rows("role_hot_thread_cores", hot, lab) + rows("role_hot_thread_wait", 0.01, lab)
    return out


def test_efficiency_is_to_the_next_level_or_from_the_last():
    levels = [(4, 5.0), (1, 4.0), (16, 10.0)]
    assert sat.efficiency(levels, 1) == pytest.approx((5.0 / 4.0 / 4, 1, 4))
    assert sat.efficiency(levels, 16) == pytest.approx((2.0 / 4, 4, 16))
    assert sat.efficiency([(1, 4.0)], 1) is None and sat.efficiency(levels, 8) is None


def test_a_thread_at_a_core_saturates_a_role_without_a_quota():
    s = SampleIndex(pd.DataFrame(role("gateway", 1.1, 2.0, HOST, wait=0.05, hot=0.97)
                                 + role("client", 0.9, 2.0, HOST, wait=0.05, hot=0.6)))
    u = role_usage(s, "c", WIN)
    assert u["gateway"]["saturated"] and u["gateway"]["limited_by"] == ["thread"]
    assert u["gateway"]["hot_thread"]["name"] == "xrootd"
    assert not u["client"]["saturated"]  # its busiest thread at 0.6 of a core: not its limit
    ev = {"rate": GIB, "concurrency": 4, "mode": "push", "cores": 2.0, "host_busy": 0.8,
          "starved_frac": 0.0, "backend": "tmpfs", "roles": u}
    verdict, reason = decide(ev)
    assert verdict == "gateway" and "busiest thread (xrootd) at 0.97 of one core" in reason, reason


def test_run_queue_wait_saturates_a_role_under_its_own_quota_only():
    # 0.2 of a 0.25-core quota (80 %, below NEAR), throttled in 30 % of its periods, waiting
    # 75 % of its runnable time: the quota holds it
    s = SampleIndex(pd.DataFrame(role("gateway", 0.2, 0.25, CG, wait=0.6, throttled=0.3)
                                 + role("client", 0.2, 2.0, HOST, wait=0.6)))
    u = role_usage(s, "c", WIN)
    assert u["gateway"]["wait_share"] == pytest.approx(0.75)
    assert u["gateway"]["limited_by"] == ["run-queue wait"] and u["gateway"]["saturated"]
    assert u["client"]["wait_share"] == pytest.approx(0.75) and not u["client"]["saturated"]


def test_a_quota_that_never_throttled_does_not_own_the_wait():
    # the self-test's decoy: a 2.2-core quota on a full 2-core host, never throttled; the
    # gateway waits 62 % of its runnable time for the host's cores, not for its quota
    s = SampleIndex(pd.DataFrame(role("gateway", 1.45, 2.2, CG, wait=2.4, throttled=0.0)))
    u = role_usage(s, "c", WIN)["gateway"]
    assert u["wait_share"] > 0.5 and u["limited_by"] == [] and not u["saturated"]


def test_an_idle_role_has_no_wait_share():
    s = SampleIndex(pd.DataFrame(role("gateway", 0.01, 0.25, CG, wait=0.03, hot=0.01)))
    u = role_usage(s, "c", WIN)["gateway"]
    assert u["wait_share"] is None and not u["saturated"] and u["limited_by"] == []


def _host_ev(busy, pressure=math.nan, wait=None, eff=None):
    roles = {"gateway": {"cpu": 0.8, "limit": 2.0, "source": HOST, "use": 0.4, "saturated": False,
                         "runq_wait": wait},
             "client": {"cpu": 0.6, "limit": 2.0, "source": HOST, "use": 0.3, "saturated": False,
                        "runq_wait": wait}}
    ev = {"roles": roles, "host_busy": busy, "cores": 2.0, "cpu_pressure": pressure}
    if eff is not None:
        ev["scaling_efficiency"] = {"value": eff, "high": eff * 1.05, "from": 1.0, "to": 4.0}
    return ev


def test_host_cpu_needs_waiting_tasks_where_waiting_was_measured():
    at = "at 4 transfers (push)"
    assert host_cpu_verdict(_host_ev(0.9), at, "1 GiB/s")[0] == "host-cpu"  # nothing measured: as before
    assert host_cpu_verdict(_host_ev(0.9, pressure=0.02, wait=0.01), at, "1 GiB/s") is None
    v, reason = host_cpu_verdict(_host_ev(0.9, pressure=0.6, wait=0.3), at, "1 GiB/s")
    assert v == "host-cpu" and "tasks waited for a CPU 60 % of the time" in reason, reason


def test_host_cpu_below_the_busy_cut_when_the_chain_waits_and_more_transfers_gain_little():
    at = "at 4 transfers (push)"
    # 82 % busy: the chain waits 30 % of its runnable time, and x4 transfers gave x1.3
    v, reason = host_cpu_verdict(_host_ev(0.82, pressure=0.5, wait=0.6, eff=0.33), at, "1 GiB/s")
    assert v == "host-cpu" and "efficiency 33 %" in reason, reason
    # the same with an efficiency that may be 0.5 or more: not shown
    assert host_cpu_verdict(_host_ev(0.82, pressure=0.5, wait=0.6, eff=0.6), at, "1 GiB/s") is None
    # nor when the chain's own tasks do not wait (others' work fills the pressure)
    assert host_cpu_verdict(_host_ev(0.82, pressure=0.5, wait=0.05, eff=0.33), at, "1 GiB/s") is None


def test_the_evidence_carries_pressure_and_the_efficiency_with_its_noise():
    class View:
        rates = {1.0: 4.0, 4.0: 5.2}

        def levels_rate(self, cid):
            return list(self.rates.items())

        def point(self, cid, c):
            return {"c": c}
    s = SampleIndex(pd.DataFrame(rows("cpu.pressure.some", 0.4, {"scope": "system"})))
    ev: dict = {}
    sat.add_evidence(View(), s, "c", 4.0, WIN, ev, lambda p: 0.05)
    assert ev["cpu_pressure"] == pytest.approx(0.4) and ev["cpu_pressure_rel_se"] == pytest.approx(0.0, abs=1e-12)
    e = ev["scaling_efficiency"]
    assert e["value"] == pytest.approx(1.3 / 4) and (e["from"], e["to"]) == (1.0, 4.0)
    assert e["high"] > e["value"]  # the upper end of its interval from both levels' noise
    ev = {}
    sat.add_evidence(View(), SampleIndex(pd.DataFrame(rows("cpu.busy", 0.5, {"cpu": "all"}))), "c", 1.0,
                     WIN, ev, lambda p: math.nan)
    assert math.isnan(ev["cpu_pressure"]) and ev["scaling_efficiency"]["high"] == pytest.approx(1.3 / 4)
