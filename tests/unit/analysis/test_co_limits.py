"""Co-limits: where more than one rule holds, the verdict is the first by the rules' order and
the others are named beside it (evidence, reason, closing table, Markdown)."""

from __future__ import annotations

import math
from types import SimpleNamespace

from tests.support.evidence import _ev, _role
from tests.support.synthrun import GIB
from xcbench.analysis.report import glance
from xcbench.analysis.verdicts.attribution import decide
from xcbench.analysis.verdicts.rules import opposed


def _ec_on_a_full_host(ratio: float = 0.7, busy: float = 0.95, **kw):
    """An EC point at ``ratio`` of its replicated twin, on a host ``busy`` with no role at its
    own limit (the demo's rados EC 2+1 c=4)."""
    return _ev(rate=ratio * GIB, cores=2.0, gateway_ceiling=4 * GIB, fio_bw=8 * GIB, ec_ratio=ratio,
               rep_pool="rep3", rep_rate=1.0 * GIB, host_busy=busy, rate_rel_se=0.01,
               rep_rate_rel_se=0.01, host_busy_rel_se=0.002,
               roles={"gateway": _role(0.5, 2.0), "client": _role(0.6, 2.0)}, **kw)


def test_host_cpu_full_and_ec_slower_names_both_in_the_rules_order():
    ev = _ec_on_a_full_host()
    verdict, reason = decide(ev)
    assert verdict == "ec-overhead" and ev["co_limits"] == ["host-cpu"]
    assert reason.endswith("co-limit (their rules hold too): host-cpu.")
    # the twin not slower: host-cpu alone, no co-limit
    ev = _ec_on_a_full_host(ratio=0.97)
    assert decide(ev)[0] == "host-cpu" and ev["co_limits"] == []
    # the host not full: ec-overhead alone
    ev = _ec_on_a_full_host(busy=0.5)
    assert decide(ev)[0] == "ec-overhead" and ev["co_limits"] == []


def test_growth_beside_a_full_host_is_a_conflict_never_a_co_limit():
    # host-cpu says twice the transfers go no faster, concurrency says they do: opposite
    # predictions of one experiment are no "host-cpu + concurrency"
    ev = _ev(rate=0.2 * GIB, cores=2.0, roles={"gateway": _role(0.5, 2.0), "client": _role(0.9, 2.0)},
             host_busy=0.95, host_busy_rel_se=0.002, best_higher_level=8, best_higher_rate=0.8 * GIB)
    verdict, reason = decide(ev)
    assert verdict == "host-cpu" and ev["co_limits"] == [] and ev["conflicts"] == ["concurrency"]
    assert "conflicting (its rule holds too but predicts the opposite): concurrency" in reason
    assert opposed("host-cpu", "concurrency") and not opposed("ec-overhead", "concurrency")
    assert ev["deciding"]["figure"] == "host CPU busy" and ev["deciding"]["value"] == 0.95


def test_ec_overhead_and_growth_do_not_oppose_each_other():
    ev = _ev(rate=0.2 * GIB, ec_ratio=0.6, rep_rate=0.33 * GIB, rep_pool="rep3", best_higher_level=8,
             best_higher_rate=0.8 * GIB)
    assert decide(ev)[0] == "ec-overhead" and ev["co_limits"] == ["concurrency"] and ev["conflicts"] == []


def test_an_inconclusive_point_has_no_co_limits():
    ev = _ev(rate=0.1 * GIB, gateway_ceiling=4 * GIB, fio_bw=8 * GIB)
    assert decide(ev)[0] == "inconclusive" and ev["co_limits"] == []


def test_the_closing_table_shows_co_limits_and_borderline_candidates_apart():
    ev = {"co_limits": ["host-cpu"], "borderline_candidates": [
        {"rule": "host-cpu", "figure": "otherwise"}, {"rule": "storage-bandwidth", "figure": "x"}]}
    assert glance.co_limits("ec-overhead", ev) == ["host-cpu"]
    assert glance.near("ec-overhead", ev) == ["storage-bandwidth"]  # a co-limit is no candidate
    assert glance.verdict_text("ec-overhead", ["host-cpu"], ["storage-bandwidth"]) == \
        "ec-overhead & host-cpu (or storage-bandwidth)"
    row = {"cell": "rados ec", "concurrency": 4, "direction": "write", "rate_gbps": 1.5,
           "rate_bytes_per_s": 1.5e9 / 8, "cell_id": "c", "rate_method": "autoterm",
           "verdict": "ec-overhead", "co_limits": ["host-cpu"], "near": [],
           "short_reason": "EC at 70 % of rep3", "beats": []}
    rd = SimpleNamespace(run_id="r1", run=SimpleNamespace(path="r1"), manifest={"hosts": {"h": {}}})
    assert any("ec-overhead & host-cpu" in ln for ln in glance.lines(rd, [row], 200))


def _tmpfs_c1_waiting(eff: float, eff_rel_se: float):
    """The demo's tmpfs c=1 (two fresh clusters, stop 39): the host half busy, the chain's threads
    waiting 22 % of their runnable time, c=4 x1.7-2.0 faster: efficiency near its 0.5 line."""
    roles = {"gateway": {**_role(0.78, 2.0), "runq_wait": 0.25},
             "client": {**_role(0.22, 2.0), "runq_wait": 0.03}}
    return _ev(rate=0.6 * GIB, cores=2.0, host_busy=0.54, host_busy_rel_se=0.003, rate_rel_se=0.01,
               cpu_pressure=0.16, roles=roles, best_higher_level=4, best_higher_rate=0.6 * GIB * eff * 4,
               best_higher_growth_low=eff * 4 * 0.97,
               scaling_efficiency={"value": eff, "high": eff * math.exp(1.645 * eff_rel_se),
                                   "rel_se": eff_rel_se, "from": 1.0, "to": 4.0})


def test_more_transfers_going_faster_beside_a_host_cpu_named_for_its_waits_is_a_conflict():
    """host-cpu named below the busy line (the chain waits, efficiency surely under 0.5) and c=4
    surely faster: the two predict opposite outcomes of twice the transfers, so concurrency is
    a conflict, not a co-limit (it was one: two fresh runs naming host-cpu and concurrency then
    "agreed"); the figure that decided is the efficiency, not the busy cores."""
    ev = _tmpfs_c1_waiting(0.42, 0.02)
    verdict, _ = decide(ev)
    assert verdict == "host-cpu" and ev["co_limits"] == [] and ev["conflicts"] == ["concurrency"]
    assert not ev["borderline"]
    d = ev["deciding"]
    assert d["figure"].startswith("scaling efficiency") and d["value"] < 0.5 and d["at_most"]
    assert glance.short_reason(verdict, "", ev).startswith("scaling efficiency 0.42")


def test_an_efficiency_within_its_noise_of_the_line_is_a_borderline_host_cpu():
    """Efficiency 0.495 with 5 % noise: not surely under 0.5, so concurrency decides, and the
    host-cpu it was within noise of is its borderline candidate ("concurrency (or host-cpu)")."""
    ev = _tmpfs_c1_waiting(0.495, 0.05)
    verdict, reason = decide(ev)
    assert verdict == "concurrency", reason
    cands = [c for c in ev["borderline_candidates"] if c["rule"] == "host-cpu"]
    assert cands and cands[0]["figure"] == "scaling efficiency" and cands[0]["low"] < 0.5 < cands[0]["high"]
    assert "scaling efficiency 50 % is within its noise of 50 %" in reason
    assert glance.near(verdict, ev) == ["host-cpu"]
