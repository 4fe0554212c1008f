"""The orchestrated run on the real mini cluster: end to end, and under faults.

Faults: an OSD killed during a campaign on the EC pool, the gateway killed during a campaign,
SIGINT mid-matrix then --resume. In each case no record is lost and no process is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from XRootD import client as xc

from xcbench.analysis.conclude import conclude
from xcbench.commands.run import load_run_matrix
from xcbench.run.progress import MatrixView
from xcbench.run.runner import RunOptions, run_matrix
from xcbench.store.rundir import RunDir
from xcbench.system import proc

pytestmark = pytest.mark.integration

TINY = """
name: tiny
defaults:
  concurrency: [1, 3]
  file_size: 2M
  files: 6
  probe: {{runtime: 1, size: 8M, iodepth: 2}}
  campaign: {{timeout: 60, retries: 1, retry_delay: 0.5}}
backends:
{backends}
"""
ALL_BACKENDS = """
  tmpfs: {size: 128M}
  cephfs: {layouts: [{stripe_unit: 1M, stripe_count: 1, object_size: 1M}], pools: [replicated, ec2+1]}
  rados: {layouts: [{stripe_unit: 1M, stripe_count: 1, object_size: 1M}], pools: [replicated, ec2+1]}
"""


def matrix(tmp_path, backends=ALL_BACKENDS, name="m.yaml"):
    p = tmp_path / name
    p.write_text(TINY.format(backends=backends))
    return p


def scratch_processes(run_name: str) -> dict[int, str]:
    """{pid: command} of live processes whose command line names the run's scratch dir
    (/var/tmp/xcbench-<run>-*: gateways, fio, mounts of that run)."""
    needle = f"xcbench-{run_name}-".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if needle in cmd and proc.pid_alive(int(entry.name)):
                found[int(entry.name)] = cmd.replace(b"\0", b" ").decode(errors="replace")
    return found


def run_processes(run_path: Path) -> list[str]:
    return list(scratch_processes(run_path.name).values())


def complete_records(run: RunDir, cell_id: str, files: int, levels: int) -> None:
    """Every file of every campaign of the cell has exactly one final record."""
    t = run.table("transfers")
    t = t[t["cell_id"] == cell_id]
    final = t.sort_values("retry").groupby(["campaign_id", "file_index"]).tail(1)
    assert len(final) == files * levels, t[["campaign_id", "file_index", "retry", "file_state"]]


def test_end_to_end_demo_matrix(demo_run, ceph_cluster):
    """The session's run of the demo matrix's shape (tests/support/demorun.py), end to end:
    every record, table, probe, sample and verdict there, the report made, nothing left behind."""
    run = demo_run.run
    m = json.loads((run.path / "manifest.json").read_text())
    assert m["status"] == "complete", m.get("warnings")
    cells = m["cells"]
    assert len(cells) == 6
    assert {c["status"] for c in cells.values()} == {"complete"}, \
        {c["label"]: c.get("error") for c in cells.values()}
    for table in ("transfers", "timeline", "campaigns", "probes", "samples", "baseline",
                  "verdicts"):
        assert (run.path / f"{table}.parquet").exists(), table
    transfers = run.table("transfers")
    assert (transfers["file_state"] == "FINISHED").all()
    assert (transfers["checksum_source"] == transfers["checksum_dest"]).all()
    # time-based levels cycle the files (a file_index comes again once verified and deleted):
    # every attempt (campaign, sequence, retry) has exactly one record, and every level moved files
    assert not transfers["transfer_id"].duplicated().any()
    assert (transfers["retry"] == 0).all()
    per_level = transfers.groupby(["cell_id", "concurrency"]).size()
    assert len(per_level) == 6 * 2 and (per_level > 0).all(), per_level
    probes = run.table("probes")
    assert set(probes["cell_id"]) == set(cells)
    assert (probes["iops"] > 0).any()
    samples = run.table("samples")
    assert {"host", "gateway", "ceph"} <= set(samples["sampler"])
    verdicts = run.table("verdicts")
    assert set(verdicts["cell_id"]) == set(cells)
    assert verdicts["reason"].str.len().min() > 10
    report = Path(m["report"])
    assert report.exists() and report.stat().st_size > 10_000
    assert (run.path / "raw" / "gateways").exists()
    assert not list(run.path.rglob("*keyring*")), "a keyring was copied into the results"
    assert run_processes(run.path) == []
    for pool in ("xcb-rep3", "xcb-ec2-1"):  # nothing of the run left in the pools
        assert not [o for o in ceph_cluster.ioctx(pool).list_objects() if run.path.name in o.key], pool


class Hook(MatrixView):
    """A progress view that fires ``action`` once, when the first transfer records arrive (the
    campaign flushes them every second): the campaigns below are sized to last several
    seconds, so files are still to go."""

    def __init__(self, action):
        super().__init__()
        self.action = action
        self.fired_at: float | None = None

    def observe(self, table, rows):
        super().observe(table, rows)
        if table == "transfers" and rows and self.fired_at is None:
            self.fired_at = time.time()
            self.action()


def test_osd_dies_during_ec_campaign(ceph_cluster, tmp_path):
    if not ceph_cluster.embedded:
        pytest.skip("kills an OSD: only on the embedded mini cluster")
    from xcbench.ceph.mini import MiniCluster
    mini = MiniCluster(Path(ceph_cluster.conf).parent)
    pid = mini.daemons()["osd.2"]
    pool = "xcb-ec2-1"
    old_min = ceph_cluster.mon_command("osd pool get", pool=pool, var="min_size")["min_size"]
    # k=2: with min_size 2 the pool keeps serving I/O degraded while one OSD of 3 is gone
    ceph_cluster.mon_command("osd pool set", pool=pool, var="min_size", val="2")
    path = matrix(tmp_path, "  rados: {layouts: [{stripe_unit: 1M, stripe_count: 1, object_size: 1M}], pools: [ec2+1]}")
    path.write_text(path.read_text().replace("concurrency: [1, 3]", "concurrency: [2]")
                    .replace("files: 6", "files: 60").replace("file_size: 2M", "file_size: 4M"))
    hook = Hook(lambda: os.kill(pid, signal.SIGKILL))
    try:
        opts = RunOptions(store=tmp_path / "r", probes=False, baseline=False)
        run = run_matrix(load_run_matrix(path, ceph_cluster, opts), ceph_cluster, opts, view=hook)
        conclude(run, "html")  # as `xcbench run` does once the runner is done
    finally:
        if hook.fired_at is not None:  # the OSD was killed: start it again for the next tests
            deadline = time.time() + 30
            while proc.pid_alive(pid) and time.time() < deadline:
                time.sleep(0.1)
            restart = proc.spawn(["ceph-osd", "-f", "-c", ceph_cluster.conf, "-i", "2"],
                                 log=tmp_path / "osd2.log")
            deadline = time.time() + 60
            while ceph_cluster.mon_command("osd stat")["num_up_osds"] < 3 and time.time() < deadline:
                time.sleep(0.5)
            assert restart.alive(), restart.tail()
        ceph_cluster.mon_command("osd pool set", pool=pool, var="min_size", val=str(old_min))
    m = run.manifest
    (cid, cell), = m["cells"].items()
    assert hook.fired_at is not None, f"no campaign ran: {cell.get('error')}"
    assert cell["status"] in ("complete", "degraded"), cell.get("error")
    complete_records(run, cid, files=60, levels=1)
    t = run.table("transfers")
    assert (t["finish_time"] > hook.fired_at).sum() > 10  # the OSD died mid-campaign
    assert run_processes(run.path) == []
    assert Path(m["report"]).exists()


@pytest.fixture
def short_connection_window():
    """XrdCl's ConnectionWindow at 2 s and ConnectionRetry at 1 for one test, then back: after
    a gateway dies, each attempt that reconnects waits out the window once per retry (10 s
    and 2 by xcbench's default), which made the test below 85 s long for the same outcome.
    Process-wide, so restored after the test."""
    before = {k: xc.EnvGetInt(k) for k in ("ConnectionWindow", "ConnectionRetry")}
    xc.EnvPutInt("ConnectionWindow", 2)
    xc.EnvPutInt("ConnectionRetry", 1)
    yield
    for k, v in before.items():
        xc.EnvPutInt(k, v)


def test_gateway_dies_during_campaign(ceph_cluster, tmp_path, short_connection_window):
    killed = []

    def kill_gateway():
        for pid, cmd in scratch_processes("gwkill").items():
            if os.path.basename(cmd.split()[0]) == "xrootd":
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    path = matrix(tmp_path, "  tmpfs: {size: 128M}")
    path.write_text(path.read_text().replace("concurrency: [1, 3]", "concurrency: [2]")
                    .replace("files: 6", "files: 400").replace("file_size: 2M", "file_size: 8M"))
    opts = RunOptions(store=tmp_path / "r", name="gwkill", probes=False, baseline=False)
    run = run_matrix(load_run_matrix(path, ceph_cluster, opts), ceph_cluster, opts,
                     view=Hook(kill_gateway))
    conclude(run, "html")  # as `xcbench run` does once the runner is done
    assert killed, "the test did not find the gateway to kill"
    (cid, cell), = run.manifest["cells"].items()
    assert cell["status"] in ("degraded", "failed")
    t = run.table("transfers")
    assert (t["file_state"] == "FAILED").any()
    assert t["reason"].fillna("").str.len().max() > 0
    if cell["status"] == "degraded":
        complete_records(run, cid, files=400, levels=1)
        assert "transfers failed after their retries" in cell["error"]
    report = Path(run.manifest["report_md"]).read_text()
    assert cell["status"] in report and cell["error"].split(":")[0][:40] in report
    assert run_processes(run.path) == []
    assert Path(run.manifest["report"]).exists()


def test_sigint_mid_matrix_then_resume(ceph_cluster, tmp_path):
    backends = "  tmpfs: {size: [64M, 96M]}"  # two cells: one done before the signal, one cut
    path = matrix(tmp_path, backends)
    path.write_text(path.read_text().replace("files: 6", "files: 150")
                    .replace("file_size: 2M", "file_size: 8M"))
    out = tmp_path / "results"
    cmd = [sys.executable, "-m", "xcbench", "run", str(path), "--store", str(out), "--run-name", "sig",
           "--ceph-conf", str(ceph_cluster.conf), "--no-probes", "--no-baseline"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in p.stderr:  # interrupt during the second cell's campaign
        seen.append(line)
        if line.split(" ", 1)[-1].startswith("[2/2]"):  # after the time of day a piped line starts with
            break
    for line in p.stderr:
        seen.append(line)
        if "campaign" in line:  # 150 x 8 MiB at c=1: a second or more of transfers still to go
            p.send_signal(signal.SIGINT)
            break
    rest_out, rest_err = p.communicate(timeout=120)
    assert p.returncode == 130, "".join(seen) + rest_err
    assert "--resume" in rest_err and "Traceback" not in rest_err
    run_path = out / "sig"
    m = json.loads((run_path / "manifest.json").read_text())
    states = [c["status"] for c in m["cells"].values()]
    assert states.count("complete") == 1 and "interrupted" in states, states
    assert m["status"] == "interrupted"
    assert run_processes(run_path) == []
    before = RunDir.open(run_path).table("transfers")
    done_cell = next(cid for cid, c in m["cells"].items() if c["status"] == "complete")
    n_done = int((before["cell_id"] == done_cell).sum())

    # tmpfs cells only: the resume needs no Ceph cluster (a state home without one, no conf)
    env = {k: v for k, v in os.environ.items() if k not in ("CEPH_CONF", "CEPH_ARGS")}
    env["XCBENCH_HOME"] = str(tmp_path / "home-without-a-cluster")
    cp = subprocess.run([sys.executable, "-m", "xcbench", "run", "--resume", str(run_path),
                         "--no-probes", "--no-baseline"],
                        capture_output=True, text=True, timeout=300, env=env)
    assert cp.returncode == 0, cp.stderr
    run = RunDir.open(run_path)
    assert {c.status for c in run.cells.values()} == {"complete"}
    after = run.table("transfers")
    assert int((after["cell_id"] == done_cell).sum()) == n_done  # not run again
    for cid in run.cells:
        complete_records(run, cid, files=150, levels=2)
    assert (run_path / "records" / "superseded").exists()
    assert Path(run.manifest["report"]).exists()
