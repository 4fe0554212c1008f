"""Plots that show why: the ceiling that decided a verdict, in rate terms, from the verdict's
evidence; two runs overlaid in one throughput plot; storage-host panels only where they have
something to show (a NIC outside the chain's path is no panel), on the timeline's time axis."""

from __future__ import annotations

import itertools
import json

import matplotlib.pyplot as plt
import pytest

from tests.support.promserver import OSD_META, UNAME
from tests.support.storagehost_samples import _samples
from tests.support.synthrun import make_run, mixed_cells
from xcbench.analysis.report import plots, scaling, storageplots
from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.telemetry import promqueries as pq


def test_the_deciding_ceiling_in_rate_terms():
    r = 1e8
    assert scaling.decided("storage-bandwidth", {"rate": r, "fio_bw": 1.1e8}) == (1.1e8, "fio bandwidth")
    assert scaling.decided("storage-iops", {"rate": r, "utilisation": {"storage-iops": 0.5}}) == (2e8, "fio IOPS")
    assert scaling.decided("host-cpu", {"rate": r, "host_busy": 0.9})[0] == pytest.approx(r / 0.9)
    assert scaling.decided("ec-overhead", {"rate": r, "rep_rate": 1.5e8}) == (1.5e8, "replicated twin")
    assert scaling.decided("gateway", {"rate": r, "gateway_ceiling": 1.05e8, "cpu": 0.3}) == (1.05e8, "tmpfs gateway")
    assert scaling.decided("gateway", {"rate": r, "gateway_ceiling": 4e8, "cpu": 0.5}) == (2e8, "gateway CPU")
    role = {"rate": r, "limited_role": "client", "roles": {"client": {"cpu": 0.5, "limit": 0.5}}}
    assert scaling.decided("client", role) == (1e8, "client CPU limit")
    assert scaling.decided("network", {"rate": r, "network_bytes_per_s": 1.2e8}) == (1.2e8, "iperf3")
    assert scaling.decided("client", {"rate": r, "starved_frac": 0.4}) is None  # concurrency: no ceiling
    assert scaling.decided("inconclusive", {"rate": r, "fio_bw": 9e9}) is None


def test_two_runs_overlaid_in_one_plot(tmp_path):
    cells = mixed_cells()[:3]
    for c in cells:
        c.concurrency, c.files = (1, 4), 16
    a, _ = make_run(tmp_path, cells, name="a", seed=1)
    for c in cells:
        c.gateway *= 0.5
    b, _ = make_run(tmp_path, cells, name="b", seed=2)
    ra, rb = RunData(a), RunData(b)
    assert set(ra.cells.index) == set(rb.cells.index)  # the same matrix: the same cell ids
    runs = [(rd.run_id, rd.points, scaling.ceilings(verdicts_of(rd))) for rd in (ra, rb)]
    fig = scaling.figure(runs, ra.cells, 100e9 / 8)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "run a (its ceilings drawn)" in legend and "run b" in legend
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 3
    for ax in panels:  # each panel: both runs' points, each labelled with its verdict
        names = {t.get_text() for t in ax.texts} - {""}
        assert names and names <= set(scaling.VERDICT_COLORS) | {t for t in names if t.endswith("quota")}
        assert sum(len(line.get_xdata()) for line in ax.lines if line.get_marker() in ("o", "s")
                   and line.get_linestyle() == "None") == 4
    plt.close(fig)


def test_a_nic_outside_the_chains_path_is_no_panel():
    s = _samples(pq.HostMap(UNAME, OSD_META))  # recorded: the one-box cluster, OSDs on loopback
    every = storageplots.panels(s, "c")
    assert len(every) == 3  # eth0's 806 B/s of background is drawn when nothing is asked
    assert len(storageplots.panels(s, "c", min_bytes_per_s=0.01 * 200e6)) == 2  # disk and CPU only
    assert storageplots.panels(s, "other-cell") == []


def test_storage_panels_share_the_timelines_time_axis(tmp_path):
    cells = mixed_cells()[:1]
    cells[0].concurrency, cells[0].files = (2,), 8
    path, _ = make_run(tmp_path, cells)
    rd = RunData(path)
    cid = rd.cells.index[0]
    tl = rd.timeline[rd.timeline["cell_id"] == cid]
    s = _samples(pq.HostMap(UNAME, OSD_META))
    draw = storageplots.panels(s, "c", min_bytes_per_s=1e6)
    fig = plots.timeline_figure(tl, rd.steady[rd.steady["cell_id"] == cid], {}, "x", extra=draw)
    axes = fig.axes
    assert len(axes) == 1 + len(draw)
    fig.canvas.draw()
    x0 = {round(a.get_position().x0, 4) for a in axes}
    x1 = {round(a.get_position().x1, 4) for a in axes}
    assert len(x0) == 1 and len(x1) == 1  # one column: every panel spans the same x range
    assert all(a.get_shared_x_axes().joined(axes[0], a) for a in axes)
    for a in axes[1:]:
        lg = a.get_legend()
        assert lg is not None and all(t.get_fontsize() >= 7.5 for t in lg.get_texts())
    plt.close(fig)


def test_the_legend_promises_ci_bars_only_when_drawn(tmp_path):
    cells = mixed_cells()[:2]
    for c in cells:
        c.concurrency, c.files, c.repeats = (1, 2), 8, 1
    path, _ = make_run(tmp_path, cells)
    rd = RunData(path)
    fig = scaling.figure([("", rd.points, scaling.ceilings(verdicts_of(rd)))], rd.cells, 100e9 / 8)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not any("95 %" in t for t in legend) and any("no CI bars" in t for t in legend)
    assert any(t.startswith("verdict: ") for t in legend)
    assert not any(c.__class__.__name__ == "ErrorbarContainer" for ax in fig.axes for c in ax.containers)
    plt.close(fig)
    v = verdicts_of(rd)
    assert json.loads(v["evidence"].iloc[0])  # evidence present: the marks come from it


def test_every_point_labelled_even_at_a_panels_edge_under_a_quota_label(tmp_path):
    from tests.support.figtext import _texts
    from tests.support.synthrun import role_cells
    cells = role_cells()
    for c in cells:
        c.files = 16
    path, _ = make_run(tmp_path, cells)
    rd = RunData(path)
    v = verdicts_of(rd)
    fig = scaling.figure([("", rd.points, scaling.ceilings(v))], rd.cells, 100e9 / 8)
    texts = _texts(fig)
    labels = [t for t, b in texts if t in set(v["verdict"]) and b.height < 30]
    assert len(labels) == len(rd.points)
    assert sorted(labels) == sorted(v["verdict"])  # each point's own verdict
    hits = [(a, c) for (a, ba), (c, bc) in itertools.combinations(texts, 2)
            if ba.overlaps(bc) and ba.intersection(ba, bc).width > 1 and ba.intersection(ba, bc).height > 1]
    assert hits == []
    plt.close(fig)
