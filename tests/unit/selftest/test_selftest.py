"""The self-test's plan, expectations and output on constructed data (the runs: integration)."""

from __future__ import annotations

import json

import pytest
import yaml

from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.matrix import load_matrix
from xcbench.probe.job_settings import settings
from xcbench.selftest import output
from xcbench.selftest.capping import borrows
from xcbench.selftest.run_scenarios import _riders, cells_of, plan
from xcbench.selftest.scenarios import (
    CELLS,
    QUICK,
    SCENARIOS,
    Check,
    expectation,
    expected_text,
    ident,
    matrix_yaml,
    raw_check,
)


def test_every_scenario_cell_is_a_valid_matrix_cell(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(matrix_yaml(list(CELLS.values()), QUICK, "t")))
    m = load_matrix(path)
    from xcbench.figures.units import parse_size
    from xcbench.selftest.judging import cell_ids
    ids = cell_ids(m)
    assert set(ids) == set(CELLS) and len(set(ids.values())) == len(CELLS) == len(m.cells)
    for key, cd in CELLS.items():
        (found,) = [c for c in m.cells if c.id == ids[key]]
        assert ident(found) == cd.ident, key
        assert found.concurrency == QUICK.levels and found.mode == "push"
        assert found.file_size == parse_size(cd.file_size or QUICK.file_size), key
        assert found.probe, key  # every cell is probed, as in a run


def test_the_ec_cell_is_compared_with_a_replicated_pool_on_the_same_layout():
    ec, rep = CELLS["cephfs-ec"], CELLS["cephfs-rep"]
    assert ec.backend == rep.backend and ec.pool.startswith("ec") and rep.pool.startswith("rep")


def test_plan_rejects_an_unknown_scenario_and_network_has_runs_of_its_own():
    with pytest.raises(XcbError, match="'bogus': unknown"):
        plan(["bogus"], quick=True)
    # xcbench.selftest.network: emulated hosts, its own runs (needs: why not here, e.g. no root)
    assert SCENARIOS["network"].own_run is not None and not SCENARIOS["network"].cells
    assert {s.name for s in plan(None, quick=True)} == set(SCENARIOS)
    for s in plan(None, quick=True):
        assert set(cells_of(s, quick=True)) <= set(cells_of(s, quick=False)) <= set(CELLS)


def test_ec_expectation_follows_what_the_ec_cell_measured():
    s = SCENARIOS["ec-uncapped"]
    assert expectation(s, {"ec_ratio": 0.6})[0] == ("ec-overhead",)
    exp, note = expectation(s, {"ec_ratio": 0.95})
    assert "ec-overhead" not in exp and {"host-cpu", "inconclusive"} <= set(exp) and "not slower" in note
    assert expected_text(exp) == "not ec-overhead"
    assert expected_text(SCENARIOS["storage"].expected) == "storage-bandwidth or storage-iops"
    assert expectation(SCENARIOS["gateway"], {"ec_ratio": 0.5})[0] == ("gateway",)


def test_raw_per_logical_is_checked_against_the_pool():
    assert raw_check({"raw_per_logical": 1.52, "raw_expected": 1.5})[0]
    assert not raw_check({"raw_per_logical": 1.0, "raw_expected": 1.5})[0]
    ok, note = raw_check({"raw_per_logical": None, "raw_expected": 1.5})
    assert not ok and "not measured" in note


def _result(ok: bool) -> dict:
    roles = {"gateway": {"cpu": 0.12, "limit": 0.119, "source": "cgroup v1 cpu.cfs_quota_us=11900/100000",
                         "use": 1.01, "throttled": 1.0, "saturated": True},
             "client": {"cpu": 0.06, "limit": 2.0, "source": "host cores (2)", "use": 0.03,
                        "throttled": None, "saturated": False}}
    c = Check("gateway", "tmpfs", "abc", 4, ("gateway",), "gateway" if ok else "host-cpu", "why", ok,
              cap={"role": "gateway", "cores": 0.119, "fraction": 0.5, "uncapped_least_cores": 0.24,
                   "group": "/sys/fs/cgroup/cpu/xcb-x"}, roles=roles)
    return {"checks": [c], "not_run": [{"scenario": "network", "what": "-", "needs": "a second host"}],
            "runs": {"uncapped": "/r"}, "fraction": 0.5, "levels": [2, 4], "quick": True, "ok": ok}


