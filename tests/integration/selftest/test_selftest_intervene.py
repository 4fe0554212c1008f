"""The self-test tests host-cpu's proportion and ec-overhead by intervention on the real chain:
every role under one quota at half of what they used halves the tmpfs cell's rate (a proportion
checked, never "confirmed": every rival predicts the same fall); the EC cell and its twin run
again EC first, and the verdict is held against that interleaved experiment, not against the
rules' own 85 % line or EC ratio. Slow (~4 min: the uncapped run, the half-host run, the
EC-first run)."""

from __future__ import annotations

import pytest

from tests.support.quota import needs_quota
from xcbench.selftest import output
from xcbench.selftest.run_scenarios import run_selftest

pytestmark = [pytest.mark.integration, pytest.mark.slow, needs_quota]
QUOTA_GROUPS = ("xcb-selftest",)  # the conftest's state fixture: none of them left after a test


def test_host_cpu_and_ec_are_proven_by_intervention(ceph_cluster, tmp_path, state):
    result = run_selftest(ceph_cluster, names=["host-cpu", "ec-uncapped"], quick=True,
                          out=tmp_path / "results", log=print)
    print(output.text(result))
    assert {"half-host", "ec-twin"} <= set(result["runs"]), result["runs"]
    host = [c for c in result["checks"] if c.scenario == "host-cpu"]
    ec = [c for c in result["checks"] if c.scenario == "ec-uncapped"]
    assert host and ec
    for c in host:  # every level carries its intervention's figures, whatever the outcome
        assert c.cause and c.cause["intervention"] == "one quota at half the host", c
        assert c.cause["outcome"] in ("proportion checked", "refuted", "inconclusive") and c.cause["ratio"], c
        assert "by intervention" in c.note
    for c in ec:
        assert c.cause and c.cause["intervention"].startswith("EC against its twin"), c
        assert "interleaved" in c.note
    assert result["ok"], output.text(result)
