"""The prometheus device against a real local HTTP server: the recorded answers replayed, and a
server that is down, slow, answers errors, has no series, answers garbage or wants credentials.
Each problem is one FINDING per cell, the level gets what there is, and nothing hangs."""

import json
import time
from pathlib import Path

import pytest

from tests.support.promserver import ANSWERS, PromServer
from xcbench.errors import XcbError
from xcbench.system import secrets
from xcbench.system.http_auth import check_url, read_auth
from xcbench.system.ports import free_port
from xcbench.telemetry import promqueries as pq
from xcbench.telemetry.base import TelemetryRunner
from xcbench.telemetry.promapi import PromClient
from xcbench.telemetry.prometheus import PrometheusSampler

END = float(ANSWERS["instant"]["max(timestamp(up))"]["data"]["result"][0]["value"][1])


class Cluster:
    """What the device asks the cluster (`osd metadata`), as the real mon answered it."""

    def mon_command(self, prefix):
        from tests.support.promserver import OSD_META
        assert prefix == "osd metadata"
        return OSD_META


def _device(url, tmp_path=None, timeout=5.0, step=None, auth=None):
    findings = []
    s = PrometheusSampler(PromClient(url, auth, timeout=timeout), cell_id="c1",
                          sink=lambda t, rows: findings.extend(rows) if t == "findings" else None,
                          cluster=Cluster(), step=step, raw_dir=tmp_path / "raw" if tmp_path else None)
    return s, findings


def test_replayed_answers_become_rows_and_the_queries_are_written(tmp_path):
    with PromServer() as srv:
        s, findings = _device(srv.url, tmp_path)
        s.start()
        assert s.step == 1.0  # from the server's own config
        rows = s.level_end(END - 20, END, {"concurrency": 4, "repeat": 0})
        s.stop()
    metrics = {r["metric"] for r in rows}
    assert metrics == set(pq.QUERIES) - {"node.nic_speed_bytes_per_s"}  # no known link speed recorded
    assert [f["what"] for f in findings] == [f"Prometheus {srv.url} has no node_network_speed_bytes"]
    assert all(f["severity"] == "info" and f["cell_id"] == "c1" for f in findings)
    ranges = [p for path, p in srv.requests if path == "/api/v1/query_range"]
    assert len(ranges) == len(pq.QUERIES) and all(p["step"] == "1" for p in ranges)
    assert all(float(p["start"]) == pytest.approx(END - 20, abs=0.001) for p in ranges)
    written = (tmp_path / "raw" / "queries.promql").read_text()
    for name in pq.QUERIES:
        assert f"{name}\t{pq.promql(name, 1.0)}" in written
    hosts = json.loads((tmp_path / "raw" / "hosts.json").read_text())
    assert list(hosts["instances"].values())[0]["osd_devices"] == {"vda": ["osd.0", "osd.1", "osd.2"]}
    level = json.loads((tmp_path / "raw" / "levels.jsonl").read_text())
    assert level["concurrency"] == 4 and level["end"] == pytest.approx(END)


