"""What the HTML report shows, tried as a new user reads it: the throughput plot's axis on the
data (a ceiling far off named in the legend, not stretching the axis), the main plot before the
network baseline, no empty storage panel on a tmpfs cell, no column of dashes only, unique element
ids, and a level that was not steady drawn as not steady."""

from __future__ import annotations

import json
import re
from collections import Counter
from html.parser import HTMLParser

import pandas as pd
import pytest

from tests.support.synthrun import make_run, mixed_cells
from xcbench.analysis.report import plots, scaling, storageplots
from xcbench.analysis.report.document import render_report
from xcbench.analysis.verdicts.samples import SampleIndex


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    cells = mixed_cells()[:3]
    for c in cells:
        c.concurrency, c.files, c.repeats = (2, 8), 24, 1  # one repeat: no CI to show
    path, _ = make_run(tmp_path_factory.mktemp("out"), cells)
    return render_report([path], "html").read_text()


class _Tables(HTMLParser):
    """Every <table>'s rows of cell texts, and every element id."""

    def __init__(self):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.ids: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(a["id"])
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables and self.tables[-1]:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parse(html: str) -> _Tables:
    p = _Tables()
    p.feed(html)
    return p


def test_element_ids_are_unique(html):
    twice = [k for k, n in Counter(parse(html).ids).items() if n > 1]
    assert twice == []


def test_no_column_of_dashes_only(html):
    for t in parse(html).tables:
        body = [r for r in t[1:] if r]
        for i, head in enumerate(t[0] if t else []):
            col = [r[i] for r in body if i < len(r)]
            assert not col or any(x not in ("–", "-", "") for x in col), f"column {head!r}: {col}"


def test_the_main_plot_comes_before_the_network_baseline(html):
    assert html.index("Throughput vs concurrency") < html.index("Network baseline")


def test_the_throughput_axis_spans_the_data_not_a_far_target():
    """A chain at ~1 Gb/s with iperf3 over loopback at 22 Gb/s and a 100 Gb/s target: the axis
    ends near the data and the legend names the far lines with their figures."""
    gb = 1e9 / 8
    points = pd.DataFrame({"cell_id": ["a", "a"], "concurrency": [1.0, 4.0], "direction": ["write"] * 2,
                           "rate": [0.9 * gb, 1.2 * gb], "ci_low": [float("nan")] * 2,
                           "ci_high": [float("nan")] * 2})
    cells = pd.DataFrame({"label": ["cephfs rep3"], "backend": ["cephfs"]}, index=["a"])
    ceil = {"a": {"fio": 1.5 * gb, "iperf3": 22 * gb, "tmpfs": {}, "quota": {}, "iops": {}, "host": {},
                  "rep": {}, "verdict": {1.0: "host-cpu", 4.0: "host-cpu"},
                  "decided": {1.0: (1.0 * gb, "host CPU"), 4.0: (1.3 * gb, "host CPU")}}}
    fig = scaling.figure([("", points, ceil)], cells, 100 * gb)
    lo, hi = fig.axes[0].get_ylim()
    assert hi < 5 and lo > 0.2, (lo, hi)  # Gb/s: around the data, not up to 100
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("iperf3" in x and "22 Gb/s" in x and "above the plot" in x for x in labels), labels
    assert any(x.startswith("target 100 Gb/s") and "above the plot" in x for x in labels), labels
    assert any(x.startswith("fio probe") and "above" not in x for x in labels)  # on the plot: drawn


def test_a_level_that_was_not_steady_is_not_shaded_steady():
    tl = pd.DataFrame({"wall": [0.0, 1.0, 2.0, 3.0], "rate": [1e8] * 4, "concurrency": [4] * 4,
                       "campaign_id": ["c"] * 4})
    for method, hatched in (("autoterm", False), ("not steady", True), ("whole", True)):
        st = pd.DataFrame({"wall_start": [1.0], "wall_end": [3.0], "concurrency": [4], "method": [method]})
        fig = plots.timeline_figure(tl, st, {}, "t")
        spans = [p for p in fig.axes[0].patches]
        assert spans and all(bool(p.get_hatch()) == hatched for p in spans), method
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert any("not steady" in x for x in labels) == hatched, labels


def _samples(busy: float) -> SampleIndex:
    lab = json.dumps({"host": "vm", "device": "vda", "role": "osd", "osds": "0,1,2"})
    rows = [{"cell_id": "t", "wall": float(w), "metric": "node.disk_busy", "value": busy, "labels": lab}
            for w in range(5)]
    return SampleIndex(pd.DataFrame(rows))


def test_no_storage_panel_for_a_tmpfs_cell_nor_an_idle_disk():
    verdicts = pd.DataFrame(columns=["cell_id", "concurrency", "evidence"])
    assert len(storageplots.panels(_samples(0.4), "t")) == 1  # a busy OSD disk: its panel
    assert storageplots.panels(_samples(0.0), "t") == []  # never busy: no empty panel
    assert storageplots.timeline_panels(_samples(0.4), "t", verdicts, 1e8, storage=False) == ([], "")
    assert re.search("OSD disk", storageplots.timeline_panels(_samples(0.4), "t", verdicts, 1e8)[1])
