"""Calibrated planning on run directories: a hand-built one with known numbers (arithmetic in the
comments), and a synthetic run from tests/support/synthrun.py (real store path, Parquet labels)."""

import json

import pytest

from xcbench.cli import main
from xcbench.plan.calibrate import Calibration, amplification_for, load_calibration, unfit
from xcbench.plan.planner import make_plan
from xcbench.plan.presets import RateTarget
from xcbench.plan.spec import (
    Assumptions,
    GatewaySpec,
    Protection,
    cluster_from_dict,
    example_path,
    load_cluster,
)
from xcbench.store.rundir import RunDir

MiB, GiB = 1 << 20, 1 << 30
TMPFS = {"backend": "tmpfs", "origins": 1, "mode": "push", "pool": None}
EC21 = {"backend": "rados", "origins": 1, "mode": "push", "pool": {"kind": "erasure", "size": 1, "k": 2, "m": 1}}


@pytest.fixture
def run_dir(tmp_path):
    run = RunDir.create(tmp_path, name="dev1")
    run.set_cell("T", label="tmpfs o1 push", settings=TMPFS)
    run.set_cell("E", label="rados ec2+1 o1 push", settings=EC21)
    camp = [("T", 1, 0, 300), ("T", 4, 0, 350), ("T", 4, 1, 370), ("T", 4, 2, 360), ("E", 4, 0, 200)]
    run.append("campaigns", [{"cell_id": c, "concurrency": n, "repeat": r, "mode": "push", "rate": v * MiB,
                              "finished": 8, "failed": 0} for c, n, r, v in camp])
    run.append("probes", [
        {"cell_id": "E", "job": "w4M", "host": "h1", "rw": "write", "bs": "4M", "iops": 60, "bw": 250e6},
        {"cell_id": "E", "job": "w4M", "host": "h2", "rw": "write", "bs": "4M", "iops": 35, "bw": 150e6},
        {"cell_id": "E", "job": "rw4K", "host": "h1", "rw": "randwrite", "bs": "4K", "iops": 530, "bw": 2e6},
        {"cell_id": "E", "job": "r4M", "host": "h1", "rw": "read", "bs": "4M", "iops": 200, "bw": 900e6},
        {"cell_id": "T", "job": "w4M", "host": "h1", "rw": "write", "bs": "4M", "iops": 1, "bw": 6e9},
    ])
    run.append("samples", [
        {"cell_id": "E", "wall": w, "mono": w, "sampler": "ceph", "metric": m, "value": v,
         "labels": {"pool": "xcb-ec2-1"}}
        for w, m, v in [(0, "pool.stored", 1e9), (0, "pool.bytes_used", 1.5e9),
                        (10, "pool.stored", 3e9), (10, "pool.bytes_used", 4.6e9)]])
    run.append("baseline", [{"kind": "iperf3", "wall": 0, "streams": 1, "seconds": 3,
                             "bits_per_second": 40e9, "retransmits": 0, "host": "127.0.0.1"}])
    # what capped each level: the tmpfs gateway at c=4 (its ceiling), more transfers at c=1
    run.append("verdicts", [{"cell_id": c, "concurrency": n, "verdict": v, "reason": "r", "evidence": "{}",
                             "direction": "write"} for c, n, v in
                            [("T", 1, "concurrency"), ("T", 4, "gateway"), ("E", 4, "storage-bandwidth")]])
    run.finalize()  # Parquet: labels become JSON text, as in real runs
    return run.path


def planned():
    return cluster_from_dict({
        "hosts": 10, "network": {"public": {"nics": 1, "speed": "100Gb/s"}},
        "drives": {"per_host": 10, "kind": "ssd", "size": "4TB", "iops": 10000, "bandwidth": "500MB/s"},
        "protection": "ec2+1", "write": {"object_size": "4M"}}, "planned.yaml")


def test_measurements_from_the_run(run_dir):
    cal = load_calibration([run_dir], num_osds=3)
    # pool grew 2e9 logical, 3.1e9 raw over the run: 1.55 (nominal 1.5)
    assert cal.amplification["ec2+1"]["measured"] == pytest.approx(1.55)
    # per-OSD raw write bandwidth: (250e6 + 150e6 summed over hosts) x 1.55 / 3 OSDs = 206.67e6
    osd = cal.osd["ec2+1"]
    assert osd["write_bw"]["value"] == pytest.approx(400e6 * 1.55 / 3)
    # shard write ops per OSD: 530 client ops x 3 shards / 3 OSDs = 530
    assert osd["write_iops"]["value"] == pytest.approx(530)
    assert osd["read_bw"]["value"] == pytest.approx(300e6)
    assert cal.pool_write["ec2+1"]["rate"] == pytest.approx(400e6)
    assert cal.baseline == pytest.approx(5e9)
    curve = {(c["cell_id"], c["concurrency"]): c for c in cal.curve}
    assert curve[("T", 4)]["rate"] == pytest.approx(360 * MiB)  # median of 350/370/360
    assert curve[("T", 4)]["repeats"] == 3


