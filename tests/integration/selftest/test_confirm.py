"""`xcbench confirm` on the real chain. A run whose gateway is held by a CPU quota (the cores
dimension) has its "gateway" verdict confirmed by twice the cores, in A-B-B-A pairs (default
suite, short levels). Slow: the same run with its verdict falsified to "concurrency" in a copy
is refuted (twice the transfers do not lift a gateway held by its quota); a CephFS cell's
verdict, falsified to storage-bandwidth, is tested by taking the storage out through a cluster
given by -c. Nothing of the replays is left behind."""

from __future__ import annotations

import json
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
from xcbench.selftest.capping import run_concluded
from xcbench.selftest.confirm import confirm_run, text

pytestmark = [pytest.mark.integration, needs_quota]
QUOTA_GROUPS = ("xcb-confirm",)  # the conftest's state fixture: none of them left after a test
CORES = 0.15  # one origin's quota: far below what a tmpfs gateway uses here (~1.3 cores)
LEVEL = 2
# short time-based levels: each replay ~6 s of campaign; 1 run + 4 replays in the default suite
CAMPAIGN = {"duration": {"min": "5s", "max": "8s"},
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


def test_confirm_confirms_a_capped_gateway_with_twice_its_cores(ceph_cluster, capped, tmp_path):
    got = confirm_run(capped.path, ceph_cluster, log=print)
    print(text(got))
    (x,) = got["confirmations"]
    assert x["verdict"] == "gateway" and x["experiment"] == "relieve", x
    assert x["outcome"] == "confirmed", x["why"]
    assert x["predicted"] == pytest.approx(2.0) and x["low"] >= x["minimum"] == pytest.approx(1.2)
    assert [r["arm"] for r in x["runs"]] == ["control", "changed", "changed", "control"]
    for r in x["runs"]:  # each arm ran under the quota it names
        assert r["role"]["limit"] == pytest.approx(CORES if r["arm"] == "control" else 2 * CORES, rel=0.05)
    assert isinstance(x["prediction_error"], float) and x["rel_se"] > 0
    stored = json.loads((capped.path / "confirmations.json").read_text())
    assert stored["confirmations"][0]["outcome"] == "confirmed"
    assert pd.read_parquet(capped.path / "confirmations.parquet")["outcome"].tolist() == ["confirmed"]


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


@pytest.mark.slow
def test_the_storage_is_taken_out_through_a_cluster_given_by_c(ceph_cluster, tmp_path, state):
    run = _run(tmp_path, {"cephfs": {"layouts": [{"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"}],
                                     "pools": ["rep1"]}}, ceph_cluster)
    fake = _falsified(run, tmp_path, "storage-bandwidth")
    cp = subprocess.run([sys.executable, "-m", "xcbench", "confirm", str(fake), "-c", str(ceph_cluster.conf),
                         "--json"], capture_output=True, text=True, timeout=600)
    print(cp.stderr[-3000:])
    assert cp.returncode in (0, 1), cp.stderr[-3000:]
    (x,) = json.loads(cp.stdout)["confirmations"]
    assert x["experiment"] == "relieve" and "tmpfs" in x["what"]
    arms = {r["arm"] for r in x["runs"]}
    assert arms == {"control", "changed"} and all(r["Bps"] for r in x["runs"])
    assert x["outcome"] in ("confirmed", "refuted", "inconclusive")
