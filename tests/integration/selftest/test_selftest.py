"""The known-answer self-test on the real chain: every scenario attributed right at every level,
and no cgroup of it left behind: after a run, a failed cell, or Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
import yaml

from tests.support.quota import left_groups, needs_quota
from xcbench.errors import XcbError
from xcbench.matrix import load_matrix
from xcbench.run.runner import Interrupted, RunOptions, run_matrix
from xcbench.selftest import SCENARIOS, output
from xcbench.selftest.capping import Cap, CapHooks
from xcbench.selftest.run_scenarios import run_selftest
from xcbench.selftest.scenarios import CELLS, QUICK, matrix_yaml

pytestmark = [pytest.mark.integration, needs_quota]
QUOTA_GROUPS = ("xcb-selftest", "xcb-t")  # the conftest's state fixture: none left after a test


# the default suite's short variant: causes, not names, on the tmpfs cell (one uncapped run, a
# decoy quota that must not bind, a shared quota naming both roles); a gateway quota that binds
# is the confirm test's run (test_confirm.py: named gateway, then confirmed by relief, which says
# more than a slowdown), so it is not run twice here; every scenario runs in
# test_quick_selftest_every_scenario (slow) and test_full_selftest (slow)
SHORT = ["decoy", "shared-quota"]


def _check_result(result: dict, names: list[str]) -> None:
    text = output.text(result)
    print(text)
    checked = {(c.scenario, c.level) for c in result["checks"]}
    not_run = [n["scenario"] for n in result["not_run"]]
    for name in names:
        s = SCENARIOS[name]
        if s.needs:
            assert s.name in not_run
            continue
        assert {lv for n, lv in checked if n == s.name} == set(QUICK.levels), s.name
    wrong = [c for c in result["checks"] if not c.ok]
    assert not wrong, text
    assert result["ok"] and not not_run, text  # "not run" fails unless --allow-missing names it
    for c in result["checks"]:  # each verdict's evidence holds each role's CPU, limit and source
        # a time-based level: its window is the one the level's rule judged, not a file count's
        assert c.evidence["steady_method"] in ("autoterm", "not steady"), c
        # (network: a tmpfs gateway on emulated hosts, no cluster, so no OSDs)
        assert {"client", "gateway"} | ({"osd"} if c.scenario != "network" else set()) <= set(c.roles), c
        for x in c.roles.values():
            assert x["source"] and ("limit" in x)
        # every run as `xcbench run` has it: the fio probe (non-tmpfs) and the iperf3 baseline;
        # but storage-network's runs have neither (xcbench.selftest.storagenet: its verdict is read
        # from Prometheus's NIC figures, and fio would cross the shaped link)
        if c.scenario != "storage-network":
            assert isinstance(c.evidence.get("network_bytes_per_s"), (int, float)), c
            if c.evidence.get("backend") != "tmpfs":
                assert isinstance(c.evidence.get("fio_bw"), (int, float)), c
        if c.cap and not c.cap.get("io"):
            for role in c.cap["role"].split("+"):
                assert c.roles[role]["limit"] == pytest.approx(c.cap["cores"], rel=0.02)
        if c.cap:  # capped vs uncapped: both rates and their noise are in the check
            assert c.cause and c.cause["uncapped_bytes_per_s"] and c.cause["capped_bytes_per_s"], c
            if not c.cause["decoy"]:
                assert c.cause["slowdown_low"] > 1 and c.cause["at_quota"], c


def test_quick_selftest_proves_causes_not_names(ceph_cluster, tmp_path, state):
    result = run_selftest(ceph_cluster, names=SHORT, quick=True, out=tmp_path / "results", log=print)
    _check_result(result, SHORT)
    # a gateway or client quota leaves the storage's ceiling and the network as they were: the
    # capped runs took the uncapped run's fio probes and iperf3 baseline, and ran neither
    for name in SHORT:
        run = Path(result["runs"][name])
        cells = json.loads((run / "manifest.json").read_text())["cells"].values()
        assert {c.get("probes_from") for c in cells} == {result["runs"]["uncapped"]}, name
        assert not (run / "raw" / "fio").exists() and not (run / "raw" / "iperf3").exists(), name


# the session's 600-s timeout (pyproject) is for one test of the default suite; these two run
# every scenario (~15 and ~25 minutes here) and were stopped by it at the seventh scenario
@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_quick_selftest_every_scenario(ceph_cluster, tmp_path, state, request):
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("every scenario takes ~15 minutes here: `make slow` or pytest -m slow")
    result = run_selftest(ceph_cluster, quick=True, out=tmp_path / "results", log=print)
    _check_result(result, list(SCENARIOS))


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_full_selftest(ceph_cluster, tmp_path, state, request):
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("the full self-test takes ~25 minutes here: `make selftest` or pytest -m slow")
    result = run_selftest(ceph_cluster, quick=False, out=tmp_path / "results", log=print)
    assert result["ok"], output.text(result)


class _Failing(CapHooks):
    """Caps the gateway, then fails (or is interrupted) as the level starts."""

    def __init__(self, cap, error: type[BaseException]):
        super().__init__(cap)
        self.error, self.gateway = error, None

    def cell_ready(self, cell, target, gateway):
        super().cell_ready(cell, target, gateway)
        self.gateway = gateway

    @contextlib.contextmanager
    def level(self, cell, concurrency, repeat):
        assert self.cap.groups.groups, "the cap is in place during the campaign"
        (g,) = self.cap.groups.groups.values()
        assert self.gateway is not None and set(self.gateway.pids) <= set(g.pids())
        raise self.error("made to fail")
        yield


@pytest.mark.parametrize("error", [XcbError, Interrupted])
def test_cgroup_is_removed_when_the_cell_fails_or_is_interrupted(tmp_path, state, error):
    from xcbench.system.cgroups import CpuGroups
    doc = matrix_yaml([CELLS["tmpfs"]], QUICK, "failing")
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    matrix = load_matrix(path)
    with CpuGroups(None, run=f"t{os.getpid()}") as groups:
        cap = Cap("gateway", {matrix.cells[0].id: 0.2}, groups)
        opts = RunOptions(store=tmp_path / "results", baseline=False, probes=False, report=False,
                          telemetry="roles", hooks=_Failing(cap, error))
        if error is Interrupted:
            with pytest.raises(Interrupted):
                run_matrix(matrix, None, opts)
        else:
            run = run_matrix(matrix, None, opts)
            (cell,) = run.cells.values()
            assert cell.status == "failed" and "made to fail" in cell.error
        assert cap.applied  # the group was made and the gateway was in it
        assert left_groups(*QUOTA_GROUPS) == [] and groups.groups == {}
