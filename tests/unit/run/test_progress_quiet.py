"""The progress view says each thing once: the run's estimated length at its start (every phase:
time-based levels' duration bounds, the fio probes' jobs and level probes, the iperf3 baseline,
each cell's set-up and the report), the iperf3 and fio figures when they are measured; piped,
each line with the time of day, the time left at each cell and level, news during a level."""

from __future__ import annotations

import io
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from xcbench.matrix import load_matrix
from xcbench.run import estimate
from xcbench.run.figures import baseline_line, probe_line, storage_range
from xcbench.run.progress import MatrixView

QUICK = Path(__file__).resolve().parents[3] / "layouts" / "quick.yaml"


def test_the_demo_matrix_is_estimated_from_every_phase():
    cells = load_matrix(QUICK).cells
    e = estimate.seconds(cells, probes=False, baseline=None, report=False)
    # 6 cells x 2 levels x 1 repeat, each level 20-40 s (quick.yaml's campaign.duration), and
    # each cell's set-up
    assert e.levels == 12 and e.untimed == 0
    assert e.phases["levels"] == (12 * 20, 12 * 30, 12 * 40)
    assert e.phases["set-up"][0] == sum(estimate.SETUP_S[c.backend] for c in cells)
    full = estimate.seconds(cells)
    # the level probes: CephFS cells probe the mount and the pool at each level, RADOS cells the pool
    jobs = sum(estimate.LEVEL_TARGETS.get(c.backend, 0) * len(c.concurrency) for c in cells)
    assert jobs == 3 * 2 * 2 + 2 * 2 * 1
    lo, _, hi = full.phases["fio probes"]
    assert hi - lo == pytest.approx(jobs * (estimate.LEVEL_RUNTIME - estimate.level_job_lo(cells[0])))
    assert full.phases["iperf3"][0] == 8 * 2 * (2 + estimate.POINT_OVERHEAD_S)  # 1-32 streams, both ways
    assert full.lo < full.mid < full.hi and "report" in full.phases
    line = estimate.line(cells)
    assert line.startswith(f"estimate: ~{estimate.dur(full.mid)} (")
    for phase in ("12 levels 4–8 min", "fio probes", "iperf3 36 s", "set-up", "report"):
        assert phase in line, line
    assert estimate.seconds(cells, repeats=2).phases["levels"][2] == 2 * e.phases["levels"][2]


def test_file_count_levels_are_counted_not_timed(tmp_path):
    m = tmp_path / "m.yaml"
    m.write_text("defaults: {concurrency: [1, 2], files: 4, file_size: 1M}\n"
                 "backends: {tmpfs: {size: [64M]}}\n")
    line = estimate.line(load_matrix(m).cells, probes=False, baseline=None)
    assert line.endswith("; 2 file-count levels not timed") and "levels" not in line.split(":")[1][:12]


def test_begin_says_the_estimate_of_what_is_left(capsys):
    cells = load_matrix(QUICK).cells
    done = {c.id: {"status": "complete"} for c in cells[:3]}
    run = SimpleNamespace(path="results/r", manifest={"cells": done})
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False), probes=False, baseline=None)
    view.begin(run, SimpleNamespace(cells=cells))
    err = [ln.split(" ", 1)[1] for ln in capsys.readouterr().err.splitlines()]  # the time of day first
    assert err[0] == "run results/r — 6 cells, 3 already done"
    assert err[1] == estimate.line(cells[3:], probes=False, baseline=None), err
    assert "6 levels" in err[1]


