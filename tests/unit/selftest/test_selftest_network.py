"""The network scenario's plumbing without hosts: its registration (runs of its own), how
run_selftest takes a scenario's own runs, and what its hosts and notes look like."""

from __future__ import annotations

import ipaddress
import math

import pytest

from xcbench.hosts import parse_inventory
from xcbench.selftest import SCENARIOS, network, output
from xcbench.selftest.scenarios import Check


def test_network_replaces_the_placeholder_with_runs_of_its_own():
    s = SCENARIOS["network"]
    assert s.own_run is network.run_network and s.cells == () and s.expected == ("network",)
    names = list(SCENARIOS)
    assert names[names.index("host-cpu") + 1] == "network"  # the placeholder's place


def test_its_hosts_are_a_valid_inventory_with_unique_short_names():
    net = ipaddress.IPv4Network("10.233.7.0/24")
    inv = parse_inventory(network.inventory_doc("99999", "448mbit", net), "t")
    c, g = inv.clients[0], inv.gateways[0]
    assert c.link is not None and c.link.rate_bits_per_s == 448e6 and g.link is None
    assert inv.redirector is g and all(len(h.name) <= 11 for h in inv.hosts)
    assert inv.bridge is not None and inv.bridge.name == "xcbn99999"
    unshaped = parse_inventory(network.inventory_doc("1", None, net), "t")
    assert unshaped.clients[0].link is None


def test_run_selftest_takes_an_own_run_scenario_without_the_uncapped_run(tmp_path, monkeypatch):
    from xcbench.selftest import registry
    from xcbench.selftest.run_scenarios import run_selftest
    calls = []

    def own(cluster, **kw):
        calls.append(kw)
        c = Check("own", "tmpfs", "cid", 2, ("network",), "network", "r", True, note="n")
        return {"checks": [c], "runs": {"own": "p"}, "seconds": {"own": 1.0}, "figures": {}}

    monkeypatch.setitem(registry.SCENARIOS, "own", registry.Scenario(
        "own", "-", ("network",), (), own_run=own))
    result = run_selftest(None, names=["own"], out=tmp_path, log=lambda s: None)
    assert len(calls) == 1 and calls[0]["quick"] is False and "stamp" in calls[0]
    assert result["ok"] and [c.scenario for c in result["checks"]] == ["own"]
    assert result["runs"] == {"own": "p"} and "uncapped" not in result["runs"]
    assert "1 of 1 checks right." in output.text(result)


def test_a_wrong_own_run_verdict_fails_the_selftest(tmp_path, monkeypatch):
    from xcbench.selftest import registry
    from xcbench.selftest.run_scenarios import run_selftest

    def own(cluster, **kw):
        c = Check("own", "tmpfs", "cid", 2, ("network",), "host-cpu", "r", False)
        return {"checks": [c], "runs": {}, "seconds": {}, "figures": {}}

    monkeypatch.setitem(registry.SCENARIOS, "own", registry.Scenario(
        "own", "-", ("network",), (), own_run=own))
    assert not run_selftest(None, names=["own"], out=tmp_path, log=lambda s: None)["ok"]


def test_the_note_gives_the_link_against_its_shaped_rate_and_iperf3():
    ev = {"links": {"nc1": {"tx": 52e6, "rx": 5e4, "limit": 56e6, "use": 52e6 / 56e6, "samples": 6}}}
    fig = {"unshaped_bytes_per_s": 560e6, "shaped_rate": "448mbit", "fraction": 0.1}
    note = network.link_note(ev, 429.5e6, fig)
    assert "unshaped chain >= 4480 Mb/s" in note and "448mbit (0.1 x)" in note
    assert "link nc1: 416.0 Mb/s of 448.0 Mb/s shaped (93 %, 6 samples)" in note
    assert "iperf3 over the shaped link 429.5 Mb/s" in note
    assert "no link evidence" in network.link_note({}, math.nan)


@pytest.mark.parametrize("quick, n", [(True, 2), (False, 3)])
def test_levels_follow_the_selftests_rule(quick, n):
    lv = network.levels_of(quick)
    assert len(lv["levels"]) == n and lv["campaign"]["duration"] and lv["campaign"]["steady"]


