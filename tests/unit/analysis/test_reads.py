"""Reads in the analysis: per-direction points, read ceilings, EC read amplification, the
network's -R direction, and the report's side-by-side section, on constructed runs."""

from __future__ import annotations

import json
import math

import pytest

from tests.support.readrun import make_read_run
from tests.support.synthrun import GIB, MIB, SynthCell
from xcbench.analysis.report.document import render_report
from xcbench.analysis.verdicts.attribution import attribute, decide
from xcbench.analysis.verdicts.run_data import RunData

M4 = 4 << 20


def _ev(**kw):
    ev = {"rate": 1.0 * GIB, "concurrency": 8, "mode": "push", "cores": 8.0, "gateway_cores": math.nan,
          "cpu": math.nan, "host_busy": math.nan, "network_bytes_per_s": 10 * GIB, "starved_frac": 0.0,
          "direction": "read"}
    ev.update(kw)
    return ev


@pytest.mark.parametrize("ev, verdict, quoted", [
    (_ev(rate=0.39 * GIB, gateway_ceiling=1 * GIB, fio_bw=0.4 * GIB), "storage-bandwidth",
     ["98 % of the fio read ceiling", "reads"]),
    (_ev(rate=0.12 * GIB, pool="xcb-ec2-1", pool_read_ops=1900, pool_write_ops=10, fio_iops=2000,
         fio_iops_job="randread", fio_iops_bs=64 << 10, fio_bw=0.5 * GIB), "storage-iops",
     ["1,900 read op/s", "95 %"]),
    (_ev(rate=0.6 * GIB, gateway_ceiling=1 * GIB, fio_bw=1.5 * GIB, ec_ratio=0.6, rep_pool="rep3",
         rep_rate=1.0 * GIB, read_amplification=1.52, rep_read_amplification=1.01), "ec-overhead",
     ["60 % of the same layout on rep3", "the OSDs read 1.52x", "replicated twin 1.01x"]),
    (_ev(rate=0.6 * GIB, gateway_ceiling=1 * GIB, fio_bw=1.5 * GIB, ec_ratio=0.6, rep_pool="rep3",
         rep_rate=1.0 * GIB), "ec-overhead", ["OSD read amplification not measured"]),
])
def test_read_rules_quote_read_figures(ev, verdict, quoted):
    got, reason = decide(ev)
    assert got == verdict, reason
    for q in quoted:
        assert q in reason, reason
    assert "write" not in reason


def test_reads_the_osds_hardly_saw_are_called_cached():
    ev = _ev(rate=0.6 * GIB, gateway_ceiling=1 * GIB, fio_bw=1.5 * GIB, ec_ratio=0.6, rep_pool="rep3",
             rep_rate=1.0 * GIB, read_amplification=0.0001)
    assert "0.0001x (served from a cache above the OSDs)" in decide(ev)[1]


def test_a_read_point_uses_the_pool_read_ops_not_the_write_ops():
    ev = _ev(rate=0.12 * GIB, pool="p", pool_write_ops=1900, fio_iops=2000, fio_iops_job="randread")
    assert decide(ev)[0] != "storage-iops"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """0: tmpfs (write), 1: cephfs rep1 read cell whose READ probe is the limit (its write probe
    is fast), 2: the same layout on rep1 as a mixed cell, 3: EC 2+1 read cell (OSD reads 1.5x),
    4: a replicated twin on rep3 (1.0x, as cell 1); iperf3 write 40 Gb/s, read (-R) 8 Gb/s."""
    cells = [SynthCell("tmpfs", concurrency=(2, 8), repeats=1, files=24),
             SynthCell("cephfs", (M4, 1, M4), "rep1", fio_bw=800 * MIB, fio_iops=2200,
                       concurrency=(2, 8), repeats=1, files=24),
             SynthCell("cephfs", (M4, 2, 8 << 20), "rep1", fio_bw=6 * GIB, fio_iops=20000,
                       concurrency=(8,), repeats=1, files=24),
             SynthCell("cephfs", (M4, 1, M4), "ec2+1", fio_bw=1.5 * GIB, fio_iops=900, ec_factor=0.6,
                       concurrency=(8,), repeats=1, files=24),
             SynthCell("cephfs", (M4, 1, M4), "rep3", fio_bw=6 * GIB, fio_iops=20000,
                       concurrency=(8,), repeats=1, files=24)]
    path, ids = make_read_run(
        tmp_path_factory.mktemp("reads"), cells,
        directions={1: "read", 2: "mixed", 3: "read", 4: "read"},
        read_probe={1: (800 * MIB, 3000.0), 3: (4 * GIB, 900.0), 4: (8 * GIB, 20000.0)},
        write_probe={1: 8 * GIB}, osd_amp={1: 1.0, 3: 1.5, 4: 1.0}, network_read=8e9 / 8)
    return path, ids