def test_calibrated_column_side_by_side(run_dir):
    cal = load_calibration([run_dir], num_osds=3)
    t = RateTarget("t", 10e9 / 8, 1.0, 4 * GiB)
    p = make_plan(t, planned(), GatewaySpec(), Assumptions(), cal)
    ds, cc = p["columns"]
    assert (ds["label"], cc["label"]) == ("datasheet", "calibrated")
    # datasheet: drive bandwidth 100 x 500e6 / 1.5 = 33.3e9 x 0.8 x 0.95 = 25.3e9 B/s binds
    assert ds["storage"]["binding"] == "drive bandwidth"
    assert ds["storage"]["usable"] == pytest.approx(100 * 500e6 / 1.5 * 0.76)
    # calibrated: 100 OSDs x 206.67e6 / 1.55 measured raw per byte = 13.33e9 B/s, measured: no derate
    assert cc["storage"]["binding"] == "drive bandwidth"
    assert cc["storage"]["usable"] == pytest.approx(100 * (400e6 * 1.55 / 3) / 1.55)
    # gateway: the tmpfs cell at concurrency 4 (median 360 MiB/s) is the measured per-gateway rate;
    # 10 Gb/s x 1.25 = 1.5625e9 / 377.5e6 = 4.14 -> 5, + 1 spare = 6 (datasheet: 35 Gb/s -> 1 + 1)
    assert cc["gateway"]["per_gateway"] == pytest.approx(360 * MiB)
    assert cc["values"]["gateways_needed"] == 6
    assert ds["values"]["gateways_needed"] == 2
    assert any("tmpfs-backed" in n for n in cc["gateway"]["notes"])
    assert all(r["gateways_calibrated"] >= r["gateways_datasheet"] for r in p["sweep"])
    json.dumps(p, allow_nan=False)


def test_efficiency_carried_over(run_dir):
    cal = load_calibration([run_dir], num_osds=3)
    dev, gw = load_cluster(example_path("devcluster"))
    from xcbench.plan.spec import load_gateway
    dev_gw = load_gateway(None, gw, dev.source)
    t = RateTarget("t", 10e9 / 8, 1.0, 4 * GiB)
    p = make_plan(t, planned(), GatewaySpec(), Assumptions(), cal, dev, dev_gw, carry_over=True)
    cc = p["columns"][1]
    # dev theoretical (ec2+1 writes): drives 3 x 1000 MB/s / 1.5 = 2e9 (network 5e9/2 = 2.5e9);
    # achieved 400e6 -> efficiency 0.2; planned theoretical 100 x 500e6 / 1.5 = 33.3e9 -> 6.67e9.
    assert cc["storage"]["usable"] == pytest.approx(100 * 500e6 / 1.5 * 0.2)
    assert any("storage efficiency 0.200" in n and "carried over" in n for n in cc["storage"]["notes"])
    # gateway: dev theoretical = min(40 Gb/s NIC = 5e9, CPU 2 cores / 1.5e-9 = 1.333e9) = 1.333e9;
    # measured 360 MiB/s -> 0.2831; planned theoretical 6.25e9 (2 x 25 Gb/s) -> 1.7695e9 B/s.
    eff = 360 * MiB / (2 / 1.5e-9)
    assert cc["gateway"]["per_gateway"] == pytest.approx(6.25e9 * eff)
    assert any("carried over" in n for n in cc["gateway"]["notes"])


def test_amplification_fallback_says_so():
    amp, note = amplification_for(Calibration(runs=[]), Protection("erasure", k=8, m=3))
    assert amp == pytest.approx(11 / 8) and "fell back" in note
    cal = Calibration(runs=[], amplification={"ec2+1": {"measured": 1.55, "nominal": 1.5, "pool": "xcb-ec2-1",
                                                        "how": "x"}})
    amp, note = amplification_for(cal, Protection("erasure", k=8, m=3))
    assert amp == pytest.approx(11 / 8 * 1.55 / 1.5) and "overhead" in note


def test_synthetic_run_and_cli(tmp_path, capsys):
    from tests.support.synthrun import make_run, mixed_cells
    path, _ = make_run(tmp_path, mixed_cells())
    cal = load_calibration([path], num_osds=3)
    assert cal.curve and cal.gateway_rate is None  # set when the gateway inputs are derived
    assert cal.amplification["ec2+1"]["measured"] == pytest.approx(1.52, rel=0.01)
    assert main(["plan", "--target", "hl-lhc-t1", "--force", "--calibrate", str(path), "--calibrate-osds", "3",
                 "--format", "json"]) == 0
    p = json.loads(capsys.readouterr().out)
    cc = p["columns"][1]
    assert cc["label"] == "calibrated" and cc["gateway"]["per_gateway"] > 0
    # the synthetic tmpfs gateway saturates at 1 GiB/s: the steady window sees it
    assert cc["gateway"]["per_gateway"] == pytest.approx(GiB, rel=0.1)
    out = tmp_path / "plan.md"
    assert main(["plan", "--target", "ska-aa4", "--force", "--calibrate", str(path), "--calibrate-osds", "3",
                 "--calibrate-spec", "devcluster", "--format", "md", "--out", str(out)]) == 0
    md = out.read_text()
    assert "## Calibration" in md and "carried over" in md and "plan_files/fig1.png" in md
    assert (tmp_path / "plan_files" / "fig1.png").stat().st_size > 1000


