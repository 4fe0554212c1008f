"""The role rules of the attribution: a role at its own CPU limit, and host-cpu on a shared box."""

from __future__ import annotations

import json
import math
import re

import pytest

from tests.support.evidence import CG, _role
from tests.support.synthrun import GIB, make_run, role_cells
from xcbench.analysis.verdicts.attribution import VERDICTS, attribute, decide


def _ev(roles, **kw):
    ev = {"rate": 0.2 * GIB, "concurrency": 8, "mode": "push", "cores": 2.0, "gateway_cores": math.nan,
          "cpu": math.nan, "host_busy": 0.3, "network_bytes_per_s": 10 * GIB, "starved_frac": 0.0,
          "backend": "tmpfs", "roles": roles}
    ev.update(kw)
    return ev


def _one_sentence(reason: str) -> bool:
    return reason.endswith(".") and not re.search(r"\.\s+[A-Z]", reason)


@pytest.mark.parametrize("ev, verdict, quoted", [
    # a capped gateway in a tmpfs cell: nothing else measured, host idle
    (_ev({"gateway": _role(0.24, 0.25, CG), "client": _role(0.3, 2.0)}), "gateway",
     ["gateway (xrootd, cmsd) is at its CPU limit", "0.24 of 0.25 cores (96 %", CG]),
    # the gateway's ceph-fuse mount at its limit is the gateway host's
    (_ev({"mount": _role(0.95, 1.0, "cpuset 1 at /cg/x")}, backend="cephfs"), "gateway", ["ceph-fuse"]),
    (_ev({"client": _role(0.49, 0.5, CG.replace("gateway", "client")), "gateway": _role(0.3, 2.0)}),
     "client", ["client (xcbench driver) is at its CPU limit", "0.49 of 0.5 cores",
                "more client hosts, or through FTS"]),
    # OSDs at their limit, small ops and an IOPS probe nearer than the bandwidth probe
    (_ev({"osd": _role(0.98, 1.0, CG.replace("gateway", "osd"))}, backend="cephfs", pool="p",
         pool_write_ops=1500, fio_iops=2000, fio_iops_bs=64 << 10, fio_bw=1 * GIB, rate=0.1 * GIB), "storage-iops",
     ["OSDs are at their CPU limit", "1,500 write op/s", "75 % of the 2,000 IOPS"]),
    (_ev({"osd": _role(0.9, 1.0, CG)}, backend="cephfs", pool="p", pool_write_ops=40, rate=0.16 * GIB),
     "storage-bandwidth", ["OSDs are at their CPU limit"]),
    # the shared 2-core box runs out, no role at its own limit
    (_ev({"gateway": _role(0.9, 2.0), "client": _role(0.6, 2.0), "osd": _role(0.3, 2.0),
          "mds": _role(0.05, None, "unknown (cannot read x)")}, host_busy=0.95), "host-cpu",
     ["1.9 of 2 cores busy (95 %)", "gateway 0.9, client 0.6, osd 0.3, mds 0.05", "limit unknown: mds",
      "separate these roles"]),
])
def test_each_role_rule(ev, verdict, quoted):
    got, reason = decide(ev)
    assert got == verdict, reason
    for q in quoted:
        assert q in reason, reason
    assert _one_sentence(reason), reason
    assert verdict in VERDICTS


def test_an_unknown_limit_is_never_the_host():
    # the gateway uses 1.9 cores of a 2-core host but its limit could not be read: not "saturated"
    ev = _ev({"gateway": _role(1.9, None, "unknown (cannot read /proc/1/cgroup: PermissionError)")},
             host_busy=0.5)
    verdict, reason = decide(ev)
    assert verdict == "inconclusive" and "gateway 1.9/unknown" in reason
    assert ev["roles"]["gateway"]["limit"] is None


