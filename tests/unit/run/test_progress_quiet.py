"""The progress view says each thing once: the run's estimated length at its start (from the
matrix: time-based levels' duration bounds, the fio probes' jobs x runtime), the iperf3 and fio
figures when they are measured."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from xcbench.matrix import load_matrix
from xcbench.run import estimate
from xcbench.run.figures import baseline_line, probe_line, storage_range
from xcbench.run.progress import MatrixView

QUICK = Path(__file__).resolve().parents[3] / "layouts" / "quick.yaml"


def test_the_demo_matrix_is_estimated_from_its_levels_and_probes():
    cells = load_matrix(QUICK).cells
    e = estimate.seconds(cells, probes=False)
    # 6 cells x 2 levels x 1 repeat, each level 20-40 s (quick.yaml's campaign.duration)
    assert e == {"lo": 12 * 20, "hi": 12 * 40, "levels": 12, "untimed": 0}
    with_probes = estimate.seconds(cells)
    assert with_probes["lo"] - e["lo"] == with_probes["hi"] - e["hi"] > 0
    assert estimate.line(cells, probes=False) == "estimate: 4–8 min (12 timed levels) + each cell's set-up"
    assert estimate.seconds(cells, repeats=2, probes=False)["hi"] == 2 * e["hi"]


def test_file_count_levels_are_counted_not_timed(tmp_path):
    m = tmp_path / "m.yaml"
    m.write_text("defaults: {concurrency: [1, 2], files: 4, file_size: 1M}\n"
                 "backends: {tmpfs: {size: [64M]}}\n")
    line = estimate.line(load_matrix(m).cells, probes=False)
    assert line == "estimate: no timed level; 2 file-count levels not timed"


def test_begin_says_the_estimate_of_what_is_left(capsys):
    cells = load_matrix(QUICK).cells
    done = {c.id: {"status": "complete"} for c in cells[:3]}
    run = SimpleNamespace(path="results/r", manifest={"cells": done})
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False), probes=False)
    view.begin(run, SimpleNamespace(cells=cells))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "run results/r — 6 cells, 3 already done"
    assert err[1].startswith("estimate: 2–4 min (6 timed levels)"), err


def test_iperf3_and_fio_figures_are_printed(capsys):
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False))
    view.observe("baseline", [
        {"bits_per_second": 9.5e9, "streams": 1, "direction": "write"},
        {"bits_per_second": 2.41e10, "streams": 4, "direction": "write"},
        {"bits_per_second": 2.0e10, "streams": 1, "direction": "read"}])
    view.observe("probes", [{"job": "randwrite", "iops": 410754.2, "bw": 1.68e9},
                            {"job": "write", "iops": 1092.9, "bw": 4.58e9 / 8},
                            {"job": "read", "iops": 2073.9, "bw": 8.7e9 / 8}])
    err = capsys.readouterr().err.splitlines()
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