def test_points_carry_their_direction_and_a_mixed_campaign_splits(run):
    path, ids = run
    rd = RunData(path)
    pts = rd.points
    assert set(pts.loc[pts["cell_id"] == ids[0], "direction"]) == {"write"}
    assert set(pts.loc[pts["cell_id"] == ids[1], "direction"]) == {"read"}
    w, r = rd.point(ids[2], 8, "write"), rd.point(ids[2], 8, "read")
    assert w and r and r["rate"] / (w["rate"] + r["rate"]) == pytest.approx(0.3, abs=0.01)
    assert w["windows"] == r["windows"]  # one campaign, one steady window for both directions
    assert "mixed campaign" in r["source"]["note"]


def test_a_read_point_is_held_against_the_read_probe(run):
    path, ids = run
    rows = {(r["cell_id"], r["concurrency"], r["direction"]): r for r in attribute(RunData(path))}
    v = rows[(ids[1], 8, "read")]
    ev = json.loads(v["evidence"])
    assert ev["direction"] == "read" and ev["fio_bw"] == pytest.approx(800 * MIB)
    assert ev["fio_iops_job"] == "randread"
    assert v["verdict"] == "storage-bandwidth" and "fio read ceiling" in v["reason"], v["reason"]
    assert ev["sources"]["fio_bw"]["query"].endswith('rw == "read"')


def test_reads_use_the_reverse_network_baseline(run):
    path, ids = run
    rows = {(r["cell_id"], r["concurrency"], r["direction"]): r for r in attribute(RunData(path))}
    read_ev = json.loads(rows[(ids[1], 8, "read")]["evidence"])
    write_ev = json.loads(rows[(ids[0], 8, "write")]["evidence"])
    assert read_ev["network_bytes_per_s"] == pytest.approx(1e9) and write_ev["network_bytes_per_s"] == pytest.approx(5e9)
    assert "direction == 'read'" in read_ev["sources"]["network"]["query"]


def test_ec_read_amplification_next_to_the_replicated_twin(run):
    path, ids = run
    rows = {(r["cell_id"], r["concurrency"], r["direction"]): r for r in attribute(RunData(path))}
    ev = json.loads(rows[(ids[3], 8, "read")]["evidence"])
    assert ev["read_amplification"] == pytest.approx(1.5, rel=0.02)
    assert ev["rep_read_amplification"] == pytest.approx(1.0, rel=0.02)
    # the twin is a replicated cell of the same layout (which size: analysis.verdicts.attribution)
    assert ev["read_shards_expected"] == 2 and ev["rep_cell"] in (ids[1], ids[4])
    # the mixed cell has no BlueStore counters: not measured, never a number
    mixed = json.loads(rows[(ids[2], 8, "read")]["evidence"])
    assert mixed["read_amplification"] is None


def test_report_shows_reads_and_writes_side_by_side(run, tmp_path):
    path, ids = run
    out = render_report([path], "md", tmp_path / "r.md")
    text = out.read_text()
    sec = text.split("## Reads and writes, side by side", 1)[1].split("\n## ", 1)[0]
    head = next(ln for ln in sec.splitlines() if ln.startswith("| cell |"))
    assert "write (Gb/s)" in head and "read (Gb/s)" in head and "read verdict" in head
    mixed_row = next(ln for ln in sec.splitlines() if ln.startswith("| cephfs su=4M sc=2"))
    cells = [c.strip() for c in mixed_row.split("|")]
    assert cells[4] != "–" and cells[5] != "–"  # both directions' rates in one row
    assert "### EC read amplification" in sec and "1.5x" in sec and "not measured" in sec
    assert "random 64K x 16" in mixed_row.replace("KiB", "K")
    assert "184" in sec and "XrdBlackhole" in sec  # RAL's published read figure
    html = render_report([path], "html", tmp_path / "r.html").read_text()
    assert "Reads and writes, side by side" in html and "EC read amplification" in html


def test_a_write_only_run_has_no_read_section(tmp_path):
    from tests.support.synthrun import make_run
    path, _ = make_run(tmp_path, [SynthCell("tmpfs", concurrency=(2,), repeats=1, files=8)])
    text = render_report([path], "md", tmp_path / "w.md").read_text()
    assert "Reads and writes" not in text
    assert all(r["direction"] == "write" for r in attribute(RunData(path)))


def test_the_cells_last_sample_closes_a_window_only_when_it_is_close_to_the_end():
    import numpy as np

    from xcbench.analysis.verdicts.amplification import TAIL, _span
    w = np.array([10.0, 11.0, 12.0, 13.0])
    assert _span(w, 10.5, 12.5) == (0, 3)
    assert _span(w, 10.5, 13.0 + TAIL / 2) == (0, 3)  # the sampler stopped with the cell
    assert _span(w, 10.5, 13.0 + 2 * TAIL) is None  # too far: not measured
    assert _span(w, 9.0, 12.5) is None  # nothing before the start
