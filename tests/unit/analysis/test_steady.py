"""Steady-state windows by the stated rule, timelines rebuilt from transfers, and Stats."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.support.synthrun import SynthCell, make_run
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.figures.stats import Stats, bootstrap_ci, ci_overlap, pct_diff
from xcbench.figures.steady import steady_table, steady_window, timeline_from_transfers


def _campaign(rates, active):
    # 1-s buckets labelled by their ends, as a run records them
    return np.arange(1, len(rates) + 1, dtype=float), np.asarray(rates, float), np.asarray(active, float)


def test_plateau_window_is_the_run_at_the_limit_minus_its_edges():
    ramp_up, plateau, ramp_down = [10, 30, 60], [100, 104, 96, 100, 102, 98, 100, 100], [70, 40, 10]
    t, r, a = _campaign(ramp_up + plateau + ramp_down, [1, 2, 3] + [4] * 8 + [3, 2, 1])
    w = steady_window(t, r, a, concurrency=4)
    assert (w.method, w.start, w.end, w.limit) == ("plateau", 4.0, 10.0, 4.0)  # buckets 5..10
    inner = np.array(plateau[1:-1], float)
    assert w.window.mean == pytest.approx(inner.mean())
    assert w.window.median == pytest.approx(np.median(inner))
    assert w.window.std == pytest.approx(inner.std(ddof=1))
    assert w.window.cv == pytest.approx(inner.std(ddof=1) / inner.mean())
    assert w.run.mean == pytest.approx(np.mean(r)) and w.run.n == len(r)
    assert w.plateau_frac == pytest.approx(8 / 14)


def test_limit_is_the_highest_level_reached_when_files_are_fewer_than_slots():
    t, r, a = _campaign([50, 100, 100, 100, 100, 100, 40], [2, 3, 3, 3, 3, 3, 1])
    w = steady_window(t, r, a, concurrency=8)
    assert w.limit == 3 and w.method == "plateau" and (w.start, w.end) == (2.0, 5.0)


def test_slope_fallback_when_the_plateau_is_too_short():
    # active hits its limit in two buckets only; the rate is level from t=2 to t=7, but the
    # centred slope of the smoothed rate still sees the ramps at t=2 (+24 %/s) and t=7 (-30 %/s)
    rates = [10, 50, 95, 100, 98, 101, 99, 97, 40, 5]
    t, r, a = _campaign(rates, [1, 2, 3, 4, 4, 3, 3, 3, 2, 1])
    w = steady_window(t, r, a, concurrency=4)
    assert w.method == "slope"
    assert (w.start, w.end) == (3.0, 7.0)
    assert w.window.mean == pytest.approx(np.mean(rates[3:7]))


def test_whole_run_is_the_flagged_last_resort():
    w = steady_window([1.0, 2.0], [5.0, 7.0], [1, 1], concurrency=4)
    assert w.method == "whole" and (w.start, w.end) == (0.0, 2.0) and w.window.mean == 6.0


def test_starved_buckets_are_free_slots_while_files_are_queued():
    t, r, a = _campaign([50] * 8, [4, 2, 4, 2, 4, 4, 2, 1])
    queued = np.array([9, 8, 6, 5, 3, 1, 0, 0])
    w = steady_window(t, r, a, concurrency=4, queued=queued)
    assert w.starved_frac == pytest.approx(2 / 8)  # t=1 and t=3; at t=6,7 nothing is queued


def test_timeline_from_transfers_by_hand():
    tr = pd.DataFrame({"cell_id": "c", "campaign_id": "k", "concurrency": 2, "repeat": 0,
                       "start_time": [100.0, 101.0], "finish_time": [102.0, 101.5],
                       "file_size": [200.0, 50.0], "transferred": [200.0, 50.0],
                       "file_state": ["FINISHED", "FAILED"]})
    tl = timeline_from_transfers(tr)
    assert tl["t"].tolist() == [1.0, 2.0]  # each bucket labelled by its end
    assert tl["wall"].tolist() == [101.0, 102.0]
    assert tl["bytes"].tolist() == pytest.approx([100.0, 150.0])
    assert tl["rate"].tolist() == pytest.approx([100.0, 150.0])
    assert tl["active"].tolist() == pytest.approx([1.0, 1.5])
    assert tl["done"].tolist() == [0, 1] and tl["failed"].tolist() == [0, 1]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path, _ = make_run(tmp_path_factory.mktemp("store"), [
        SynthCell("tmpfs", concurrency=(2, 4), files=24),
        SynthCell("cephfs", (4 << 20, 1, 4 << 20), "rep1", fio_bw=400 << 20, fio_iops=2000,
                  concurrency=(4,), files=24, repeats=3)])
    return RunData(path)


def test_rebuilt_timeline_conserves_bytes_and_agrees_with_the_recorded_one(run):
    rebuilt = timeline_from_transfers(run.transfers)
    recorded = run.timeline
    keys = ["campaign_id"]
    a = rebuilt.groupby(keys)["bytes"].sum()
    b = recorded.groupby(keys)["bytes"].sum()
    c = run.transfers.groupby("campaign_id")["transferred"].sum()
    assert a.to_dict() == pytest.approx(c.to_dict()) and b.to_dict() == pytest.approx(c.to_dict())
    both = rebuilt.merge(recorded, on=["campaign_id", "t"], suffixes=("_re", "_rec"))
    assert both["bytes_re"].to_numpy() == pytest.approx(both["bytes_rec"].to_numpy(), rel=1e-6, abs=1.0)


def test_steady_table_on_a_run(run):
    st = run.steady
    assert len(st) == 2 * 2 + 3 and set(st["method"]) == {"plateau"}
    assert (st["t_start"] > 0).all() and (st["t_end"] < st["buckets"]).all()
    assert (st["window_cv"] < st["run_cv"]).all()  # trimming ramps lowers volatility
    p = run.points
    ceph = p[p["repeats"] == 3].iloc[0]
    means = st[st["cell_id"] == ceph["cell_id"]]["window_mean"]
    assert ceph["rate"] == pytest.approx(means.mean())
    assert ceph["ci_low"] <= ceph["rate"] <= ceph["ci_high"]
    assert steady_table(pd.DataFrame()).empty


def test_stats_and_bootstrap():
    s = Stats.of([1.0, 2.0, 3.0, 4.0, float("nan")], ci=True)
    assert (s.n, s.mean, s.median, s.min, s.max) == (4, 2.5, 2.5, 1.0, 4.0)
    assert s.std == pytest.approx(np.std([1, 2, 3, 4], ddof=1)) and s.cv == pytest.approx(s.std / 2.5)
    assert 1.0 <= s.ci_low < 2.5 < s.ci_high <= 4.0
    assert bootstrap_ci([1.0, 2.0, 3.0, 4.0]) == bootstrap_ci([1.0, 2.0, 3.0, 4.0])  # seeded
    one = Stats.of([5.0], ci=True)
    assert one.mean == 5.0 and math.isnan(one.std) and math.isnan(one.ci_low)
    assert Stats.of([]).n == 0
    assert ci_overlap(1, 2, 1.5, 3) is True and ci_overlap(1, 2, 2.5, 3) is False
    assert ci_overlap(1, 2, math.nan, 3) is None
    assert pct_diff(2.0, 3.0) == 50.0 and math.isnan(pct_diff(0.0, 1.0))


def test_without_active_counts_there_is_no_plateau_and_no_starvation():
    rates = [10, 50, 95, 100, 98, 101, 99, 97, 40, 5]
    t, r, _ = _campaign(rates, rates)
    for active in (None, [math.nan] * len(rates)):
        w = steady_window(t, r, active, concurrency=4, queued=np.ones(len(rates)))
        assert w.method == "slope" and math.isnan(w.starved_frac) and math.isnan(w.plateau_frac)
