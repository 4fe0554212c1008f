"""Attribution rules on constructed data where the answer is known."""

from __future__ import annotations

import json
import math

import pytest

from tests.support.evidence import _ev, _one_sentence
from tests.support.synthrun import GIB, MIB, SynthCell, make_run, mixed_cells
from xcbench.analysis.verdicts.attribution import NEAR, VERDICTS, attribute, decide, write_verdicts
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.store.rundir import RunDir
from xcbench.store.tables import VERDICT


@pytest.mark.parametrize("ev, verdict, quoted", [
    (_ev(network_bytes_per_s=1.05 * GIB, gateway_ceiling=1.0 * GIB), "network", ["8.59 Gb/s", "95 %"]),
    (_ev(rate=0.12 * GIB, pool="xcb-rep1", pool_write_ops=2000, fio_iops=2200, fio_iops_job="rand-write-64K",
         fio_iops_bs=64 * 1024, fio_bw=0.13 * GIB), "storage-iops", ["2,000 write op/s", "91 %", "2,200 IOPS"]),
    # the same op/s of 64 KiB against a 4 KiB job's IOPS: not the same IO, not compared
    (_ev(rate=0.12 * GIB, pool="xcb-rep1", pool_write_ops=2000, fio_iops=2200, fio_iops_job="rand-write-4K",
         fio_iops_bs=4096, fio_bw=0.13 * GIB), "storage-bandwidth", ["92 % of the fio write ceiling"]),
    (_ev(gateway_ceiling=1.02 * GIB, fio_bw=6 * GIB), "gateway", ["98 % of the tmpfs-gateway ceiling"]),
    (_ev(rate=0.5 * GIB, gateway_ceiling=2 * GIB, cpu=0.95, gateway_cores=7.6), "gateway",
     ["gateway CPU 7.6 of 8 cores (95 %)"]),
    (_ev(rate=0.6 * GIB, gateway_ceiling=1 * GIB, fio_bw=1.5 * GIB, ec_ratio=0.6, rep_pool="rep3",
         rep_rate=1.0 * GIB, raw_per_logical=1.52, raw_expected=1.5), "ec-overhead",
     ["60 % of the same layout on rep3", "raw/logical 1.52 (expected 1.5)"]),
    (_ev(rate=0.39 * GIB, gateway_ceiling=1 * GIB, fio_bw=0.4 * GIB), "storage-bandwidth",
     ["98 % of the fio write ceiling", "3.44 Gb/s"]),  # 0.4 GiB/s in the one unit
    (_ev(rate=0.1 * GIB, gateway_ceiling=1 * GIB, fio_bw=5 * GIB, starved_frac=0.5), "client",
     ["50 % of the seconds"]),
    (_ev(rate=0.2 * GIB, best_higher_level=8, best_higher_rate=0.8 * GIB, concurrency=2), "concurrency",
     ["6.87 Gb/s at 8"]),  # 0.8 GiB/s
    (_ev(rate=0.2 * GIB, gateway_ceiling=1 * GIB, fio_bw=5 * GIB, host_busy=0.2), "inconclusive",
     ["gateway 20 %", "fio bandwidth 4 %", "host CPU 20 % busy"]),
    (_ev(rate=0.2 * GIB, network_bytes_per_s=math.nan), "inconclusive",
     ["not comparable", "not measured: tmpfs-gateway ceiling at this level, fio probe, iperf3 baseline"]),
])
def test_each_rule_on_constructed_figures(ev, verdict, quoted):
    got, reason = decide(ev)
    assert got == verdict, reason
    for q in quoted:
        assert q in reason, reason
    assert _one_sentence(reason), reason
    assert ev["thresholds"]["near"] == NEAR


def test_the_nearer_ceiling_wins_between_gateway_and_storage():
    assert decide(_ev(rate=0.9 * GIB, gateway_ceiling=1.0 * GIB, fio_bw=0.95 * GIB))[0] == "storage-bandwidth"
    assert decide(_ev(rate=0.9 * GIB, gateway_ceiling=0.92 * GIB, fio_bw=1.0 * GIB))[0] == "gateway"


def test_a_probe_the_chain_beats_is_no_ceiling():
    ev = _ev(rate=0.27 * GIB, fio_bw=0.11 * GIB)  # 240 %: a direct-I/O probe, buffered gateway
    verdict, reason = decide(ev)
    assert verdict != "storage-bandwidth"
    assert "no ceiling of this path" in reason and "fio bandwidth (245 %)" in reason
    assert ev["not_ceilings"] == ["storage-bandwidth"]


def test_ec_overhead_only_when_the_gateway_is_not_the_limit():
    ev = _ev(rate=0.6 * GIB, gateway_ceiling=0.62 * GIB, ec_ratio=0.6, rep_pool="rep1", rep_rate=1 * GIB)
    assert decide(ev)[0] == "gateway"
    ev = _ev(rate=0.9 * GIB, gateway_ceiling=2 * GIB, fio_bw=0.95 * GIB, ec_ratio=0.9, rep_pool="rep1",
             rep_rate=1 * GIB)
    assert decide(ev)[0] == "storage-bandwidth"  # EC costs only 10 %: not the story


def test_an_unsaturated_tmpfs_rate_is_no_gateway_ceiling():
    # chain == tmpfs at 2 transfers, but tmpfs itself went 4x faster at 8: both are concurrency-bound
    ev = _ev(rate=0.2 * GIB, concurrency=2, gateway_ceiling=0.2 * GIB, gateway_growth=4.0,
             best_higher_level=8, best_higher_rate=0.8 * GIB)
    assert decide(ev)[0] == "concurrency"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("mixed"), mixed_cells())