def test_the_storage_network_hosts_are_a_valid_inventory():
    """The storage host's bridge is named as the inventory takes it (xcb*): an xcv* name
    stopped the full self-test with exit 2 before its storage-network scenario ran."""
    from xcbench.selftest import storagenet
    net = ipaddress.IPv4Network("10.233.8.0/24")
    inv = parse_inventory(storagenet.inventory_doc("99999", "300mbit", net), "t")
    assert inv.bridge is not None and inv.bridge.name == "xcbv99999"
    assert [h.name for h in inv.hosts] == ["st99999"] and inv.hosts[0].link.rate_bits_per_s == 300e6


def test_a_one_cell_runs_verdicts_by_level_and_its_record():
    """Both scenarios read their runs' verdicts by level and record each run the same way."""
    import json

    import pandas as pd

    from xcbench.selftest import storagenet
    rows = pd.DataFrame([{"cell_id": "c", "concurrency": lv, "verdict": v, "reason": f"why {lv}",
                          "evidence": json.dumps({"rate": lv * 1e6})} for lv, v in ((2, "network"), (8, "client"))])
    run = type("Run", (), {"table": lambda self, name: rows, "path": "/r/x"})()
    got = network.level_verdicts(run)
    assert got == {2: {"verdict": "network", "reason": "why 2", "evidence": {"rate": 2e6}},
                   8: {"verdict": "client", "reason": "why 8", "evidence": {"rate": 8e6}}}
    assert storagenet.level_verdicts is network.level_verdicts
    result: dict = {"runs": {}, "seconds": {}}
    network.record(result, "network", run, 0.0)
    assert result["runs"] == {"network": "/r/x"} and result["seconds"]["network"] > 0


def test_run_network_runs_unshaped_then_shaped_and_judges_each_level(tmp_path, monkeypatch):
    """The scenario's flow without hosts: the unshaped run's slowest level sets the shaped rate,
    the shaped run (with its baseline) is judged level by level; both recorded."""
    import contextlib
    import json

    import pandas as pd
    levels = network.levels_of(True)["levels"]
    runs: list[tuple[str, str, bool]] = []

    def fake_run(doc, name, cluster, out, workdir, inv, baseline):
        shaped = baseline
        link = inv.clients[0].link
        runs.append((name, link.rate if link else None, baseline))
        rows = [{"cell_id": "c", "concurrency": lv, "verdict": "network" if shaped else "gateway",
                 "reason": "r", "evidence": json.dumps({"rate": 1e6 * lv, "links": {
                     f"nc{tag}": {"tx": 1e5, "limit": 1.2e5, "use": 0.9, "samples": 5}} if shaped else {}})}
                for lv in levels]
        tables = {"verdicts": pd.DataFrame(rows),
                  "baseline": pd.DataFrame([{"bits_per_second": 4.2e6 if shaped else None}])}
        return type("Run", (), {"path": tmp_path / name, "cells": {"c": None},
                                "table": lambda self, t: tables[t]})()

    @contextlib.contextmanager
    def fake_emulated(doc, workdir, name):
        yield parse_inventory(doc, "t")

    tag = f"{__import__('os').getpid() % 100000}"
    monkeypatch.setattr(network, "why_not", lambda: None)
    monkeypatch.setattr(network, "free_network", lambda: ipaddress.IPv4Network("10.233.9.0/24"))
    monkeypatch.setattr(network, "emulated", fake_emulated)
    monkeypatch.setattr(network, "_run", fake_run)
    result = network.run_network(None, quick=True, out=tmp_path, stamp="S", fraction=0.1, log=lambda m: None)
    slowest = 1e6 * min(levels)
    mbit = int(slowest * 8 * 0.1 / 1e6)
    assert runs == [("selftest-S-network-unshaped", None, False), ("selftest-S-network", f"{mbit}mbit", True)]
    assert set(result["runs"]) == set(result["seconds"]) == {"network-unshaped", "network"}
    f = result["figures"]
    assert f["unshaped_bytes_per_s"] == slowest and f["shaped_rate"] == f"{mbit}mbit"
    assert f["iperf3_bits_per_s"] == 4.2e6 and sorted(f["levels"]) == sorted(levels)
    assert [c.level for c in result["checks"]] == list(levels) and all(c.ok for c in result["checks"])
