"""The client-node rule (analysis.verdicts.node_use) on constructed samples: a client node (a Slurm
node, an ssh host) whose CPUs are >= 85 % busy over the steady window is "client", naming the
node; one well under is not; a node on the coordinator's own machine (an emulated host: its CPUs
are the gateway's too) or of a host the run does not name never counts; a shaped link that
binds is named first; a storage host at its limit does not override it; within its noise of the
line it is a borderline candidate; confirm says why a node cannot be relieved here."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pandas as pd
import pytest

from xcbench.analysis.verdicts import link_use, node_use, storagehosts
from xcbench.analysis.verdicts.attribution import NEAR, decide
from xcbench.analysis.verdicts.experiment_choice import choose
from xcbench.analysis.verdicts.samples import SampleIndex

CELL = "c1"
WINDOW = [(110.0, 120.0)]
MBIT = 1e6 / 8


def _manifest(**extra_roles) -> dict:
    hosts = {"n1": {"roles": ["client"], "transport": "slurm", "link": None},
             "n2": {"roles": ["client"], "transport": "slurm", "link": None},
             "gw": {"roles": ["gateway"], "transport": "slurm", "link": None}}
    for h, roles in extra_roles.items():
        hosts[h] = {"roles": roles, "transport": "slurm", "link": None}
    return {"hosts": {"hosts": hosts}}


def _rows(host: str, busy: float, cores: float = 4.0, machine: str | None = "own",
          jitter: float = 0.0) -> list[dict]:
    lab = {"host": host, **({"machine": machine} if machine else {})}
    out = []
    for wall in range(100, 121):  # 1 s samples; the steady window is the last 10 s
        v = busy + (jitter if wall % 2 else -jitter)  # samples that swing around the mean
        out += [{"cell_id": CELL, "wall": float(wall), "metric": "node.cpu.busy", "value": v,
                 "labels": json.dumps(lab)},
                {"cell_id": CELL, "wall": float(wall), "metric": "node.cpu.cores", "value": cores,
                 "labels": json.dumps(lab)}]
    return out


def _rd(rows: list[dict], manifest: dict) -> SimpleNamespace:
    return SimpleNamespace(samples=SampleIndex(pd.DataFrame(rows)), manifest=manifest, run_id="r1")


def _ev(rate: float = 400 * MBIT, **kw) -> dict:
    ev = {"rate": rate, "concurrency": 8, "mode": "push", "cores": 2.0, "gateway_cores": 0.3,
          "cpu": 0.15, "host_busy": 0.40, "network_bytes_per_s": math.nan, "starved_frac": 0.0,
          "backend": "tmpfs", "roles": {}, "sources": {}}
    ev.update(kw)
    return ev


def _verdict(rd, ev) -> tuple[str, str]:
    """As attribution has it: the rules, the links, the nodes."""
    link_use.add_evidence(rd, CELL, WINDOW, ev)
    v, r = link_use.decide_links(ev, *decide(ev), NEAR)
    node_use.add_evidence(rd, CELL, WINDOW, ev)
    return node_use.decide_nodes(ev, v, r, NEAR)


def test_a_client_node_at_its_cpu_limit_is_client_naming_the_node():
    rd = _rd(_rows("n1", 0.97) + _rows("n2", 0.40), _manifest())
    ev = _ev()
    verdict, reason = _verdict(rd, ev)
    assert verdict == "client", reason
    assert "n1" in reason and "97 %" in reason and "4 CPUs" in reason and "n2" not in reason
    assert ev["client_node"] == "n1" and ev["nodes"]["n1"]["samples"] == 11
    assert math.isclose(ev["node_busy"], 0.97) and ev["nodes"]["n2"]["busy"] == pytest.approx(0.40)
    assert ev["deciding"]["figure"] == node_use.FIGURE and ev["deciding"]["host"] == "n1"
    assert "nodes" in ev["sources"]
    json.dumps(ev)


def _role_rows(host: str, used: float, limit: float, source: str = "cgroup cpu.cfs_quota_us") -> list[dict]:
    lab = json.dumps({"host": host, "machine": "own"})
    out = []
    for wall in range(100, 121):
        v = used + (0.01 if wall % 2 else -0.01)
        out += [{"cell_id": CELL, "wall": float(wall), "metric": "node.cpu.client_cores", "value": v, "labels": lab},
                {"cell_id": CELL, "wall": float(wall), "metric": "node.cpu.limit_cores", "value": limit,
                 "labels": json.dumps({"host": host, "machine": "own", "source": source})}]
    return out


def test_the_client_role_at_its_own_quota_is_client_though_its_cpus_are_idle():
    """A Slurm step held by a 1-core quota on a 4-CPU node: the CPUs 30 % busy, the client role
    using 0.98 of its 1 core. Busy alone would miss it; the role against its limit names it."""
    rd = _rd(_rows("n1", 0.30) + _role_rows("n1", 0.98, 1.0) + _rows("n2", 0.40), _manifest())
    ev = _ev()
    verdict, reason = _verdict(rd, ev)
    assert verdict == "client", reason
    assert "client role on n1 used 0.98 of its 1 cores (98 %" in reason and "30 % busy" in reason
    assert "cfs_quota" in reason
    assert ev["deciding"]["figure"] == node_use.ROLE_FIGURE and ev["client_node"] == "n1"
    assert ev["nodes"]["n1"]["limit_cores"] == 1.0 and ev["node_busy"] == pytest.approx(0.98, abs=0.01)
    # the same role at half its limit: neither figure near the line
    rd = _rd(_rows("n1", 0.30) + _role_rows("n1", 0.50, 1.0), _manifest())
    verdict, reason = _verdict(rd, ev := _ev())
    assert verdict != "client" and ev["node_busy"] == pytest.approx(0.50, abs=0.01), reason


def test_a_node_well_under_its_cpus_is_not_client():
    rd = _rd(_rows("n1", 0.60) + _rows("n2", 0.55), _manifest())
    ev = _ev()
    verdict, reason = _verdict(rd, ev)
    assert verdict != "client", reason
    assert "client_node" not in ev and math.isclose(ev["node_busy"], 0.60)


def test_just_under_the_line_is_not_client():
    rd = _rd(_rows("n1", 0.80), _manifest())
    assert _verdict(rd, _ev())[0] != "client"


def test_a_node_on_the_coordinators_machine_is_the_host_cpu_rules_not_the_clients():
    """An emulated node (netns, or a test cluster's slurmd on this box) shares the gateway's
    CPUs: its busy CPUs say nothing of the client alone; an agent that did not say is no
    evidence either."""
    for machine in ("shared", "unknown", None):
        rd = _rd(_rows("n1", 0.99, machine=machine), _manifest())
        ev = _ev()
        verdict, reason = _verdict(rd, ev)
        assert verdict != "client", (machine, reason)
        assert math.isnan(ev["node_busy"]) and ev["nodes"]["n1"]["machine"] == (machine or "unknown")


def test_a_host_the_run_does_not_name_or_a_gateway_host_never_counts():
    rows = _rows("other9", 0.99) + _rows("gw", 0.99) + _rows("both", 0.99)
    ev = _ev()
    verdict, _ = _verdict(_rd(rows, _manifest(both=["client", "gateway"])), ev)
    assert verdict != "client" and "nodes" not in ev


def test_no_inventory_no_node_evidence():
    ev = _ev()
    _verdict(_rd(_rows("n1", 0.99), {}), ev)
    assert "nodes" not in ev and "node_busy" not in ev


def test_a_shaped_link_that_binds_is_named_before_the_node():
    link = json.dumps({"host": "n1", "roles": "client"})
    rows = _rows("n1", 0.95) + [
        {"cell_id": CELL, "wall": float(w), "metric": m, "value": v, "labels": link}
        for w in range(100, 121) for m, v in (("link.tx_bytes.rate", 195 * MBIT),
                                              ("link.rx_bytes.rate", 1 * MBIT),
                                              ("link.limit_bytes", 200 * MBIT))]
    man = _manifest()
    man["hosts"]["hosts"]["n1"]["link"] = {"rate": "200mbit", "rate_bits_per_s": 200e6}
    verdict, reason = _verdict(_rd(rows, man), _ev(190 * MBIT))
    assert verdict == "network" and "n1" in reason


def test_a_storage_host_at_its_limit_does_not_override_a_client_node():
    ev = _ev(backend="cephfs")  # a cell with OSDs in its chain (a tmpfs cell's storage hosts are no cause)
    verdict, reason = _verdict(_rd(_rows("n1", 0.96), _manifest()), ev)
    ev["storage_disk"] = {"host": "osd1", "device": "sda", "busy": 0.97, "busy_rel_se": 0.01,
                          "write": 1e8, "osds": "osd.0"}
    v2, r2 = storagehosts.decide_storage(ev, verdict, reason, NEAR)
    assert v2 == "client" and "osd1" in r2  # said too, not named


def test_within_its_noise_of_the_line_it_is_a_borderline_candidate_either_way():
    for busy, named in ((0.83, False), (0.86, True)):
        ev = _ev()
        verdict, reason = _verdict(_rd(_rows("n1", busy, jitter=0.1), _manifest()), ev)
        assert (verdict == "client") is named, reason
        cands = [c for c in ev.get("borderline_candidates") or () if c["figure"] == node_use.FIGURE]
        assert cands and cands[0]["rule"] == "client" and cands[0]["low"] < NEAR < cands[0]["high"], busy
    ev = _ev()  # the same mean, steady: no candidate
    _verdict(_rd(_rows("n1", 0.86), _manifest()), ev)
    assert not [c for c in ev.get("borderline_candidates") or () if c["figure"] == node_use.FIGURE]


def test_confirm_says_why_a_client_node_is_not_relieved_here():
    ev = _ev()
    _verdict(_rd(_rows("n1", 0.97), _manifest()), ev)
    plan = choose("client", ev, SimpleNamespace(backend="tmpfs", cores=None, origins=1), 8, 2.0, False)
    assert "why" in plan and "n1" in plan["why"] and "another client host" in plan["why"]
