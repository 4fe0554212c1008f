"""The embedded cluster's Prometheus: `cluster up` starts it with node_exporter and the mgr
module, both scraped; a `cluster up` killed with -9 leaves them running and the next command
(`cluster down`) stops them; `cluster down` stops and removes everything."""

import json
import signal
import subprocess
import sys
import time

import psutil
import pytest
import requests

from xcbench.ceph import monitoring
from xcbench.ceph.mini import MiniCluster
from xcbench.system.proc import run

pytestmark = pytest.mark.integration
XCBENCH = [sys.executable, "-m", "xcbench.cli"]
NO_ENV = {"CEPH_CONF": "", "CEPH_ARGS": "", "XCBENCH_HOME": ""}


def _monitoring_pids(state) -> dict[int, str]:
    """Monitoring processes of ``state``, found here by command line (not MiniCluster's scan)."""
    out = {}
    for p in psutil.process_iter(["cmdline"]):
        argv = p.info["cmdline"] or []
        if monitoring.is_ours(argv, state):
            out[p.pid] = argv[0]
    return out


def _wait(cond, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    pytest.fail(f"not within {seconds} s: {what}")


def _query(url: str, q: str) -> list[dict]:
    r = requests.get(f"{url}/api/v1/query", params={"query": q}, timeout=5).json()
    assert r["status"] == "success", r
    return r["data"]["result"]


def test_up_killed_then_up_again_then_down(tmp_path):
    state = tmp_path / "c"
    up = XCBENCH + ["cluster", "up", "--state-dir", str(state)]
    env = {**__import__("os").environ, **NO_ENV}
    first = subprocess.Popen(up, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # the server and the exporter start while the OSDs come up: kill the command then
        left = _wait(lambda: len(_monitoring_pids(state)) == 2 and _monitoring_pids(state), 120,
                     "prometheus and node_exporter started by the first `cluster up`")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    assert all(psutil.pid_exists(p) for p in left)  # they outlive the killed command

    # a half-started cluster: the next command (`cluster down`) stops them with the rest
    down = XCBENCH + ["cluster", "down", "--state-dir", str(state)]
    r = run(down, env=NO_ENV, timeout=120)
    assert "prometheus" in r.stdout and "node-exporter" in r.stdout
    assert not state.exists() and not _monitoring_pids(state)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in left)

    r = run(up, env=NO_ENV, timeout=300)
    assert "scrapes node_exporter" in r.stdout
    meta = json.loads((state / "cluster.json").read_text())["prometheus"]
    now = _monitoring_pids(state)
    assert set(meta["pids"].values()) == set(now) and len(now) == 2
    assert meta["url"].startswith("http://127.0.0.1:") and meta["node"].startswith("127.0.0.1:")
    assert (state / "prometheus" / "data").is_dir()
    up_by_job = {s["metric"]["job"]: s["value"][1] for s in _query(meta["url"], "up")}
    assert up_by_job == {"node": "1", "ceph": "1"}
    assert len(_query(meta["url"], "ceph_osd_metadata")) == 3
    assert len(_query(meta["url"], "node_uname_info")) == 1
    assert {"prometheus", "node-exporter"} <= set(MiniCluster(state).daemons())

    run(down, env=NO_ENV, timeout=120)
    assert not state.exists() and not _monitoring_pids(state)
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{meta['url']}/-/ready", timeout=2)
