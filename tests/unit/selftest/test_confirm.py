"""`xcbench confirm`: which experiment tests which verdict, how its two rates are judged, and bad
input (the replays on the real chain: tests/integration/selftest/test_confirm.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from xcbench.cli import main
from xcbench.selftest.confirm import experiment, judge, text


def _roles(**limits) -> dict:
    return {"roles": {r: {"cpu": 0.1, "limit": v, "source": "cgroup v1 cpu.cfs_quota_us" if v < 2
                          else "host cores (2)"} for r, v in limits.items()}}


def test_a_gateway_held_by_its_cells_cores_is_relieved_by_doubling_them():
    e = experiment("gateway", _roles(gateway=0.15), SimpleNamespace(cores=0.15), 2.0, False)
    assert e["kind"] == "relieve" and e["cell_cores"] == 0.3 and e["expect"] == pytest.approx(2)
    e = experiment("gateway", _roles(gateway=1.5), SimpleNamespace(cores=1.5), 2.0, False)
    assert e["cell_cores"] == 2.0  # never above the host's cores
    assert "why" in experiment("gateway", {}, SimpleNamespace(cores=2.0), 2.0, False)


def test_a_gateway_or_client_quota_is_relieved_and_one_at_every_core_is_not_testable():
    e = experiment("gateway", _roles(gateway=0.2), SimpleNamespace(cores=None), 2.0, False)
    assert (e["role"], e["control_cap"], e["changed_cap"]) == ("gateway", 0.2, 0.4)
    e = experiment("client", _roles(client=0.3), SimpleNamespace(cores=None), 2.0, False)
    assert (e["role"], e["control_cap"], e["changed_cap"]) == ("client", 0.3, 0.6)
    why = experiment("client", _roles(client=2.0), SimpleNamespace(cores=None), 2.0, False)["why"]
    assert "every core of this host" in why and "FTS" in why


def test_storage_is_tightened_on_this_hosts_osds_only():
    e = experiment("storage-iops", _roles(osd=2.0), SimpleNamespace(cores=None), 2.0, True)
    assert e["kind"] == "tighten" and e["control_cap"] is None and e["changed_cap"] == 1.0
    e = experiment("storage-bandwidth", _roles(osd=0.6), SimpleNamespace(cores=None), 2.0, True)
    assert e["control_cap"] == 0.6 and e["changed_cap"] == 0.3
    assert "not this host's" in experiment("storage-iops", {}, SimpleNamespace(cores=None), 2.0, False)["why"]


@pytest.mark.parametrize("verdict", ["host-cpu", "network", "ec-overhead", "inconclusive"])
def test_verdicts_no_experiment_here_can_test_say_why(verdict):
    assert experiment(verdict, {}, SimpleNamespace(cores=None), 2.0, True)["why"]


def test_a_relief_must_raise_the_rate_beyond_both_runs_noise():
    assert judge("relieve", (50e6, 0.02), (95e6, 0.02), 2.0)["outcome"] == "confirmed"
    r = judge("relieve", (50e6, 0.05), (52e6, 0.05), 2.0)
    assert r["outcome"] == "refuted" and r["bound"] < 1 and "did not surely rise" in r["why"]


def test_a_tightening_must_lower_the_rate_in_proportion():
    assert judge("tighten", (100e6, 0.02), (52e6, 0.02), 0.5)["outcome"] == "confirmed"
    r = judge("tighten", (100e6, 0.02), (90e6, 0.02), 0.5)  # fell, but far less than half
    assert r["outcome"] == "refuted" and "did not fall in proportion" in r["why"]
    assert judge("tighten", (100e6, 0.02), (0.0, 0.02), 0.5)["outcome"] == "not testable here"


def test_text_gives_both_rates_and_their_noise():
    x = {"cell_id": "abc", "concurrency": 4, "direction": "write", "verdict": "gateway",
         "experiment": "relieve", "what": "cores 0.15 -> 0.3", "control_Bps": 50e6,
         "control_rel_se": 0.02, "changed_Bps": 95e6, "changed_rel_se": 0.03,
         **judge("relieve", (50e6, 0.02), (95e6, 0.03), 2.0)}
    t = text({"run": "/r", "confirmations": [x], "ok": True}, {"abc": "tmpfs 2G o1 push 0.15c"})
    assert "tmpfs 2G o1 push 0.15c c=4 write: gateway: confirmed" in t
    assert "control 50.0 MB/s (±2.0 %), changed 95.0 MB/s (±3.0 %)" in t and "1 confirmed" in t


def test_bad_input_exits_2_before_anything_starts(tmp_path, capsys):
    assert main(["confirm", str(tmp_path / "nope")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    run = tmp_path / "r"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"version": 1, "run_id": "r", "status": "complete",
                                                   "cells": {}}))
    assert main(["confirm", str(run), "--state-dir", str(tmp_path / "c")]) == 2
    assert "no verdicts" in capsys.readouterr().err and not (tmp_path / "c").exists()