def test_mixed_run_every_cell_gets_its_known_verdict(mixed):
    path, truth = mixed
    rows = attribute(RunDir.open(path))
    assert rows and all(tuple(r) == VERDICT for r in rows)
    top = {}
    for r in rows:
        if r["cell_id"] not in top or r["concurrency"] > top[r["cell_id"]]["concurrency"]:
            top[r["cell_id"]] = r
    assert {c: r["verdict"] for c, r in top.items()} == truth
    # host-cpu: test_roles_*; the storage hosts' verdicts: test_attribution_storage_hosts;
    # concurrency on a synthetic run: test_growth_noise
    assert set(truth.values()) == set(VERDICTS) - {"network", "host-cpu", "storage-network",
                                                   "storage-disk", "storage-host-cpu", "concurrency"}
    for r in rows:
        assert r["verdict"] in VERDICTS and _one_sentence(r["reason"]), r["reason"]
        ev = json.loads(r["evidence"])
        assert ev["rate"] > 0 and ev["sources"]["rate"]["table"] == "timeline"
        assert ev["thresholds"] == {"near": 0.85, "starved": 0.25, "scaling": 1.25, "scaling_confidence": 0.95}
        assert ev["roles"] == {} and ev["roles_note"].startswith("no role telemetry")  # an older run


def test_mixed_run_evidence_quotes_the_measured_figures(mixed):
    path, truth = mixed
    rows = {(r["cell_id"], r["concurrency"]): r for r in attribute(RunDir.open(path))}
    ec = next(c for c, v in truth.items() if v == "ec-overhead")
    ev = json.loads(rows[(ec, 8)]["evidence"])
    assert ev["raw_per_logical"] == pytest.approx(1.52, rel=1e-3) and ev["raw_expected"] == 1.5
    # compared with the size-3 pool of the same layout (a site's replicated pool), not rep1
    assert 0.5 < ev["ec_ratio"] < 0.7 and ev["rep_pool"] == "rep3"
    iops = next(c for c, v in truth.items() if v == "storage-iops")
    ev = json.loads(rows[(iops, 8)]["evidence"])
    assert ev["pool"] == "xcb-rep1" and ev["fio_iops"] == 2200
    assert ev["pool_write_ops"] == pytest.approx(0.95 * 2200, rel=0.05)
    assert "pool.client_write_ops_per_s" in ev["sources"]["pool_write_ops"]["query"]


def test_network_bound_run(tmp_path):
    cells = [SynthCell("tmpfs", concurrency=(4, 8), gateway=4 * GIB, expect="network"),
             SynthCell("cephfs", (4 << 20, 1, 4 << 20), "rep3", concurrency=(4, 8), gateway=4 * GIB,
                       fio_bw=8 * GIB, fio_iops=50000, expect="network")]
    path, truth = make_run(tmp_path, cells, network=1.2 * GIB)
    rows = attribute(RunDir.open(path))
    got = {r["cell_id"]: r["verdict"] for r in rows if r["concurrency"] == 8}
    assert got == truth
    assert all("of the iperf3 baseline" in r["reason"] for r in rows if r["concurrency"] == 8)


def test_without_ceilings_the_verdict_is_inconclusive_and_says_why(tmp_path):
    path, _ = make_run(tmp_path, [SynthCell("cephfs", (4 << 20, 1, 4 << 20), "rep1", concurrency=(4,),
                                            fio_bw=None, fio_iops=None, per_stream=50 * MIB)], network=math.nan)
    (rows,) = attribute(RunDir.open(path))
    assert rows["verdict"] == "inconclusive"
    assert "not measured: tmpfs-gateway ceiling at this level, fio probe, iperf3 baseline" in rows["reason"]


def test_write_verdicts_stores_a_table_the_report_then_uses(mixed, tmp_path):
    import shutil
    path = tmp_path / "copy"
    shutil.copytree(mixed[0], path)
    run = RunDir.open(path)
    rows = write_verdicts(RunData(run))
    table = RunDir.open(path).table("verdicts")
    assert len(table) == len(rows) and list(table.columns) == list(VERDICT)


def test_fio_ceilings_from_real_client_server_output_count_the_all_row_once(tmp_path):
    """tests/data/fio: real fio 3.33 JSON+ (two loopback servers) parsed by xcbench.probe.fio."""
    from pathlib import Path

    from xcbench.analysis.verdicts.run_data import RunData
    from xcbench.probe import fio
    data = Path(__file__).parents[2] / "data" / "fio"
    run = RunDir.create(tmp_path, name="fio", fingerprint=False)
    run.append("probes", fio.parse(fio.load_file(data / "clientserver.json"), cell_id="cs",
                                   jobfile=(data / "clientserver.h0.fio").read_text()))
    run.append("probes", fio.parse(fio.load_file(data / "rados.json"), cell_id="rados",
                                   jobfile=(data / "rados.fio").read_text()))
    run.finalize()
    rd = RunData(run.path)
    pc = rd.probe_ceilings
    assert pc.loc["cs", "write_iops"] == pytest.approx(852699.150425)  # the 'all' row, not 2x
    assert pc.loc["cs", "write_bw"] == 7565621784
    assert pc.loc["rados", "write_iops"] == pytest.approx(414.454277) and pc.loc["rados", "write_iops_job"] == "randwrite"
    assert pc.loc["rados", "write_bw"] == 128746022  # the read job is not a write ceiling
    jobs = rd.probe_jobs.set_index(["cell_id", "job"])
    assert jobs.loc[("cs", "write"), "hosts"] == 2 and jobs.loc[("rados", "read"), "hosts"] == 1
    assert pc.loc["cs", "iops_source"]["query"].endswith("& host == 'all'")