def test_text_output_shows_expected_attributed_and_evidence():
    t = output.text(_result(True))
    assert "gateway      tmpfs         4  gateway" in t and "ok" in t
    assert "gateway 0.12/0.12 101 %, throttled 100 % [cgroup v1" in t
    assert "cap: gateway at 0.119 cores = 0.5 x 0.24 used uncapped" in t
    assert "not run (a second host)" in t and "1 of 1 checks right; not run: network" in t
    allowed = output.text({**_result(True), "allow_missing": ["network"]})
    assert "not run (a second host) [allowed]" in allowed and "1 of 1 checks right." in allowed
    bad = output.text(_result(False))
    assert "MISMATCH" in bad and "(expected gateway)" in bad


def test_json_output_is_complete():
    d = json.loads(output.as_json(_result(False)))
    assert d["ok"] is False and d["checks"][0]["verdict"] == "host-cpu"
    assert d["checks"][0]["roles"]["gateway"]["limit"] == 0.119 and d["not_run"][0]["scenario"] == "network"


@pytest.mark.parametrize("fraction", ["0.9", "0", "-1"])
def test_a_fraction_that_would_not_bind_exits_2_before_any_cluster(fraction, tmp_path, capsys):
    assert main(["selftest", "--fraction", fraction, "--state-dir", str(tmp_path / "c")]) == 2
    assert not (tmp_path / "c").exists()  # no cluster was started
    assert "selftest: --fraction" in capsys.readouterr().err


def test_an_unknown_scenario_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["selftest", "--scenario", "bogus", "--state-dir", str(tmp_path / "c")])
    assert e.value.code == 2 and "bogus" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


@pytest.fixture
def later(monkeypatch):
    """A "not yet" scenario (what network was before its module)."""
    from xcbench.selftest import registry
    monkeypatch.setitem(registry.SCENARIOS, "later", registry.Scenario(
        "later", "a bottleneck for later", ("network",), (), needs="a second host"))
    return "later"


def test_a_scenario_that_cannot_run_fails_the_selftest_unless_allowed(tmp_path, later):
    from xcbench.selftest.run_scenarios import run_selftest
    result = run_selftest(None, names=[later], out=tmp_path, log=lambda s: None)
    assert not result["ok"] and result["checks"] == [] and list(tmp_path.iterdir()) == []
    assert "not run (a second host)" in output.text(result)
    result = run_selftest(None, names=[later], out=tmp_path, allow_missing=[later], log=lambda s: None)
    assert result["ok"] and list(tmp_path.iterdir()) == []


def _ec_ev(raw_ec: float, raw_rep: float, use: float = 0.95) -> dict:
    dev = {"io": "bandwidth", "limit": 50e6, "bytes_per_s": use * 50e6, "iops": 100.0, "use": use}
    return {"rep_cell": "rep", "raw_per_logical": raw_ec, "rep_raw_per_logical": raw_rep,
            "ec_ratio": raw_rep / raw_ec, "osd_device": dev, "rep_osd_device": dict(dev)}


def test_the_ec_expectation_comes_from_the_measured_raw_bytes_at_the_devices_throttle():
    s = SCENARIOS["ec-overhead"]
    exp, note = expectation(s, _ec_ev(1.5, 1.0))
    assert exp == ("ec-overhead",) and "predicted EC at 67 % of its twin" in note
    exp, note = expectation(s, _ec_ev(1.02, 1.0))  # the raw bytes predict no cost: must not be named
    assert "ec-overhead" not in exp and "must not be named" in note
    exp, note = expectation(s, _ec_ev(1.5, 1.0, use=0.3))
    assert "not made" in note
    # the replicated twin in the same run: a storage-bandwidth cell at the throttle
    twin = {"osd_device": {"io": "bandwidth", "limit": 50e6, "bytes_per_s": 48e6, "iops": 90.0, "use": 0.96}}
    assert expectation(s, twin)[0] == ("storage-bandwidth",)


