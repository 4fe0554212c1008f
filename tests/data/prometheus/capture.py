"""Record the real answers the unit tests replay (run on a machine with `xcbench cluster up`):

    .venv/bin/python tests/data/prometheus/capture.py STATE_DIR

node_exporter's and the ceph-mgr module's /metrics, `ceph osd metadata`, and the Prometheus API's
answers (JSON, as received) to every query of xcbench.telemetry.promqueries over the last 20 s.
Put load on the cluster first (e.g. `rados bench 20 write -p xcb-ec2-1`) so the rates are not 0.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from xcbench.telemetry import promqueries as pq  # noqa: E402

state = Path(sys.argv[1])
here = Path(__file__).parent
meta = json.loads((state / "cluster.json").read_text())["prometheus"]
url, step = meta["url"], meta["scrape_interval"]
node_v = subprocess.run(["prometheus-node-exporter", "--version"], capture_output=True, text=True)
(here / "node_exporter-1.5.0.txt").write_text(requests.get(f"http://{meta['node']}/metrics").text)
(here / "ceph-mgr-16.2.15.txt").write_text(requests.get(f"http://{meta['mgr']}/metrics").text)
(here / "ceph-osd-metadata-16.2.15.json").write_text(subprocess.run(
    ["ceph", "-c", str(state / "ceph.conf"), "osd", "metadata", "-f", "json"],
    capture_output=True, text=True, check=True).stdout)
end = time.time()
answers = {"url": url, "step": step, "start": end - 20, "end": end, "range": {}, "instant": {}}
for name in pq.QUERIES:
    r = requests.get(f"{url}/api/v1/query_range", params={
        "query": pq.promql(name, step), "start": end - 20, "end": end, "step": step})
    answers["range"][name] = r.json()
for q in (pq.UNAME, "ceph_osd_metadata", pq.live_promql(step), "max(timestamp(up))"):
    answers["instant"][q] = requests.get(f"{url}/api/v1/query", params={"query": q}).json()
answers["config"] = requests.get(f"{url}/api/v1/status/config").json()
answers["error"] = requests.get(f"{url}/api/v1/query", params={"query": "rate(x[1s]"}).json()
(here / "prometheus-2.42-answers.json").write_text(json.dumps(answers, indent=1) + "\n")
print("recorded", len(answers["range"]), "range answers")
