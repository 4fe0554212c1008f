"""`xcbench confirm` on the real chain: a run whose gateway is held by a CPU quota (the cores
dimension) has its "gateway" verdict confirmed by relieving the quota; the same run with that
verdict falsified to a storage verdict in a copy of its verdicts table is refuted (tightening
the OSDs does not slow a tmpfs gateway). Nothing of the replays is left behind."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from xcbench.matrix import load_matrix
from xcbench.run.runner import RunOptions, run_matrix
from xcbench.selftest.confirm import confirm_run, text
from xcbench.selftest.scenarios import QUICK
from xcbench.system.cgroups import CgroupError, Registry, detect

try:
    detect()
    WHY = ""
except CgroupError as e:
    WHY = str(e)
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(WHY), reason=WHY or "no CPU-quota cgroups")]
CPU = Path("/sys/fs/cgroup/cpu")
CORES = 0.15  # one origin's quota: far below what a tmpfs gateway uses here (~1.3 cores)


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_STATE", str(tmp_path / "state"))
    yield tmp_path / "state"
    assert sorted(CPU.glob(f"xcb-confirm{os.getpid()}-*")) == [], "a quota group was left behind"
    assert Registry(tmp_path / "state").entries() == []


def _capped_run(tmp_path: Path):
    doc = {"name": "capped", "defaults": {
        "origins": [1], "modes": ["push"], "concurrency": [QUICK.levels[0]], "cores": [CORES],
        "file_size": QUICK.file_size, "files": QUICK.files, "repeats": 1,
        "gateway": {"async": False, "buffers_maxbsz": "16M"}, "campaign": QUICK.campaign()},
        "backends": {"tmpfs": {"size": ["2G"]}}}
    path = tmp_path / "capped.yaml"
    path.write_text(yaml.safe_dump(doc))
    opts = RunOptions(out=tmp_path / "results", name="capped", baseline=False, probes=False,
                      report=False, progress=False, telemetry="host:0.5,roles:0.5,gateway")
    return run_matrix(load_matrix(path), None, opts)


def test_confirm_confirms_a_capped_gateway_and_refutes_a_falsified_verdict(ceph_cluster, tmp_path, state):
    run = _capped_run(tmp_path)
    (v,) = run.table("verdicts").to_dict("records")
    assert v["verdict"] == "gateway", v["reason"]
    # a copy of the run with its verdict falsified, before confirm writes into the original
    fake = tmp_path / "falsified"
    shutil.copytree(run.path, fake)
    df = pd.read_parquet(fake / "verdicts.parquet")
    df["verdict"] = "storage-bandwidth"
    df.to_parquet(fake / "verdicts.parquet", index=False)

    got = confirm_run(run.path, ceph_cluster, log=print)
    print(text(got))
    (x,) = got["confirmations"]
    assert x["verdict"] == "gateway" and x["outcome"] == "confirmed", x
    assert x["changed_Bps"] > x["control_Bps"] and x["bound"] > 1
    assert x["control_rel_se"] is not None and x["changed_rel_se"] is not None
    assert x["control_role"]["limit"] == pytest.approx(CORES, rel=0.05)  # the control kept the cap
    assert x["changed_role"]["limit"] == pytest.approx(2 * CORES, rel=0.05)
    stored = json.loads((run.path / "confirmations.json").read_text())
    assert stored["confirmations"][0]["outcome"] == "confirmed"
    assert pd.read_parquet(run.path / "confirmations.parquet")["outcome"].tolist() == ["confirmed"]

    bad = confirm_run(fake, ceph_cluster, log=print)
    print(text(bad))
    (y,) = bad["confirmations"]
    assert y["verdict"] == "storage-bandwidth" and y["outcome"] == "refuted", y
    assert y["experiment"] == "tighten" and not bad["ok"]