def test_not_a_run(tmp_path, capsys):
    assert main(["plan", "--rate", "100Gb/s", "--calibrate", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_fio_aggregate_row_is_not_added_to_the_hosts(tmp_path):
    run = RunDir.create(tmp_path, name="cs", fingerprint=False)
    run.set_cell("E", label="rados ec2+1 o1 push", settings=EC21)
    run.append("probes", [  # a client/server probe: two hosts and fio's aggregate of them
        {"cell_id": "E", "job": "w4M", "host": h, "rw": "write", "bs": "4M", "iops": i, "bw": b}
        for h, i, b in [("h1", 60, 250e6), ("h2", 35, 150e6), ("all", 95, 400e6)]])
    run.finalize()
    cal = load_calibration([run.path], num_osds=3)
    assert cal.pool_write["ec2+1"]["rate"] == pytest.approx(400e6)  # not 800e6


def test_read_and_mixed_campaigns_do_not_calibrate_the_ingest_curve(tmp_path):
    run = RunDir.create(tmp_path, name="dev2")
    run.set_cell("T", label="tmpfs o1 push", settings=TMPFS)
    run.append("campaigns", [
        {"cell_id": "T", "concurrency": 4, "repeat": 0, "mode": "push", "rate": 300 * MiB,
         "finished": 8, "failed": 0, "direction": "write"},
        {"cell_id": "T", "concurrency": 4, "repeat": 1, "mode": "push", "rate": 900 * MiB,
         "finished": 8, "failed": 0, "direction": "read"},
        {"cell_id": "T", "concurrency": 4, "repeat": 2, "mode": "push", "rate": 700 * MiB,
         "finished": 8, "failed": 0, "direction": "mixed"}])
    run.finalize()
    cal = load_calibration([run.path], num_osds=3)
    [point] = [c for c in cal.curve if c["cell_id"] == "T"]
    assert point["campaign_rate"] == pytest.approx(300 * MiB) and point["repeats"] == 1


def test_a_level_capped_by_anything_but_the_gateway_gives_no_per_gateway_rate(run_dir):
    run = RunDir.open(run_dir)
    import pandas as pd
    df = pd.read_parquet(run.path / "verdicts.parquet")
    df.loc[df["concurrency"] == 4, "verdict"] = "host-cpu"  # the box's CPU, not the gateway, capped it
    df.to_parquet(run.path / "verdicts.parquet", index=False)
    cal = load_calibration([run_dir], num_osds=3)
    t = RateTarget("t", 10e9 / 8, 1.0, 4 * GiB)
    cc = make_plan(t, planned(), GatewaySpec(), Assumptions(), cal)["columns"][1]
    assert cc["gateway"]["per_gateway"] == make_plan(t, planned(), GatewaySpec(), Assumptions(), None)[
        "columns"][0]["gateway"]["per_gateway"]  # the datasheet's
    assert any("no level capped by the gateway" in n for n in cc["gateway"]["notes"])


def _one_box_host_cpu(tmp_path):
    run = RunDir.create(tmp_path, name="box")
    run.set_cell("T", label="tmpfs o1 push", settings=TMPFS)
    run.append("campaigns", [{"cell_id": "T", "concurrency": n, "repeat": 0, "mode": "push", "rate": 3e8,
                              "finished": 8, "failed": 0} for n in (1, 4)])
    run.append("verdicts", [{"cell_id": "T", "concurrency": n, "verdict": "host-cpu", "reason": "r",
                             "evidence": "{}", "direction": "write"} for n in (1, 4)])
    run.finalize()
    return run.path


def test_a_run_unfit_for_sizing_is_refused_in_one_line_unless_forced(tmp_path, capsys):
    path = _one_box_host_cpu(tmp_path)
    assert main(["plan", "--target", "ska-aa4-mid", "--calibrate", str(path)]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and "not fit for sizing: 2 of 2 levels host-cpu" in err[0] and "--force" in err[0]
    assert cap.out == ""
    assert main(["plan", "--target", "ska-aa4-mid", "--force", "--calibrate", str(path)]) == 0
    cap = capsys.readouterr()  # the reason first, on stderr: stdout stays the plan (--format json)
    assert cap.err.splitlines()[0].startswith("plan: --force: not fit for sizing: 2 of 2 levels host-cpu")
    assert cap.out
    assert unfit(str(path)) and unfit(str(run_dir_fit(tmp_path))) is None


def run_dir_fit(tmp_path):
    run = RunDir.create(tmp_path, name="fit")
    run.set_cell("T", label="tmpfs o1 push", settings=TMPFS)
    run.append("verdicts", [{"cell_id": "T", "concurrency": 4, "verdict": "gateway", "reason": "r",
                             "evidence": "{}", "direction": "write"}])
    run.finalize()
    return run.path
