"""Every panel of the Grafana dashboard (docs/grafana/xcbench.json) answers on the embedded
cluster's Prometheus (node_exporter and the ceph-mgr module, scraped by `cluster up`): HTTP 200,
status success, no error or warning, as Grafana would ask it ($__rate_interval and $__interval
given the values Grafana would put there at a 15-s scrape)."""

from __future__ import annotations

import pytest
import requests

from tests.support.dashboard import exprs, load

pytestmark = pytest.mark.integration
# what Grafana substitutes at a 15-s scrape interval: $__rate_interval = max(4 x scrape, ...)
MACROS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "5m"}


def test_every_panel_answers_on_the_embedded_prometheus(ceph_cluster):
    prom = ceph_cluster.info.get("prometheus") or {}
    if not prom.get("url"):
        pytest.fail("the session's cluster runs no Prometheus (a --ceph-conf cluster: this test "
                    "needs the embedded one)", pytrace=False)
    answered = {}
    for e in exprs(load()):
        q = e
        for k, v in MACROS.items():
            q = q.replace(k, v)
        r = requests.get(f"{prom['url']}/api/v1/query", params={"query": q}, timeout=10)
        assert r.status_code == 200, (e, r.text[:500])
        body = r.json()
        assert body["status"] == "success" and "error" not in body and not body.get("warnings"), (e, body)
        answered[e] = len(body["data"]["result"])
    # not only well-formed: the host and Ceph series are there
    assert any(n > 0 for e, n in answered.items() if "node_cpu_seconds_total" in e), answered
    assert any(n > 0 for e, n in answered.items() if "ceph_osd_commit_latency_ms" in e), answered
