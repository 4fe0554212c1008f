"""One rate per level: bytes over the steady window, the same figure in the progress line, the
steady table (report, closing table, rules) and the plots' shaded window."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from xcbench.figures.level_rule import LevelRule
from xcbench.figures.stats import Stats
from xcbench.figures.steady import level_steady, steady_table
from xcbench.run.progress import MatrixView

RULE = LevelRule(min=5, max=30, rule="autoterm", window=10, points=5, tolerance=0.15)


def _level(seed: int = 7, tail_span: float = 0.2, tail_rate: float = 2e6):
    """A time-based level as the campaign records it: 1-s buckets (ticks a few ms late) at
    ~100 MB/s (5 % noise) labelled by their end, judged steady at the last full bucket, then a
    short final bucket (the drain after the level ended) moving almost nothing."""
    rng = np.random.default_rng(seed)
    spans = 1.0 + rng.uniform(0.0, 0.004, 20)
    t = np.round(np.cumsum(spans), 3)
    spans = np.diff(np.concatenate([[0.0], t]))
    rate = np.concatenate([[30e6, 70e6], 100e6 * (1 + 0.05 * rng.standard_normal(18))])
    nbytes = rate * spans
    window = RULE.window_at(t)
    level = {"ended_by": "steady", "t_end": float(t[-1]), "window": list(window),
             "rule": {"rule": "autoterm"}}
    t_all = np.append(t, round(t[-1] + tail_span, 3))
    n_all = np.append(nbytes, tail_rate * tail_span)
    return t_all, n_all, n_all / np.diff(np.concatenate([[0.0], t_all])), level


def _frame(t, nbytes, rate, cid="k1"):
    return pd.DataFrame({"cell_id": "c", "campaign_id": cid, "concurrency": 4, "repeat": 0, "t": t,
                         "wall": 5000.0 + t, "bytes": nbytes, "rate": rate, "active": 4,
                         "done": 0, "failed": 0})


def test_the_rate_is_the_windows_bytes_over_its_seconds_and_a_short_tail_does_not_count():
    t, nbytes, rate, level = _level()
    w0, w1 = level["window"]
    assert w0 in t and w1 == t[-2]  # whole buckets: the window the rule judged
    inside = (t > w0) & (t <= w1)
    w = level_steady(t, nbytes, rate, np.full(t.size, 4.0), concurrency=4, level=level)
    assert (w.start, w.end, w.method) == (w0, w1, "autoterm")
    assert w.rate == pytest.approx(nbytes[inside].sum() / (w1 - w0), rel=1e-12)
    # equal weights over the buckets ending within half a second of the window (how the rate
    # was averaged before) take the drain's 0.2-s bucket in as a whole second
    old = Stats.of(rate[(t > w0 + 0.5) & (t <= w1 + 0.5)])
    assert old.mean < w.rate and old.cv > 3 * w.window.cv
    # the window's own spread: that of its 1-s rates (not inflated by the tail)
    assert w.window.n == round(w1 - w0)
    assert w.window.cv == pytest.approx(np.std(rate[inside], ddof=1) / rate[inside].mean(), rel=0.1)


def test_a_level_ended_by_its_files_weighs_a_short_last_bucket_by_its_duration():
    t = np.array([1.0, 2.0, 3.0, 3.25])
    nbytes = np.array([100.0, 100.0, 100.0, 5.0])
    rate = nbytes / np.array([1.0, 1.0, 1.0, 0.25])  # the last: 20 B/s for a quarter second
    w = level_steady(t, nbytes, rate, [4, 4, 4, 4], concurrency=4)  # at its limit throughout
    assert (w.method, w.start, w.end) == ("plateau", 0.0, 3.25)
    assert w.rate == pytest.approx(305.0 / 3.25) and w.run.mean == pytest.approx(305.0 / 3.25)
    assert Stats.of(rate).mean == pytest.approx(80.0)  # equal weights: the tail as a whole second
    whole = level_steady(t[-2:], nbytes[-2:], rate[-2:], None)
    assert whole.method == "whole" and whole.rate == pytest.approx(105.0 / 1.25)


def test_the_level_record_the_table_and_the_shaded_window_are_one_window():
    t, nbytes, rate, level = _level()
    st = steady_table(_frame(t, nbytes, rate), levels={"k1": level}).iloc[0]
    w0, w1 = level["window"]
    assert (st["t_start"], st["t_end"]) == (w0, w1) and bool(st["whole_buckets"])
    assert (st["wall_start"], st["wall_end"]) == pytest.approx((5000.0 + w0, 5000.0 + w1))
    assert st["window_mean"] == pytest.approx(level_steady(t, nbytes, rate, level=level).rate, rel=1e-12)
    # the rule judged exactly those seconds: its block rates average to the same rate
    steady, _ = RULE.check(t[:-1], nbytes[:-1])
    assert steady


def test_the_progress_line_gives_the_tables_rate(capsys):
    t, nbytes, rate, level = _level(seed=3)
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False))
    rows = [{"campaign_id": "k1", "t": float(a), "bytes": float(b), "rate": float(r), "active": 4}
            for a, b, r in zip(t, nbytes, rate, strict=True)]
    view.observe("timeline", rows)
    view.observe("campaigns", [{"campaign_id": "k1", "concurrency": 4, "rate": 9e7, "finished": 9,
                                "failed": 0, "settings": json.dumps({"level": level})}])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    m = re.search(r"c=4: ([\d.]+) Gb/s steady", line)
    assert m, line
    table = steady_table(_frame(t, nbytes, rate), levels={"k1": level}).iloc[0]["window_mean"]
    assert float(m.group(1)) == round(8 * table / 1e9, 2)


def test_a_level_that_hit_its_maximum_says_so_in_the_progress_line(capsys):
    t, nbytes, rate, level = _level(seed=5)
    view = MatrixView(Console(file=io.StringIO(), force_terminal=False))
    view.observe("timeline", [{"campaign_id": "k2", "t": float(a), "bytes": float(b), "rate": float(r),
                               "active": 4} for a, b, r in zip(t, nbytes, rate, strict=True)])
    view.observe("campaigns", [{"campaign_id": "k2", "concurrency": 4, "rate": 9e7, "finished": 9,
                                "failed": 0, "settings": json.dumps({"level": {**level, "ended_by": "max"}})}])
    assert "over its last window (not steady)" in capsys.readouterr().err
