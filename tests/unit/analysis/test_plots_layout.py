"""Plots that can be read: in the timeline no label, tick label, legend entry or limit label is
clipped by the saved image or lies on another (text boxes measured by matplotlib's renderer);
one colour per role in every cell; limits labelled once; a level's line does not drop to 0 after
its last transfer; throughput vs concurrency draws every measured ceiling."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from tests.support.figtext import _texts
from tests.support.synthrun import make_run, mixed_cells, role_cells
from xcbench.analysis.report import plots, scaling
from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.roles import role_series
from xcbench.analysis.verdicts.run_data import RunData


@pytest.fixture(scope="module")
def rd(tmp_path_factory):
    path, _ = make_run(tmp_path_factory.mktemp("plots"), role_cells())
    return RunData(path)




def _timeline(rd, cid):
    cells = rd.cells
    pool = cells.loc[cid, "pool"] if cells.loc[cid, "backend"] != "tmpfs" else None
    tel = {"gateway cores": rd.samples.series(cid, "gateway_cores"),
           "host busy": rd.samples.series(cid, "host_busy"),
           "pool write op/s": rd.samples.series(cid, "pool_write_ops", pool) if pool else None}
    tl = rd.timeline
    return plots.timeline_figure(tl[tl["cell_id"] == cid], rd.steady[rd.steady["cell_id"] == cid], tel,
                                 cells.loc[cid, "label"], cores=rd.cores,
                                 roles=role_series(rd.samples, cid))


def test_timeline_texts_are_inside_the_image_and_apart(rd):
    for cid in rd.cells.index:
        fig = _timeline(rd, cid)
        texts = _texts(fig)
        bbox = fig.get_tightbbox(fig.canvas.get_renderer()).transformed(fig.dpi_scale_trans)
        assert len(texts) > 15
        for what, b in texts:  # the saved image (bbox_inches="tight") holds every text
            assert b.x0 >= bbox.x0 - 1 and b.x1 <= bbox.x1 + 1 and b.y0 >= bbox.y0 - 1 and b.y1 <= bbox.y1 + 1, what
            assert b.height >= 8, (what, b.height)  # >= 8 px tall at the saved dpi's scale: readable
        hits = [(a, c) for (a, ba), (c, bc) in itertools.combinations(texts, 2)
                if ba.overlaps(bc) and ba.intersection(ba, bc).width > 1 and ba.intersection(ba, bc).height > 1]
        assert hits == [], (rd.cells.loc[cid, "label"], hits)
        import matplotlib.pyplot as plt
        plt.close(fig)


def test_one_colour_per_role_and_each_limit_labelled_once(rd):
    seen: dict[str, set] = {}
    for cid in rd.cells.index:
        fig = _timeline(rd, cid)
        legend = fig.legends[0]
        for h, t in zip(legend.legend_handles, legend.get_texts(), strict=True):
            if t.get_text().endswith(" CPU") and "host" not in t.get_text():
                seen.setdefault(t.get_text().split(" ")[0], set()).add(h.get_color())
        labels = [t[0] for t in _texts(fig)]
        limits = [x for x in labels if x.startswith("limit ")]
        assert len(limits) == len(set(limits)), limits  # each distinct limit labelled once
        import matplotlib.pyplot as plt
        plt.close(fig)
    assert {r: len(c) for r, c in seen.items()} == {r: 1 for r in seen}
    assert seen["gateway"] == {plots.role_color("gateway")} and plots.role_color("osd") != plots.role_color("client")


def test_a_levels_line_ends_with_its_last_transfer():
    x = np.arange(8.0)
    y = np.array([0, 0, 3, 4, 0, 5, 0, 0], dtype=float)
    tx, ty = plots._trim(x, y)
    assert list(tx) == [2, 3, 4, 5] and list(ty) == [3, 4, 0, 5]  # a gap inside the level stays


def test_scaling_draws_every_measured_ceiling(tmp_path):
    cells = mixed_cells()[:4]
    for c in cells:
        c.concurrency, c.files = (1, 4), 24
    path, _ = make_run(tmp_path, cells)
    rd = RunData(path)
    ceil = scaling.ceilings(verdicts_of(rd))
    ceph = [cid for cid in rd.cells.index if rd.cells.loc[cid, "backend"] != "tmpfs"]
    assert ceph and all(ceil[c]["fio"] and ceil[c]["iperf3"] and ceil[c]["tmpfs"] for c in ceph)
    ev = {"rate": 1e8, "roles": {"gateway": {"cpu": 0.2, "limit": 0.25, "source": "cgroup v1 cpu.cfs_quota_us"},
                                 "osd": {"cpu": 1.0, "limit": 8.0, "source": "host cores (8)"}}}
    q = scaling.ceilings(pd.DataFrame([{"cell_id": "x", "concurrency": 4, "direction": "write",
                                        "evidence": json.dumps(ev)}]))
    assert q["x"]["quota"] == {"gateway": pytest.approx(1.25e8)}  # the host's cores are no quota
    uri = scaling.plot(rd.points, rd.cells, ceil, 100e9 / 8)
    assert uri and uri.startswith("data:image/png;base64,")


def test_the_text_box_check_sees_an_overlap(rd):
    """Control: a label put on the title is found (else 'no overlap' would mean nothing)."""
    fig = _timeline(rd, rd.cells.index[0])
    ax = fig.axes[0]
    ax.annotate(ax.get_title(), (0.5, 1.0), xycoords="axes fraction", ha="center", va="bottom", fontsize=10)
    texts = _texts(fig)
    hits = [(a, c) for (a, ba), (c, bc) in itertools.combinations(texts, 2) if ba.overlaps(bc)]
    assert hits
    import matplotlib.pyplot as plt
    plt.close(fig)