def test_piped_lines_carry_the_time_of_day_the_time_left_and_news_during_a_level(capsys):
    """Piped (CI, a log): each line starts with HH:MM:SS; each cell and level says how long the
    run has gone and about how long is left; a level says something every LEVEL_TICK_S."""
    now = [1000.0]
    cells = load_matrix(QUICK).cells
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False), clock=lambda: now[0])
    view.begin(SimpleNamespace(path="r", manifest={"cells": {}}), SimpleNamespace(cells=cells))
    total = view.remaining()
    assert total == pytest.approx(sum(estimate.cell_seconds(c).mid for c in cells) + estimate.REPORT_S)
    view.start_cell(cells[0])
    view.phase(cells[0].label, "campaign c=1")
    for i in range(25):  # 25 s of a level, a timeline row a second
        now[0] += 1
        view.observe("timeline", [{"campaign_id": "x", "concurrency": 1, "t": float(i), "rate": 1.25e8,
                                   "active": 1, "done": i}])
    assert view.remaining() == pytest.approx(total - 25)
    err = capsys.readouterr().err.splitlines()
    assert all(re.match(r"^\d\d:\d\d:\d\d ", ln) for ln in err), err
    assert re.search(r"\[1/6\] .* — 0 s in, about \d+ min left$", err[-4]), err
    ticks = [ln for ln in err if "running" in ln]
    assert [t.split(" ", 1)[1] for t in ticks] == [
        "    c=1 running 10 s: 1 Gb/s in the last second, 9 transfers done",
        "    c=1 running 20 s: 1 Gb/s in the last second, 19 transfers done"]


def test_iperf3_and_fio_figures_are_printed(capsys):
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False))
    view.observe("baseline", [
        {"bits_per_second": 9.5e9, "streams": 1, "direction": "write"},
        {"bits_per_second": 2.41e10, "streams": 4, "direction": "write"},
        {"bits_per_second": 2.0e10, "streams": 1, "direction": "read"}])
    view.observe("probes", [{"job": "randwrite", "iops": 410754.2, "bw": 1.68e9},
                            {"job": "write", "iops": 1092.9, "bw": 4.58e9 / 8},
                            {"job": "read", "iops": 2073.9, "bw": 8.7e9 / 8}])
    err = [ln.split(" ", 1)[1] for ln in capsys.readouterr().err.splitlines()]
    assert err == ["    iperf3: write 24.1 Gb/s (4 streams), read 20 Gb/s (1 stream)",
                   "    fio: randwrite 411k IOPS, write 4.58 Gb/s, read 8.7 Gb/s"]


def test_a_failed_iperf3_says_why_and_no_live_rows_say_nothing():
    assert baseline_line([{"bits_per_second": None, "error": "connection refused"}]) == \
        "iperf3: no figure (connection refused)"
    assert probe_line([]) == "fio: no figure"
    assert storage_range([]) is None


def test_the_storage_range_is_min_max_per_figure():
    rows = [{"metric": "live.storage_nic_use", "value": v, "labels": {"host": "s1", "device": "eth0"}}
            for v in (0.12, 0.4, 0.3)]
    rows += [{"metric": "live.storage_disk_busy", "value": 0.36, "labels": {"host": "s1", "device": "vda"}}]
    assert storage_range(rows) == "storage host s1 over the level: NIC eth0 12–40 % of link, disk vda 36 % busy"


def test_one_box_is_the_embedded_cluster_here_without_an_inventory():
    from xcbench.commands.run import one_box
    opts = SimpleNamespace(hosts=None)
    assert one_box(None, opts)  # tmpfs cells only
    assert one_box(SimpleNamespace(embedded=True, info={}), opts)
    # OSDs inside an emulated storage host (`cluster up --osd-host`): its link is in the path
    assert not one_box(SimpleNamespace(embedded=True, info={"osd_host": ["ns", "10.77.0.2"]}), opts)
    assert not one_box(SimpleNamespace(embedded=False, info={}), opts)  # a site's cluster
    assert not one_box(None, SimpleNamespace(hosts=object()))  # an inventory of hosts


def test_quiet_says_nothing(capsys):
    """`run --quiet`: no progress line at all (the closing table and the paths still come)."""
    cells = load_matrix(QUICK).cells
    view = MatrixView(Console(file=io.StringIO(), force_terminal=True), quiet=True)
    view.begin(SimpleNamespace(path="r", manifest={"cells": {}}), SimpleNamespace(cells=cells))
    view.start_cell(cells[0])
    view.observe("campaigns", [{"campaign_id": "c", "concurrency": 1, "rate": 1e8, "finished": 1, "failed": 0}])
    view.finish()
    assert view.live is None and capsys.readouterr().err == ""