def test_an_ec_scenario_that_never_expected_ec_overhead_is_said_not_exercised():
    def check(level, raw_ec):
        ev = _ec_ev(raw_ec, 1.0)
        exp, note = expectation(SCENARIOS["ec-overhead"], ev)
        return Check("ec-overhead", "rados-ec", "x", level, exp, exp[0], "r", True, note=note, evidence=ev)
    assert output.unexercised([check(2, 1.0), check(4, 1.05)])
    assert "not exercised" in output.text({**_result(True), "checks": [check(2, 1.0)]})
    assert not output.unexercised([check(2, 1.0), check(4, 1.5)])


def test_capping_the_osds_of_a_cluster_elsewhere_is_refused_before_any_run(tmp_path):
    from types import SimpleNamespace

    from xcbench.selftest.run_scenarios import run_selftest
    byo = SimpleNamespace(embedded=False, state_dir=None, conf=tmp_path / "ceph.conf")
    with pytest.raises(XcbError, match="OSDs elsewhere"):
        run_selftest(byo, names=["storage"], out=tmp_path / "r", log=lambda s: None)
    assert not (tmp_path / "r").exists()


def test_a_quota_the_kernel_never_throttled_did_not_make_the_bottleneck():
    from xcbench.selftest.judging import quota_unbound
    c = _result(False)["checks"][0]
    assert not quota_unbound(c)  # throttled in 100 % of its periods
    c.roles["gateway"]["throttled"] = 0.0
    assert quota_unbound(c)
    c.roles["gateway"]["throttled"] = None  # not measured: not evidence that it did not bind
    assert not quota_unbound(c)
    # the host ran out first: the role got less than its quota (79 %, throttled in 46 % of its
    # periods) and the verdict was host-cpu: the bottleneck was not made
    c.roles["gateway"].update(cpu=0.094, use=0.79, throttled=0.46, saturated=False)
    assert quota_unbound(c)
    c.verdict = "inconclusive"  # any other wrong verdict with the role below its quota is a mismatch
    assert not quota_unbound(c)
    c.verdict = "host-cpu"
    c.roles["gateway"].update(use=0.95, saturated=True)  # at its quota and still host-cpu: a wrong rule
    assert not quota_unbound(c)
    r = {**_result(False), "retried": [{"scenario": "gateway", "checks": [("tmpfs", 4, "host-cpu")]}]}
    assert "gateway ran twice" in output.text(r) and "tmpfs c=4 (host-cpu)" in output.text(r)


def test_the_command_lists_a_not_run_scenario_without_a_cluster(tmp_path, capsys, later):
    assert main(["selftest", "--scenario", later, "--state-dir", str(tmp_path / "c")]) == 1
    assert "not run (a second host)" in capsys.readouterr().out and not (tmp_path / "c").exists()
    assert main(["selftest", "--scenario", later, "--allow-missing", later,
                 "--state-dir", str(tmp_path / "c")]) == 0
    assert "[allowed]" in capsys.readouterr().out and not (tmp_path / "c").exists()


def test_every_level_is_time_based_and_long_enough_for_many_role_samples(tmp_path):
    from xcbench.figures.level_rule import parse_seconds
    from xcbench.selftest.scenarios import FULL
    for sizes, least in ((QUICK, 6), (FULL, 15)):
        path = tmp_path / "m.yaml"
        path.write_text(yaml.safe_dump(matrix_yaml(list(CELLS.values()), sizes, "t")))
        m = load_matrix(path)  # the level keys are valid matrix keys
        assert m.cells
        lv = sizes.campaign()
        assert parse_seconds(lv["duration"]["min"]) >= least
        # the steady window alone spans >= 10 role samples 0.5 s apart
        assert parse_seconds(lv["steady"]["window"]) >= 5