def test_host_cpu_needs_role_telemetry_and_yields_to_a_role_at_its_limit():
    assert decide(_ev({}, host_busy=0.95))[0] == "inconclusive"  # older runs: as before
    ev = _ev({"gateway": _role(0.25, 0.25, CG), "client": _role(1.6, 2.0)}, host_busy=0.95)
    assert decide(ev)[0] == "gateway"  # the quota binds before the host does
    ev = _ev({"gateway": _role(0.5, 2.0)}, host_busy=0.9)
    assert decide(ev)[0] == "host-cpu"


def test_a_tmpfs_ceiling_under_another_cpu_limit_is_not_this_gateways_ceiling():
    ev = _ev({"gateway": _role(0.5, 2.0)}, backend="cephfs", rate=0.29 * GIB, gateway_ceiling=0.3 * GIB,
             gateway_twin_limit=0.25, gateway_twin_limit_source=CG)
    verdict, reason = decide(ev)
    assert verdict != "gateway" and "no gateway ceiling here" in reason, reason
    same = _ev({"gateway": _role(0.5, 2.0)}, backend="cephfs", rate=0.29 * GIB, gateway_ceiling=0.3 * GIB,
               gateway_twin_limit=2.0)
    assert decide(same)[0] == "gateway"


@pytest.fixture(scope="module")
def roles_run(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("roles"), role_cells())


def test_roles_run_every_cell_gets_its_known_verdict(roles_run):
    from xcbench.store.rundir import RunDir
    path, truth = roles_run
    rows = attribute(RunDir.open(path))
    top = {}
    for r in rows:
        if r["cell_id"] not in top or r["concurrency"] > top[r["cell_id"]]["concurrency"]:
            top[r["cell_id"]] = r
    assert {c: r["verdict"] for c, r in top.items()} == truth, [r["reason"] for r in top.values()]
    for c, r in top.items():
        assert _one_sentence(r["reason"]), r["reason"]
        ev = json.loads(r["evidence"])
        assert ev["roles"], r  # every verdict carries each role's cpu, limit and source
        for role in ev["roles"].values():
            assert set(role) >= {"cpu", "limit", "source", "use"}
        assert "role_cpu_cores" in ev["sources"]["roles"]["query"]
        if truth[c] == "client":
            assert "client (xcbench driver)" in r["reason"] and ev["roles"]["client"]["limit"] == 0.5
        if truth[c] == "host-cpu":
            assert ev["roles"]["mds"]["limit"] is None and ev["roles"]["mds"]["source"].startswith("unknown")
            assert re.search(r"shared by gateway [23]\.\d+, client 2\.\d+, osd 1\.\d+, mount 0\.\d+, mds 0\.\d+", r["reason"]), r["reason"]


def test_role_usage_means_over_the_window(roles_run):
    from xcbench.analysis.verdicts.roles import role_usage
    from xcbench.analysis.verdicts.run_data import RunData
    rd = RunData(roles_run[0])
    cid = next(c for c, v in roles_run[1].items() if v == "client")
    p = rd.point(cid, 8)
    u = role_usage(rd.samples, cid, p["windows"])
    assert u["client"]["limit"] == 0.5 and u["client"]["saturated"]
    assert u["client"]["source"].startswith("cgroup v1 cpu.cfs_quota_us=50000/100000")
    assert u["gateway"]["limit"] == 8.0 and not u["gateway"]["saturated"]
    assert 0 < u["gateway"]["cpu"] <= 0.5


def test_a_throttled_quota_group_is_at_its_limit_even_below_near():
    # a busy host kept the quarter-core gateway at 75 % of its quota, but the group was throttled
    # in most of its CFS periods: the quota binds
    gw = _role(0.187, 0.25, CG)
    gw.update(throttled=0.55, saturated=True)
    verdict, reason = decide(_ev({"gateway": gw, "client": _role(0.2, 2.0)}, host_busy=0.97))
    assert verdict == "gateway" and "throttled in 55 % of its CFS periods" in reason, reason


