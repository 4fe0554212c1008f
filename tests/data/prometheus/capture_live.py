"""Record the real answer of the prometheus device's live query (run on a machine with
`xcbench cluster up`, under load):

    .venv/bin/python tests/data/prometheus/capture_live.py STATE_DIR
"""
import json
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from xcbench.telemetry import promqueries as pq  # noqa: E402

state = Path(sys.argv[1])
meta = json.loads((state / "cluster.json").read_text())["prometheus"]
url, step = meta["url"], meta["scrape_interval"]
q = pq.live_promql(step)
t = time.monotonic()
answer = requests.get(f"{url}/api/v1/query", params={"query": q}).json()
took = time.monotonic() - t
out = Path(__file__).parent / "prometheus-2.42-live.json"
out.write_text(json.dumps({"url": url, "step": step, "query": q, "seconds": took, "answer": answer}, indent=1) + "\n")
print(f"recorded {len(answer['data']['result'])} series in {took * 1000:.1f} ms")
