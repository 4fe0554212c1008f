"""`xcbench confirm` on the real chain: an experiment confirms only the cause it can tell apart.

Default suite (short levels): a run whose gateway is held by its own CPU quota (the cores
dimension) has "gateway" confirmed by twice the cores, A-B-B-A, while `--test host-cpu --test
storage-bandwidth` confirms neither (no storage behind a tmpfs gateway; the CPU given to the
roles does not lift a gateway held by its own quota, and a box whose only load is the roles has
none to give). Slow: the same run with its verdict falsified to "concurrency" is refuted; a
CephFS run whose OSDs are held by a CPU quota the run did not make has storage-bandwidth
confirmed by taking the storage out (through a cluster given by -c) and gateway not confirmed
by one more origin. Nothing of the replays is left behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.support.quota import needs_quota
from xcbench.matrix import load_matrix
from xcbench.run.runner import RunOptions
from xcbench.selftest import confirm_cases, output
from xcbench.selftest.capping import mini_pids, run_concluded
from xcbench.selftest.confirm import confirm_run, text
from xcbench.selftest.confirm_cases import GATEWAY_SHARE
from xcbench.selftest.run_scenarios import run_selftest
from xcbench.selftest.scenarios import host_cores
from xcbench.system.cgroups import CpuGroups

pytestmark = [pytest.mark.integration, needs_quota]
QUOTA_GROUPS = ("xcb-confirm", "xcb-selftest")  # the conftest's state fixture: none of them left after a test
CORES = 0.15  # one origin's quota: far below what a tmpfs gateway uses here (~1.3 cores)
LEVEL = 2
# short time-based levels: a replay ends once steady, ~6 s of campaign on a quiet box. The
# longest is 15 s, not 8: on a busy box the relieved gateway (0.3 cores) ramps for longer than
# its control, and with 8 s two of three changed arms ended "not steady" (the window's-choice
# error then 14-32 % where the controls had 4-7 %), which left x1.71 inconclusive over 3 pairs
# (bounds x1.19-x2.48). A level that is steady sooner ends sooner: the longest costs nothing there.
CAMPAIGN = {"duration": {"min": "5s", "max": "15s"},
            "steady": {"rule": "autoterm", "window": "4s", "points": 4, "tolerance": "15%"}}


def _run(tmp_path: Path, backends: dict, cluster=None, **defaults):
    doc = {"name": "capped", "defaults": {
        "origins": [1], "modes": ["push"], "concurrency": [LEVEL], "file_size": "16M", "files": 12,
        "repeats": 1, "gateway": {"async": False, "buffers_maxbsz": "16M"}, "campaign": CAMPAIGN,
        **defaults}, "backends": backends}
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    opts = RunOptions(store=tmp_path / "results", name="r", baseline=False, probes=False,
                      report=False, progress=False, telemetry="host:0.5,roles:0.5,gateway")
    return run_concluded(load_matrix(path, cluster) if cluster else load_matrix(path), cluster, opts)


def _falsified(run, tmp_path: Path, verdict: str) -> Path:
    """A copy of the run whose verdicts all say ``verdict``."""
    fake = tmp_path / f"falsified-{verdict}"
    shutil.copytree(run.path, fake)
    df = pd.read_parquet(fake / "verdicts.parquet")
    df["verdict"] = verdict
    df.to_parquet(fake / "verdicts.parquet", index=False)
    return fake


@pytest.fixture
def capped(tmp_path, state):
    run = _run(tmp_path, {"tmpfs": {"size": ["1G"]}}, cores=[CORES])
    (v,) = run.table("verdicts").to_dict("records")
    assert v["verdict"] == "gateway", v["reason"]
    return run


def test_a_gateway_held_by_its_own_quota_is_confirmed_and_its_rivals_are_not(ceph_cluster, tmp_path, state):
    """The self-test's confirm-gateway case, quick (xcbench.selftest.confirm_cases): its gateway
    under a cores quota of 7.5 % of the host, confirm --test gateway (3 pairs: t(0.95, 2) = 2.92),
    then --test host-cpu and --test storage-bandwidth with the pairs confirm chooses."""
    result = run_selftest(ceph_cluster, names=["confirm-gateway"], quick=True, out=tmp_path / "results",
                          log=print)
    print(output.text(result))
    by = {c.cause["test"]: c for c in result["checks"]}
    assert set(by) == {"gateway", "host-cpu", "storage-bandwidth"} and result["ok"], output.text(result)
    x = by["gateway"].cause
    assert x["outcome"] == "confirmed" and x["experiment_name"] == "twice the gateway's cores", x["why"]
    assert x["predicted"] == pytest.approx(2.0) and x["low"] >= x["minimum"] == pytest.approx(1.2)
    assert x["separates"] and set(x["rivals"].values()) == {1.0}
    arms_ = [r["arm"] for r in x["runs"]]
    assert arms_[:4] == ["control", "changed", "changed", "control"] and len(arms_) == 2 * x["pairs"] == 6
    quota = round(GATEWAY_SHARE * host_cores(), 3)
    for r in x["runs"]:  # each arm ran under the quota it names
        assert r["role"]["limit"] == pytest.approx(quota if r["arm"] == "control" else 2 * quota, rel=0.05)
    assert by["storage-bandwidth"].verdict == "not testable here"  # no storage behind tmpfs
    assert by["host-cpu"].verdict != "confirmed" and by["host-cpu"].ok
    run = Path(result["runs"]["confirm-gateway"])
    stored = json.loads((run / "confirmations.json").read_text())  # the last confirm's
    assert [c["verdict"] for c in stored["confirmations"]] == ["storage-bandwidth"]
    assert pd.read_parquet(run / "confirmations.parquet")["outcome"].tolist()[-1] == "not testable here"


@pytest.mark.slow
def test_a_falsified_concurrency_verdict_is_refuted(ceph_cluster, tmp_path, state):
    # at c=4, where the 0.15-core gateway is never idle: at c=2 the pauses between one file and
    # the next leave it idle now and then, so twice the transfers there did gain something
    # (x0.93 and x1.14 in two runs, its c=2 controls 89-132 MB/s): a limit partly true, which
    # refuted or not by chance. Four pairs: with two, a busy box's noise (±15 %) left x1.02
    # short of refuting the x1.2 asked
    capped = _run(tmp_path, {"tmpfs": {"size": ["1G"]}}, cores=[CORES], concurrency=[4])
    (v,) = capped.table("verdicts").to_dict("records")
    assert v["verdict"] == "gateway", v["reason"]
    bad = confirm_run(_falsified(capped, tmp_path, "concurrency"), ceph_cluster, pairs=4, log=print)
    print(text(bad))
    (y,) = bad["confirmations"]
    assert y["experiment"] == "relieve" and y["pairs"] == 4 and len(y["runs"]) == 8
    assert y["outcome"] == "refuted", y["why"]
    assert not bad["ok"] and y["high"] < y["minimum"]


OSD_CORES = 0.1  # the OSDs together: far below what a CephFS cell's writes need here


@pytest.mark.slow
def test_osds_held_by_a_quota_the_run_did_not_make_confirm_the_storage_side_not_the_gateway(
        ceph_cluster, tmp_path, state):
    if not getattr(ceph_cluster, "embedded", False):
        pytest.skip("the OSDs of a cluster given by --ceph-conf run elsewhere")
    pids = mini_pids(ceph_cluster)()["osd"]
    with CpuGroups(None, run=f"confirm-osd{os.getpid()}") as groups:  # its members go back when it closes
        g = groups.create("osd", OSD_CORES)
        for pid in pids:
            g.add(pid)
        run = _run(tmp_path, {"cephfs": {"layouts": [{"stripe_unit": "4M", "stripe_count": 1,
                                                          "object_size": "4M"}], "pools": ["rep1"]}},
                   ceph_cluster)
        cp = subprocess.run([sys.executable, "-m", "xcbench", "confirm", str(run.path), "-c",
                             str(ceph_cluster.conf), "--test", "storage-bandwidth", "--test", "gateway",
                             "--json"], capture_output=True, text=True, timeout=1200)
    print(cp.stderr[-3000:])
    assert cp.returncode in (0, 1), cp.stderr[-3000:]
    by = {x["verdict"]: x for x in json.loads(cp.stdout)["confirmations"]}
    s = by["storage-bandwidth"]
    assert s["experiment"] == "relieve" and "tmpfs" in s["what"] and s["confirms"] == "storage side"
    assert s["outcome"] == "confirmed", s["why"]
    assert by["gateway"]["outcome"] != "confirmed", by["gateway"]["why"]


CASES = [c.name for c in confirm_cases.CASES]


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("case", CASES)
def test_every_experiment_kind_confirms_its_right_name_and_no_wrong_one(ceph_cluster, tmp_path, state, case):
    """Falsified verdicts are not confirmed (issue 44's must-show), one case per experiment kind
    (xcbench.selftest.confirm_cases' table), every test of it (the full variant's)."""
    result = run_selftest(ceph_cluster, names=[case], quick=False, out=tmp_path / "results", log=print)
    print(output.text(result))
    tests = {(t.name, t.experiment) for t in confirm_cases.CASES[CASES.index(case)].tests}
    assert {(c.cause["test"], c.cause["experiment_name"]) for c in result["checks"]} >= \
        {(n, e) for n, e in tests if e}, "each test asked"
    assert len(result["checks"]) == len(tests) and result["ok"], output.text(result)
    for c in result["checks"]:
        assert c.verdict == "confirmed" if c.cause["right"] else c.verdict != "confirmed", c