def test_role_usage_reads_throttling(tmp_path):
    import pandas as pd

    from xcbench.analysis.verdicts.roles import THROTTLED, role_usage
    from xcbench.analysis.verdicts.samples import SampleIndex

    def rows(metric, value, labels):
        return [{"cell_id": "c", "wall": float(w), "metric": metric, "value": value,
                 "labels": json.dumps(labels)} for w in range(10)]
    base = rows("role_cpu_cores", 0.19, {"role": "gateway"}) + \
        rows("role_cpu_limit_cores", 0.25, {"role": "gateway", "source": CG})
    for thr, sat in ((THROTTLED + 0.05, True), (THROTTLED - 0.3, False)):
        s = SampleIndex(pd.DataFrame(base + rows("role_cpu_throttled", thr, {"role": "gateway"})))
        u = role_usage(s, "c", [(2.0, 8.0)])["gateway"]
        assert u["throttled"] == pytest.approx(thr) and u["saturated"] is sat and u["use"] < 0.85
    # an unknown limit is never saturated, however throttled
    s = SampleIndex(pd.DataFrame(rows("role_cpu_cores", 0.19, {"role": "gateway"})
                                 + rows("role_cpu_limit_cores", None, {"role": "gateway", "source": "unknown (x)"})
                                 + rows("role_cpu_throttled", 0.9, {"role": "gateway"})))
    u = role_usage(s, "c", [(2.0, 8.0)])["gateway"]
    assert u["limit"] is None and u["source"] == "unknown (x)" and not u["saturated"]


def test_a_reached_storage_ceiling_is_named_before_a_host_that_others_fill():
    # the self-test's storage-bandwidth scenario on a busy shared box: the OSDs' device held by
    # a write throttle, the chain at 96 % of fio's (throttled) bandwidth, the host's CPU full of
    # other processes (the chain's roles use 0.45 of its 2 busy cores)
    roles = {"gateway": _role(0.16, 2.0), "client": _role(0.05, 2.0), "osd": _role(0.22, 2.0)}
    ev = _ev(roles, backend="rados", pool="p", rate=0.055 * GIB, fio_bw=0.057 * GIB, fio_iops=1404,
             pool_write_ops=61, host_busy=1.0)
    verdict, reason = decide(ev)
    assert verdict == "storage-bandwidth" and "host CPU 100 % busy" in reason, reason
    # below the ceiling, the full host is still host-cpu
    ev = _ev(roles, backend="rados", pool="p", rate=0.02 * GIB, fio_bw=0.057 * GIB, fio_iops=1404,
             pool_write_ops=20, host_busy=1.0)
    assert decide(ev)[0] == "host-cpu"


def test_large_ops_are_not_held_against_a_4k_iops_ceiling():
    # an EC cell under a device-bytes throttle: 4 MiB ops at 3.2/s vs fio's (throttled) 4 IOPS
    ev = _ev({"gateway": _role(0.1, 2.0)}, backend="rados", pool="p", rate=13.4e6, pool_write_ops=3.2,
             fio_iops=3.5, fio_bw=0.05 * GIB, ec_ratio=0.28, rep_rate=47e6, rep_pool="rep1")
    verdict, reason = decide(ev)
    assert verdict == "ec-overhead" and "storage-iops" not in ev["utilisation"], reason
    # small ops (32 KiB) at the same op/s ratio against a 32 KiB IOPS job: the IOPS ceiling holds them
    small = _ev({"gateway": _role(0.1, 2.0)}, backend="rados", pool="p", rate=1.7e6, pool_write_ops=52,
                fio_iops=56, fio_iops_job="randwrite", fio_iops_bs=32 << 10, fio_bw=0.05 * GIB)
    assert decide(small)[0] == "storage-iops"
    # the same ops against a 4 KiB job's IOPS, or a job of no one size: not the same IO, not compared
    for bs in (4096, math.nan):
        other = dict(small, fio_iops_bs=bs, utilisation=None)
        verdict, reason = decide(other)
        assert verdict != "storage-iops" and "storage-iops" not in other["utilisation"], reason
        assert "ops average 32 KiB" in reason and "not the same IO size" in reason
