"""The progress view's per-level line: the steady-window rate (figures.steady's RULE), with the
whole-level mean beside it, so it matches what the report calls steady."""

from __future__ import annotations

import io
import re

import numpy as np
from rich.console import Console

from xcbench.figures.steady import steady_window
from xcbench.figures.units import gbps_num
from xcbench.run.progress import MatrixView


def test_level_line_gives_the_steady_rate_and_says_what_the_other_figure_is(capsys):
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False))
    # a level of 4 transfers: 2 s ramp-up, 10 s at the limit at ~100 MB/s, a 3 s tail
    active = [1, 2] + [4] * 10 + [3, 2, 1]
    rate = [20e6, 50e6] + [100e6 + 1e6 * (i % 3) for i in range(10)] + [60e6, 40e6, 10e6]
    rows = [{"campaign_id": "c1", "t": float(i), "rate": r, "active": a}
            for i, (r, a) in enumerate(zip(rate, active, strict=True))]
    view.observe("timeline", rows[:7])
    view.observe("timeline", rows[7:])  # rows arrive in batches while the level runs
    whole = float(np.sum(rate)) / len(rate)
    view.observe("campaigns", [{"campaign_id": "c1", "concurrency": 4, "rate": whole,
                                "finished": 40, "failed": 0}])
    line = capsys.readouterr().err.strip().splitlines()[-1].split(" ", 1)[1]  # after the time of day
    expect = steady_window(range(len(rate)), rate, active, concurrency=4).window.mean
    m = re.fullmatch(r"c=4: ([\d.]+) Gb/s steady \(([\d.]+) over the whole level\), 40 finished, "
                     r"0 failed", line.strip())
    assert m, line
    # the closing table's digits (figures.units.gbps_num): 3 significant
    assert m.group(1) == gbps_num(expect) and float(m.group(1)) > float(m.group(2))
    assert m.group(2) == gbps_num(whole)
    assert view.buckets == {}  # a finished level's buckets are let go


def test_level_without_timeline_says_it_is_the_whole_level_mean(capsys):
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False))
    view.observe("campaigns", [{"campaign_id": "c2", "concurrency": 1, "rate": 1.25e8,
                                "finished": 3, "failed": 1}])
    line = capsys.readouterr().err.strip().split(" ", 1)[1].strip()
    assert line == "c=1: 1 Gb/s over the whole level (no steady window), 3 finished, 1 failed"