def test_a_scenario_module_registers_its_own_scenario_and_cells():
    from xcbench.selftest import registry
    saved = (dict(registry.SCENARIOS), dict(registry.CELLS))
    try:
        cell = registry.register_cell(registry.CellDef("tmpfs-far", "tmpfs", (("size", ["1G"]),)))
        s = registry.Scenario("network", "a shaped link", ("network",), (cell.key,))
        with pytest.raises(ValueError, match="already registered"):
            registry.register(s)
        registry.register(s, replace=True)  # takes the place of the "not yet" placeholder
        assert list(registry.SCENARIOS).index("network") == list(saved[0]).index("network")
        assert [x.name for x in plan(["network"], quick=True)] == ["network"]
        assert cells_of(registry.SCENARIOS["network"], quick=True) == ("tmpfs-far",)
        with pytest.raises(ValueError, match="unknown cell"):
            registry.register(registry.Scenario("x", "-", ("network",), ("nowhere",)))
        with pytest.raises(ValueError, match="registered differently"):
            registry.register_cell(registry.CellDef("tmpfs", "tmpfs", (("size", ["9G"]),)))
    finally:
        registry.SCENARIOS.clear()
        registry.SCENARIOS.update(saved[0])
        registry.CELLS.clear()
        registry.CELLS.update(saved[1])


def test_the_packages_scenario_modules_are_all_loaded():
    import xcbench.selftest as st
    assert st.SCENARIO_MODULES[0] == "xcbench.selftest.scenarios"
    assert {"gateway", "storage", "client", "ec-overhead", "host-cpu", "network"} <= set(st.SCENARIOS)


@pytest.mark.parametrize("keys", [("rados-small",), ("tmpfs", "rados-small"), ("rados-rep", "rados-small")])
def test_a_cell_of_its_own_size_is_found_alone_or_beside_others(tmp_path, keys):
    from xcbench.figures.units import parse_size
    from xcbench.selftest.judging import cell_ids
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(matrix_yaml([CELLS[k] for k in keys], QUICK, "t")))
    m = load_matrix(path)
    ids = cell_ids(m)
    assert set(ids) == set(keys) and len(m.cells) == len(keys)
    (small,) = [c for c in m.cells if c.id == ids["rados-small"]]
    assert small.file_size == parse_size("256K")


@pytest.mark.parametrize("quick", [True, False])
def test_storage_bandwidth_is_judged_on_the_ec_scenarios_capped_run(quick):
    """storage-bandwidth's replicated cell is ec-overhead's twin under the same kind of bytes
    throttle: one capped run holds both (the time of the full self-test); nothing else shares."""
    riders = _riders(plan(None, quick), quick)
    assert riders == {"storage-bandwidth": "ec-overhead"}
    assert set(cells_of(SCENARIOS["storage-bandwidth"], quick)) < set(cells_of(SCENARIOS["ec-overhead"], quick))


def test_self_test_cells_probe_the_write_jobs_only(tmp_path):
    """Every self-test cell writes: its probe runs fio's write jobs (a write point is held
    against those), the IOPS job first."""
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(matrix_yaml(list(CELLS.values()), QUICK, "t")))
    for cell in load_matrix(path).cells:
        assert settings(cell)["jobs"] == ["randwrite", "write"], cell.label


def test_only_a_gateway_or_client_cpu_quota_borrows_the_uncapped_probes_and_baseline():
    for cap in ("gateway", "client", "gateway+client"):
        assert borrows(cap, None), cap
    # a quota on the OSDs or the mount, or a device throttle, changes the storage's ceiling
    for cap, io in (("osd", None), ("mount", None), ("gateway+mount", None), ("osd", "bandwidth"),
                    ("osd", "iops"), ("gateway", "bandwidth")):
        assert not borrows(cap, io), (cap, io)