def test_a_prometheus_that_is_down_costs_one_finding_and_no_time(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    s, findings = _device(url, tmp_path, step=1.0)
    s.start()
    t = time.monotonic()
    assert s.level_end(time.time() - 10, time.time(), {}) == []
    assert s.level_end(time.time() - 10, time.time(), {}) == []
    assert time.monotonic() - t < 2
    assert len(findings) == 1 and "did not answer" in findings[0]["what"]
    assert "Connection refused" in findings[0]["why"]
    assert s.sample(time.time(), time.monotonic()) == []  # the live query too


def test_a_slow_prometheus_costs_one_timeout_per_level_not_a_hung_level():
    with PromServer("slow", delay=3.0) as srv:
        s, findings = _device(srv.url, timeout=0.3, step=1.0)
        t = time.monotonic()
        s.start()
        assert s.level_end(time.time() - 10, time.time(), {}) == []
        assert s.sample(time.time(), time.monotonic()) == []
        took = time.monotonic() - t
    # start: one timeout (the host map); the level: one (its first request); live: its own 1 s
    assert took < 0.3 * 2 + 1.0 + 1.0
    assert len(findings) == 1 and "no answer in 0.3 s" in findings[0]["why"]


def test_an_error_answer_is_one_finding_naming_it():
    with PromServer("error") as srv:
        s, findings = _device(srv.url, step=1.0)
        s.start()
        assert s.level_end(time.time() - 10, time.time(), {}) == []
    assert len(findings) == 1
    assert "HTTP 503: unavailable: TSDB not ready" in findings[0]["why"]


def test_garbage_is_not_taken_for_an_answer():
    with PromServer("garbage") as srv:
        s, findings = _device(srv.url, step=1.0)
        s.start()
        assert s.level_end(time.time() - 10, time.time(), {}) == []
    assert len(findings) == 1 and "not a Prometheus API answer" in findings[0]["why"]


def test_missing_metrics_are_named_once_each_and_the_level_goes_on():
    with PromServer("empty") as srv:
        s, findings = _device(srv.url, step=0.05)
        s.start()
        for _ in range(2):
            assert s.level_end(time.time() - 1, time.time(), {}) == []
    names = sorted(f["what"].rsplit(" ", 1)[1] for f in findings)
    assert names == sorted({pq.UNAME, *pq.NEEDS.values()})  # each once, though two levels ran
    ranges = [p for path, p in srv.requests if path == "/api/v1/query_range"]
    assert len(ranges) == 2 * len(pq.QUERIES)  # both levels asked everything


def test_a_misbehaving_sampler_level_is_a_gap_in_the_runner_not_an_exception():
    written = {}

    class Broken(PrometheusSampler):
        def level_end(self, start, end, info):
            raise RuntimeError("boom")

    runner = TelemetryRunner([Broken(PromClient("http://127.0.0.1:1"), step=1.0)], interval=60,
                             sink=lambda t, rows: written.setdefault(t, []).extend(rows), cell_id="c1")
    with runner:
        runner.level_end(time.time() - 1, time.time(), concurrency=1)
    assert any("level: RuntimeError: boom" in g["error"] for g in written["gaps"])


def test_bearer_and_basic_auth_from_files(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cr3t-t0ken-value\n")
    basic = tmp_path / "basic"
    basic.write_text("reader:pa55word-x\n")
    with PromServer(auth="Bearer s3cr3t-t0ken-value") as srv:
        s, findings = _device(srv.url, step=1.0, auth=read_auth(f"bearer:{token}"))
        s.start()
        assert s.level_end(END - 5, END, {}) and not [f for f in findings if "did not answer" in f["what"]]
        s2, findings2 = _device(srv.url, step=1.0)  # no credentials: one finding, 401 named
        s2.start()
        assert "HTTP 401: unauthorized" in findings2[0]["why"]
        assert "s3cr3t" not in json.dumps(findings2)
    import base64
    want = "Basic " + base64.b64encode(b"reader:pa55word-x").decode()
    with PromServer(auth=want) as srv:
        s, findings = _device(srv.url, step=1.0, auth=read_auth(f"basic:{basic}"))
        s.start()
        assert s.level_end(END - 5, END, {})
    assert secrets.scrub("token s3cr3t-t0ken-value and pa55word-x") == \
        f"token {secrets.REDACTED} and {secrets.REDACTED}"


@pytest.mark.parametrize("spec, says", [
    ("token:/x", "bearer:PATH"), ("bearer:", "bearer:PATH"), ("bearer:/nonexistent/t", "/nonexistent/t"),
])
def test_bad_auth_specs_are_one_line_errors(spec, says):
    with pytest.raises(XcbError, match=says.replace(":", ".")):
        read_auth(spec)


def test_basic_auth_file_must_hold_user_and_password(tmp_path):
    f = tmp_path / "b"
    f.write_text("justauser\n")
    with pytest.raises(XcbError, match="user:password"):
        read_auth(f"basic:{f}")


@pytest.mark.parametrize("url, says", [
    ("prom:9090", "not an http"), ("ftp://x", "not an http"),
    ("http://u:p@prom:9090", "no credentials in the URL"),
])
def test_bad_urls(url, says):
    with pytest.raises(XcbError, match=says):
        check_url(url)
    assert check_url("https://prom.example:9090/") == "https://prom.example:9090"


@pytest.mark.parametrize("argv, says", [
    (["--prometheus", "prom:9090"], "--prometheus 'prom:9090': not an http"),
    (["--prometheus", "http://p:9090", "--prometheus-auth", "bearer:/nonexistent/tok"], "/nonexistent/tok"),
    (["--prometheus-auth", "bearer:/x"], "give --prometheus URL too"),
])
def test_run_rejects_bad_prometheus_flags_with_one_line_and_exit_2(argv, says, capsys, tmp_path):
    MATRIX = Path(__file__).resolve().parents[3] / "layouts" / "quick.yaml"
    from xcbench.cli import main
    rc = main(["run", str(MATRIX), *argv, "--store", str(tmp_path),
               "--ceph-conf", str(tmp_path / "never-read.conf")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and says in err
    assert not list(tmp_path.iterdir())


def test_the_inventory_names_the_sites_prometheus(tmp_path):
    from xcbench.hosts.inventory import parse_inventory
    from xcbench.telemetry.devices import Context, prometheus_of
    tok = tmp_path / "tok"
    tok.write_text("inventory-token-1\n")
    hosts = {"g1": {"roles": ["gateway"], "transport": "local", "address": "127.0.0.1"}}
    inv = parse_inventory({"hosts": hosts, "prometheus": {"url": "https://prom:9090/",
                                                          "auth": f"bearer:{tok}"}}, "inv.yaml")
    assert inv.prometheus == {"url": "https://prom:9090", "auth": ("bearer", "inventory-token-1")}
    ctx = Context(cell=None, target=None, gateway=None, listener=None, cluster=None, hosts=inv)
    assert prometheus_of(ctx)["url"] == "https://prom:9090"
    flag = Context(cell=None, target=None, gateway=None, listener=None, cluster=None, hosts=inv,
                   prometheus={"url": "http://other:9090", "auth": None})
    assert prometheus_of(flag)["url"] == "http://other:9090"  # the command line wins
    for bad, says in (({"url": "prom"}, "prometheus: url"), ({"url": "http://p", "x": 1}, "prometheus: must be"),
                      ({"url": "https://p", "auth": "basic:/nonexistent"}, "prometheus: auth")):
        with pytest.raises(XcbError, match=f"inv.yaml: {says}"):
            parse_inventory({"hosts": hosts, "prometheus": bad}, "inv.yaml")
