"""`xcbench confirm`: which experiment tests which verdict, the cell each arm replays, the text,
and bad input (the replays on the real chain: tests/integration/selftest/test_confirm.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from xcbench.analysis.verdicts.experiment import judge
from xcbench.analysis.verdicts.experiment_choice import WEIGHT, choose
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.cli import main
from xcbench.matrix.expand import _finish
from xcbench.selftest.confirm import replay_cell, text


def _roles(**limits) -> dict:
    return {"roles": {r: {"cpu": 0.1, "limit": v, "source": "cgroup v1 cpu.cfs_quota_us" if v < 2
                          else "host cores (2)"} for r, v in limits.items()}}


def _cell(backend="cephfs", **kw):
    return SimpleNamespace(backend=backend, cores=None, origins=1, **kw)


def test_a_gateway_is_relieved_by_twice_its_cores_or_one_more_origin():
    e = choose("gateway", {}, SimpleNamespace(backend="tmpfs", cores=0.15, origins=1), 4, 2.0, False)
    assert e["kind"] == "relieve" and e["changed"] == {"cell": {"cores": 0.3}}
    assert e["predicted"] == pytest.approx(2)
    why = choose("gateway", {}, SimpleNamespace(backend="tmpfs", cores=2.0, origins=1), 4, 2.0, False)["why"]
    assert "redirector" in why and "lookup" in why  # 1 -> 2 origins adds a redirector's wait a file
    e = choose("gateway", {}, SimpleNamespace(backend="tmpfs", cores=None, origins=2), 4, 2.0, False)
    assert e["changed"] == {"cell": {"origins": 3}} and e["predicted"] == pytest.approx(1.5)


@pytest.mark.parametrize("verdict", ["storage-bandwidth", "storage-iops"])
@pytest.mark.parametrize("embedded", [True, False])
def test_storage_is_taken_out_on_any_cluster(verdict, embedded):
    e = choose(verdict, {"rate": 100e6}, _cell(), 4, 2.0, embedded, ceiling=300e6)
    assert e["kind"] == "relieve" and e["changed"] == {"tmpfs": True} and e["control"] == {}
    assert e["predicted"] == pytest.approx(3.0)
    assert choose(verdict, {"rate": 100e6}, _cell(), 4, 2.0, embedded)["predicted"] is None
    assert "no storage" in choose(verdict, {}, _cell("tmpfs"), 4, 2.0, embedded)["why"]


def test_concurrency_doubles_the_transfers_in_flight():
    e = choose("concurrency", {}, _cell(), 4, 2.0, False)
    assert e["changed"] == {"level": 8} and e["predicted"] == 2.0


def test_a_client_quota_is_doubled_and_a_driver_with_every_core_says_why():
    e = choose("client", _roles(client=0.3), _cell("tmpfs"), 4, 2.0, False)
    assert e["control"] == {"cap": ("client", 0.3)} and e["changed"] == {"cap": ("client", 0.6)}
    why = choose("client", _roles(client=2.0), _cell("tmpfs"), 4, 2.0, False)["why"]
    assert "--hosts" in why and "\n" not in why


def _host(busy: float, cores: float = 2.0, **cpu) -> dict:
    return {"host_busy": busy, "cores": cores, "roles": {r: {"cpu": v} for r, v in cpu.items()}}


def test_host_cpu_is_relieved_by_the_cpu_other_processes_held():
    # the roles used 1.1 of the 1.9 busy cores: others held 0.8, the roles' group takes it
    e = choose("host-cpu", _host(0.95, gateway=0.3, client=0.2, osd=0.6, probe=1.0), _cell("tmpfs"), 4, 2.0, True)
    assert e["kind"] == "relieve" and e["changed"] == {"weight": ("gateway+client+mount+osd+mds+mon+mgr", WEIGHT)}
    assert e["predicted"] == pytest.approx(1.9 / 1.1) and set(e["rivals"].values()) == {1.0}
    assert "0.80 cores other processes held" in e["what"]


def test_host_cpu_on_a_box_whose_only_load_is_the_roles_is_not_testable_here():
    why = choose("host-cpu", _host(1.0, gateway=1.2, client=0.5, osd=0.3), _cell("tmpfs"), 4, 2.0, True)["why"]
    assert why.startswith("no CPU to give") and "\n" not in why
    assert "no CPU to give" in choose("host-cpu", {}, _cell("tmpfs"), 4, 2.0, True)["why"]


def test_the_quota_below_the_roles_use_checks_a_proportion_not_the_name():
    # the self-test's every-role quota: x0.5 predicted under host-cpu and under every rival
    r = judge("tighten", 0.5, [((100e6, 0.01), (45e6, 0.01)), ((100e6, 0.01), (47e6, 0.01))],
              rivals={"gateway": 0.5, "storage-bandwidth": 0.5})
    assert r["outcome"] == "proportion checked"


def test_storage_out_confirms_the_storage_side_and_names_the_kind_from_telemetry():
    ev = {"rate": 100e6, "utilisation": {"storage-iops": 0.9, "storage-bandwidth": 0.3}}
    e = choose("storage-bandwidth", ev, _cell(), 4, 2.0, True, ceiling=300e6)
    assert e["confirms"] == "storage side" and e["storage_kind"] == "storage-iops"
    assert e["rivals"]["gateway"] == 1.0 and "host-cpu" not in e["rivals"]
    # one box, host full: taking the storage out frees the OSDs' CPU: host-cpu predicts a rise
    ev.update(_host(0.95, gateway=0.4, client=0.3, osd=0.9, mount=0.2))
    e = choose("storage-iops", ev, _cell(), 4, 2.0, True, ceiling=300e6)
    assert e["rivals"]["host-cpu"] == pytest.approx(1.8 / 0.7)


def test_ec_overhead_replays_the_twin_as_its_control():
    ev = {"rep_cell": "r1", "ec_ratio": 0.7, "raw_per_logical": 1.5, "rep_raw_per_logical": 1.0}
    e = choose("ec-overhead", ev, _cell(), 4, 2.0, True)
    assert e["kind"] == "tighten" and e["control"] == {"twin": "r1"}
    assert e["predicted"] == pytest.approx(1 / 1.5) and e["need"] == 0.85  # raw bytes, the rule's line
    e = choose("ec-overhead", {**ev, "rep_raw_per_logical": 3.0}, _cell(), 4, 2.0, True)
    assert e["predicted"] is None and "x2.00" in e["what"]  # rep3 writes more raw bytes: no cost predicted
    assert "twin" in choose("ec-overhead", {"ec_ratio": 0.7}, _cell(), 4, 2.0, True)["why"]


@pytest.mark.parametrize("verdict", ["network", "storage-network", "inconclusive"])
def test_verdicts_no_change_here_can_test_say_why_in_one_line(verdict):
    why = choose(verdict, {}, _cell(), 4, 2.0, True)["why"]
    assert why and "\n" not in why


def test_network_relieves_the_busiest_client_link_xcbench_made_to_twice_its_rate():
    ev = {"links": {"nc1": {"use": 0.95}, "nc2": {"use": 0.40}, "nc3": {"use": None}}}
    e = choose("network", ev, _cell("tmpfs"), 4, 2.0, False, links={"nc1": 80e6, "nc2": 1e9})
    assert e["kind"] == "relieve" and e["predicted"] == 2.0
    assert e["rivals"] == {"a link with headroom": 1.0}
    assert e["changed"] == {"link": ("nc1", 160e6)} and e["control"] == {}
    assert "nc1" in e["what"] and "80 -> 160 Mb/s" in e["what"]
    # halving could not tell: a link at 95 % use, not binding, falls to x0.53 against x0.5
    r = judge("tighten", 0.5, [((100e6, 0.01), (51e6, 0.01)), ((100e6, 0.01), (51e6, 0.01))],
              rivals={"a link with headroom": 0.5 / 0.95})
    assert r["outcome"] != "confirmed"
    # the link is not one xcbench made and holds up now (the site's, or its hosts went down)
    why = choose("network", ev, _cell("tmpfs"), 4, 2.0, False, links={"nc2": 1e9})["why"]
    assert "nc1" in why and "hosts up" in why and "\n" not in why


def test_the_take_out_arm_replays_the_same_files_into_tmpfs():
    c = _finish(Cell(id="x", label="x", backend="cephfs", layout=Layout(4 << 20, 1, 4 << 20),
                     pool=PoolSpec.parse("rep1"), file_size=64 << 20, files=16, concurrency=(1, 4)))
    t, lv = replay_cell({c.id: c}, c, 4, {"tmpfs": True})
    assert (t.backend, t.layout, t.pool, lv, t.concurrency) == ("tmpfs", None, None, 4, (4,))
    assert (t.file_size, t.files) == (c.file_size, c.files) and t.tmpfs_size >= 2 * 16 * (64 << 20)
    same, _ = replay_cell({c.id: c}, c, 4, {})
    assert same.backend == "cephfs" and same.concurrency == (4,)
    more, lv = replay_cell({c.id: c}, c, 4, {"level": 8})
    assert lv == 8 and more.concurrency == (8,)


def test_text_gives_the_predicted_and_measured_ratio_and_the_prediction_error():
    res = judge("relieve", 2.0, [((50e6, 0.02), (95e6, 0.03)), ((52e6, 0.02), (97e6, 0.02))])
    x = {"cell_id": "abc", "concurrency": 4, "direction": "write", "verdict": "gateway",
         "experiment": "relieve", "what": "cores 0.15 -> 0.3", **res,
         "runs": [{"arm": "control", "bytes_per_s": 50e6}, {"arm": "changed", "bytes_per_s": 95e6}]}
    t = text({"run": "/r", "confirmations": [x], "ok": True}, {"abc": "tmpfs 2G o1 push 0.15c"})
    assert "tmpfs 2G o1 push 0.15c c=4 write: gateway: confirmed" in t
    assert "predicted x2.00, measured x1.88 (prediction error -6 %), asked x1.20" in t
    assert "co 50.0 MB/s, ch 95.0 MB/s" in t and "1 confirmed" in t


def test_bad_input_exits_2_before_anything_starts(tmp_path, capsys):
    assert main(["confirm", str(tmp_path / "nope")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    run = tmp_path / "r"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"version": 1, "run_id": "r", "status": "complete",
                                                   "cells": {}}))
    assert main(["confirm", str(run), "--state-dir", str(tmp_path / "c")]) == 2
    assert "no verdicts" in capsys.readouterr().err and not (tmp_path / "c").exists()
    assert main(["confirm", str(run), "--pairs", "1"]) == 2
    assert "at least 2" in capsys.readouterr().err


def _one_verdict_run(tmp_path, verdict: str, raw: dict, **manifest):
    """A synthetic run of one cell with one ``verdict`` at c=2, its matrix file gone and
    ``raw`` the manifest's copy (``manifest``: more of the manifest's keys); (path, manifest)."""
    import pandas as pd

    from tests.support.synthrun import make_run, mixed_cells
    path, _ = make_run(tmp_path / "r", mixed_cells()[:1])
    m = json.loads((path / "manifest.json").read_text())
    pd.DataFrame([{"cell_id": next(iter(m["cells"])), "concurrency": 2, "direction": "write",
                   "verdict": verdict, "reason": "x", "evidence": "{}"}]).to_parquet(path / "verdicts.parquet")
    m["matrix"] = {"name": raw["name"], "path": str(tmp_path / "gone.yaml"), "raw": raw}
    m.update(manifest)
    (path / "manifest.json").write_text(json.dumps(m))
    return path, m


def test_a_run_whose_matrix_file_moved_is_replayed_from_the_manifests_copy(tmp_path):
    from xcbench.selftest.confirm import preflight
    raw = {"name": "moved", "defaults": {"concurrency": [2]}, "backends": {"tmpfs": {"size": ["1G"]}}}
    path, m = _one_verdict_run(tmp_path, "gateway", raw)
    _, _, kept = preflight(path)
    assert kept == str(path / "confirm" / "matrix.yaml") and "tmpfs" in open(kept).read()
    m["matrix"].pop("raw")
    (path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(Exception, match="gone and the manifest holds no copy"):
        preflight(path)


def _run_with_fts_credential(tmp_path, url: str):
    """A run whose matrix sends an FTS token to ``url`` (its file and the manifest's copy)."""
    token = tmp_path / "token"
    token.write_text("a-token-that-must-stay-here\n")
    raw = {"name": "fts", "defaults": {"concurrency": [2], "modes": ["tpc-http"], "campaign": {
        "engine": "fts3", "fts": {"endpoint": url, "token_file": str(token)}}},
        "backends": {"tmpfs": {"size": ["64M"]}}}
    path, m = _one_verdict_run(tmp_path, "gateway", raw)
    return path, m, raw


def test_a_replay_sends_no_fts_credential_the_operator_did_not_name(tmp_path, capsys):
    """confirm replays the run's matrix: its FTS endpoint gets the credential only when named
    with --fts-endpoint, as for `xcbench run`; else one line, exit 2, nothing started or sent."""
    import yaml

    from tests.support.peers import Listener
    from xcbench.selftest.confirm import preflight
    with Listener() as ear:
        url = f"http://127.0.0.1:{ear.port}"
        path, m, raw = _run_with_fts_credential(tmp_path, url)
        argv = ["confirm", str(path), "--state-dir", str(tmp_path / "c")]
        codes = [main(argv), main([*argv, "--fts-endpoint", f"http://127.0.0.1:{ear.port + 1}"])]
        err = capsys.readouterr().err.strip().splitlines()
        assert codes == [2, 2] and len(err) == 2, err
        for line in err:
            assert f"campaign.fts.endpoint: {url} would receive the FTS credential" in line
            assert f"--fts-endpoint {url}" in line
        assert not (tmp_path / "c").exists() and not (path / "confirm").exists()
        # the matrix file itself (not the manifest's copy) is checked the same way
        f = tmp_path / "m.yaml"
        f.write_text(yaml.safe_dump(raw))
        m["matrix"]["path"] = str(f)
        (path / "manifest.json").write_text(json.dumps(m))
        with pytest.raises(Exception, match=f"{f}: cell tmpfs 64M o1 tpc-http \\(\\w+\\): campaign.fts.endpoint"):
            preflight(path)
        assert preflight(path, fts_endpoints=(url,))[2] == str(f)  # named: the replay may go
    assert ear.connections == 0


def test_a_run_from_client_hosts_is_replayed_from_them_or_refused_in_one_line(tmp_path, capsys):
    """A run whose campaigns came from client hosts is replayed from the same hosts: its
    inventory gone (and no --hosts, no hosts: in the matrix) is one line, exit 2, nothing started."""
    raw = {"name": "h", "defaults": {"concurrency": [2]}, "backends": {"tmpfs": {"size": ["64M"]}}}
    gone = tmp_path / "hosts.yaml"
    path, _ = _one_verdict_run(tmp_path, "network", raw,
                               hosts={"source": str(gone), "hosts": {"nc1": {"roles": ["client"]}}})
    argv = ["confirm", str(path), "--state-dir", str(tmp_path / "c")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{str(gone)!r}, which is gone: give it with --hosts" in err[0], err
    assert main([*argv, "--hosts", str(gone)]) == 2  # the file named does not exist: it says so
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(gone) in err[0], err
    assert not (tmp_path / "c").exists()


def test_the_arms_say_when_a_level_was_not_steady_or_the_relieved_limit_did_not_bind():
    """The integration test's inconclusive runs (a busy box): two of three changed arms hit the
    level's longest before they were steady, and their gateway used 0.21-0.28 of its new 0.3
    cores (others' load took the host's CPU): both are said with the outcome."""
    from xcbench.selftest.confirm import measured_as_asked
    exp = {"kind": "relieve", "changed": {"cell": {"cores": 0.3}}}

    def run(arm, pair, cpu, limit, steady=True):
        return {"arm": arm, "pair": pair, "steady": steady, "role": {"cpu": cpu, "limit": limit}}
    bound = [run("control", 0, 0.15, 0.15), run("changed", 0, 0.29, 0.3),
             run("changed", 1, 0.30, 0.3), run("control", 1, 0.15, 0.15)]
    assert measured_as_asked(exp, bound) == ""
    cut = [run("control", 0, 0.15, 0.15), run("changed", 0, 0.283, 0.3),
           run("changed", 1, 0.245, 0.3, steady=False), run("control", 1, 0.15, 0.15),
           run("control", 2, 0.15, 0.15), run("changed", 2, 0.212, 0.3, steady=False)]
    said = measured_as_asked(exp, cut)
    assert "not steady: changed 1, changed 2" in said and "did not bind in 2 of 3" in said and "82 %" in said
    held = [{**r, "role": {**r["role"], "throttled": 0.9 if r["arm"] == "changed" else 1.0}} for r in cut]
    assert "did not bind" not in measured_as_asked(exp, held)  # throttled in most periods: it bound
    # a driver waiting on a full host's run queue is "saturated" by the roles' rule, but its
    # quota, 0.3, throttled 4 % of the periods, did not bind (confirm-client on a busy box)
    busy = [{**r, "role": {"cpu": 0.13, "limit": 0.3, "throttled": 0.04, "saturated": True}}
            if r["arm"] == "changed" else r for r in cut]
    assert "did not bind in 3 of 3" in measured_as_asked(exp, busy)
    assert measured_as_asked({"kind": "relieve", "changed": {"level": 8}}, cut) == "not steady: changed 1, changed 2"


LIMITS = {"write_bytes_per_s": {"group": "/sys/fs/cgroup/blkio/xcb-t-osd", "file": "blkio.throttle.write_bps_device",
                        "dev": "254:0", "value": 20_000_000},
          "cpu": {"group": "/sys/fs/cgroup/cpu/xcb-t-osd", "file": "cpu.cfs_quota_us", "value": 20000,
                  "cores": 0.2}}


def test_on_a_cluster_xcbench_started_each_storage_sub_kind_lifts_its_own_limit():
    e = choose("storage-bandwidth", {"rate": 10e6}, _cell("rados"), 4, 2.0, True, ceiling=300e6, limits=LIMITS)
    assert e["experiment"] == "twice the device's write bytes" and e["kind"] == "relieve"
    assert e["changed"] == {"lift": (LIMITS["write_bytes_per_s"], 40_000_000)} and e["control"] == {}
    assert e["predicted"] == pytest.approx(2.0) and e["confirms"] == "storage-bandwidth"
    assert e["rivals"]["storage-iops"] == 1.0 and e["rivals"]["storage-host-cpu"] == 1.0
    e = choose("storage-bandwidth", {"rate": 200e6}, _cell("rados"), 4, 2.0, True, ceiling=300e6, limits=LIMITS)
    assert e["predicted"] == pytest.approx(1.5)  # at most the run's gateway ceiling
    e = choose("storage-host-cpu", {"rate": 10e6}, _cell("rados"), 4, 2.0, True, limits=LIMITS)
    assert e["experiment"] == "twice the OSDs' cores" and e["changed"]["lift"][1] == 40000
    e = choose("storage-host-cpu", {"rate": 10e6}, _cell("rados"), 4, 0.3, True, limits=LIMITS)
    assert e["predicted"] == pytest.approx(1.5)  # a quota of 0.2 of a 0.3-core host: at most 0.3
    e = choose("storage-iops", {"rate": 10e6}, _cell("rados"), 4, 2.0, True, limits=LIMITS)
    assert e["experiment"] == "storage out" and e["confirms"] == "storage side"  # none of its own kind
    assert "write-bytes throttle" in e["what"] and "CPU quota" in e["what"] and "storage-iops" in e["what"]


def test_elsewhere_the_storage_taken_out_confirms_the_storage_side_only():
    for embedded, limits in ((False, LIMITS), (True, {}), (True, None)):
        e = choose("storage-iops", {"rate": 10e6}, _cell("rados"), 4, 2.0, embedded, limits=limits)
        assert e["experiment"] == "storage out" and e["confirms"] == "storage side", embedded
    e = choose("storage-bandwidth", {"rate": 10e6}, _cell("rados"), 4, 2.0, True, limits=LIMITS,
               experiment="storage out")
    assert e["experiment"] == "storage out"


def test_an_experiment_asked_for_is_used_where_it_tests_the_verdict():
    e = choose("gateway", {}, SimpleNamespace(backend="tmpfs", cores=0.15, origins=2), 4, 2.0, False,
               experiment="one more origin")
    assert e["experiment"] == "one more origin" and e["changed"] == {"cell": {"origins": 3}}
    why = choose("gateway", {}, _cell(), 4, 2.0, False, experiment="twice the transfers")["why"]
    assert "does not test gateway" in why
