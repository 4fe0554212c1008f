"""A run reads the cluster's hosts through Prometheus (the embedded cluster's own: the same path
as a site's): per level, after it ends, its window's host, OSD and pool figures land in the
samples; the queries are in the run; while a level runs, the progress view shows the busiest
storage host's line; on one box, Prometheus's and the host device's CPU views agree (no finding).
A Prometheus that is down costs one finding per cell, no storage line, and the run completes."""

import json
import re

import pytest

from xcbench.analysis.conclude import conclude
from xcbench.analysis.verdicts.storagehosts import VIEWS_WHAT
from xcbench.commands.run import load_run_matrix
from xcbench.run.progress import MatrixView
from xcbench.run.runner import RunOptions, run_matrix
from xcbench.system.ports import free_port
from xcbench.telemetry import promqueries as pq
from xcbench.telemetry.prometheus import LIVE_PREFIX

pytestmark = pytest.mark.integration

MATRIX = """
name: prom
defaults:
  concurrency: [2, 4]
  file_size: 16M
  files: 8
  campaign: {{timeout: 120, retries: 1, retry_delay: 0.5{duration}}}
backends:
{backends}
"""


# levels of at least 8 s: the live query (every 5 s, the device's pace) runs during each
TIMED = ", duration: {min: 8s, max: 16s}"


def _matrix(tmp_path, backends, duration=""):
    p = tmp_path / "m.yaml"
    p.write_text(MATRIX.format(backends=backends, duration=duration))
    return p


def test_a_run_on_the_embedded_cluster_reads_its_prometheus(ceph_cluster, tmp_path, capsys):
    if not ceph_cluster.info.get("prometheus"):
        pytest.fail("the session's cluster runs no Prometheus (a --ceph-conf cluster: give its "
                    "Prometheus to this test is not supported)", pytrace=False)
    path = _matrix(tmp_path, "  rados: {layouts: [{stripe_unit: 4M, stripe_count: 1, object_size: 4M}],"
                             " pools: [ec2+1]}", TIMED)
    opts = RunOptions(store=tmp_path / "r", name="prom", probes=False, baseline=False,
                      telemetry="host,prometheus", report=False)
    run = run_matrix(load_run_matrix(path, ceph_cluster, opts), ceph_cluster, opts, view=MatrixView())
    conclude(run)  # the verdicts, as `xcbench run` stores them
    err = capsys.readouterr().err
    cell_id, state = next(iter(run.cells.items()))
    assert state.status == "complete", state.error
    s = run.table("samples")
    s = s[(s["cell_id"] == cell_id) & (s["sampler"] == "prometheus")]
    labels = s["labels"].map(lambda v: json.loads(v) if isinstance(v, str) else v)
    metrics = set(s["metric"])
    assert set(pq.QUERIES) - {"node.nic_speed_bytes_per_s"} <= metrics  # loopback NICs have no speed
    pool = state.extra["pool"]
    pool_w = s[(s["metric"] == "ceph.pool_write_bytes_per_s") & labels.map(lambda x: x.get("pool") == pool)]
    assert pool_w["value"].max() > 1e6  # the campaign's writes into the cell's EC pool
    osds = {x["osd"] for x, m in zip(labels, s["metric"], strict=True) if m == "ceph.osd_write_bytes_per_s"}
    assert osds == {"osd.0", "osd.1", "osd.2"}
    disks = [x for x, m in zip(labels, s["metric"], strict=True) if m == "node.disk_busy" and x.get("osds")]
    assert disks and all(x["role"] == "local,osd" for x in disks)  # the disk under the OSDs' files
    raw = run.path / "raw" / "prometheus" / cell_id
    levels = [json.loads(line) for line in (raw / "levels.jsonl").read_text().splitlines()]
    assert [lv["concurrency"] for lv in levels] == [2, 4]
    # the range queries' rows lie in the levels' windows (the live query's rows are taken on the
    # telemetry tick, also before the first level: they are not the level's)
    ranged = s[~s["metric"].str.startswith(LIVE_PREFIX)]
    assert ranged["wall"].min() >= levels[0]["start"] - 1e-3 and ranged["wall"].max() <= levels[-1]["end"] + 1e-3
    assert "ceph.pool_write_bytes_per_s\trate(ceph_pool_wr_bytes[4s])" in (raw / "queries.promql").read_text()
    f = run.table("findings")
    assert not any("did not answer" in w for w in f.get("what", []))
    # the verdicts hold the storage host's figures: the OSDs' disk, this machine's CPU (local)
    v = run.table("verdicts")
    assert not any("attribution" in w for w in run.state.warnings or [])
    for ev in map(json.loads, v[v["cell_id"] == cell_id]["evidence"]):
        if "storage_hosts" not in ev:
            continue  # a level whose steady window holds no prometheus point
        disks = {d for h in ev["storage_hosts"].values() for d, x in h["disks"].items() if x["osds"]}
        assert disks and ev["storage_disk"]["device"] in disks and ev["storage_cpu"] is None
        assert ev["storage_fanout_expected"] == 2.0  # EC 2+1 by RAL's arithmetic
        break
    else:
        pytest.fail(f"no verdict of {cell_id} has storage host figures: {v['evidence'].tolist()}")
    # one box: both CPU views of this machine were compared at some level, and agree: no finding
    views = [ev["storage_views"] for ev in map(json.loads, v["evidence"]) if ev.get("storage_views")]
    assert views and all(x["agree"] for x in views), views
    assert not any(str(w).startswith(VIEWS_WHAT) for w in f.get("what", []))
    # the progress view (stderr) said the busiest storage host's range once per level, after the
    # level's own line (a view told the run is on one box says none: tests/unit/telemetry)
    for c in (2, 4):
        after = err.split(f"c={c}: ", 1)[1].split("campaign c=", 1)[0]
        ranges = re.findall(r"storage host \S+ over the level: (?:NIC .*, )?disk \S+ [\d–]+ % busy, "
                            r"CPU [\d–]+ %", after)
        assert len(ranges) == 1, err


def test_a_prometheus_that_is_down_is_one_finding_and_the_run_completes(tmp_path, capsys):
    dead = f"http://127.0.0.1:{free_port()}"
    # untimed levels (8 files each): the live query's first tick, before the first level,
    # already finds Prometheus down and ends the live query; a longer level adds no query
    path = _matrix(tmp_path, "  tmpfs: {size: 256M}")
    opts = RunOptions(store=tmp_path / "r", name="dead", probes=False, baseline=False, report=False,
                      telemetry="host,prometheus", extra={"prometheus": {"url": dead, "auth": None}})
    run = run_matrix(load_run_matrix(path, None, opts), None, opts, view=MatrixView())
    err = capsys.readouterr().err
    # the view went on without the storage line: every level's own line, none of the storage host
    assert re.search(r"c=2: [\d.]+ Gb/s", err) and re.search(r"c=4: [\d.]+ Gb/s", err), err
    assert "storage host" not in err
    cell_id, state = next(iter(run.cells.items()))
    assert state.status == "complete", state.error
    f = run.table("findings")
    down = f[f["what"].str.contains("did not answer")]
    assert len(down) == 1 and "Connection refused" in down["why"].iloc[0]
    s = run.table("samples")
    assert (s["sampler"] == "host").any() and not (s["sampler"] == "prometheus").any()
    assert len(run.table("timeline")) > 0
