"""Every figure in the report names its rows: recompute some straight from the Parquet files.

The recomputation here uses only pandas and the run directory (no xcbench.analysis code): the
source spec says which table, which rows (a DataFrame.query string) and which aggregation.
"""

from __future__ import annotations

import html as htmllib
import json
import re

import pandas as pd
import pytest

from tests.support.synthrun import make_run, mixed_cells
from xcbench.analysis.report.document import render_report


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    cells = mixed_cells()[2:5]  # storage-bandwidth, ec-overhead, storage-iops
    for c in cells:
        c.concurrency, c.files, c.repeats = (2, 4), 24, 3
    path, _ = make_run(tmp_path_factory.mktemp("trace"), cells)
    out = render_report([path], "html", path / "report.html")
    text = out.read_text()
    sources = json.loads(re.search(r'<script type="application/json" id="xcb-sources">(.*?)</script>',
                                   text, re.S).group(1))
    return path, text, sources


def recompute(run_dir, spec) -> float:
    df = pd.read_parquet(run_dir / f"{spec['table']}.parquet")
    rows = df.query(spec["query"], engine="python")
    assert len(rows), spec["query"]
    if spec.get("by"):
        per = rows.groupby(spec["by"])[spec["column"]].agg(spec["agg"])
        if spec.get("per_seconds"):  # a rate: each group's sum over its window's seconds
            per = per / pd.Series(dict((k, s) for k, s in spec["per_seconds"]))
        return float(per.mean())
    return float(rows[spec["column"]].agg(spec["agg"]))


def _row_of(text: str, n: int) -> str:
    """The HTML table row whose source link is §n."""
    rows = [r.split("</tr>", 1)[0] for r in text.split("<tr>")[1:]]
    (row,) = [r for r in rows if f'href="#src-{n}"' in r]
    return row


def _figures(sources, what_prefix, name):
    return [(s["n"], s["figures"][name]) for s in sources
            if s["what"].startswith(what_prefix) and name in s["figures"]]


def test_steady_rates_recomputed_from_the_timeline_table(report):
    path, text, sources = report
    figs = _figures(sources, "steady rate", "rate")
    assert len(figs) == 3 * 2
    for n, f in figs:
        assert f["spec"]["table"] == "timeline" and f["spec"]["by"] == "repeat"
        value = recompute(path, f["spec"])
        assert value == pytest.approx(f["value"], rel=1e-12)
        row = _row_of(text, n)
        assert f'data-sort="{f["value"]}">{f["shown"]}</td>' in row  # the figure shown in its row
        assert f"{value * 8 / 1e9:.3g}" == f["shown"]  # bytes/s shown in Gb/s


def test_fio_iops_recomputed_from_the_probes_table(report):
    path, text, sources = report
    figs = _figures(sources, "fio:", "iops")
    assert len(figs) >= 3 * 2
    for n, f in figs:
        value = recompute(path, f["spec"])
        assert value == pytest.approx(f["value"], rel=1e-12)
        assert htmllib.unescape(f["shown"]) in htmllib.unescape(_row_of(text, n))


def test_transfer_medians_recomputed_from_the_transfers_table(report):
    path, _, sources = report
    figs = _figures(sources, "transfer throughput", "median")
    assert figs
    for _, f in figs:
        assert recompute(path, f["spec"]) == pytest.approx(f["value"], rel=1e-12)


def test_layout_table_pool_ops_come_from_samples(report):
    path, _, sources = report
    figs = _figures(sources, "layout table", "pool_write_ops")
    assert figs
    for _, f in figs:
        spec = f["spec"]
        assert spec["table"] == "samples" and "pool.client_write_ops_per_s" in spec["query"]
        df = pd.read_parquet(path / "samples.parquet").query(spec["query"], engine="python")
        # one pool row per sampling time: the mean of the rows is the figure
        assert df["value"].mean() == pytest.approx(f["value"], rel=1e-9)


def test_raw_per_logical_ratio_recomputed_from_the_samples(report):
    path, _, sources = report
    figs = _figures(sources, "EC vs replicated", "raw_per_logical")
    assert figs
    df = pd.read_parquet(path / "samples.parquet")
    for _, f in figs:
        def grown(query):
            per_wall = df.query(query, engine="python").groupby("wall")["value"].sum().sort_index()
            steps = per_wall.diff()
            return steps[steps > 0].sum()
        ratio = grown(f["spec"]["query"]) / grown(f["spec"]["query_stored"])
        assert ratio == pytest.approx(f["value"], rel=1e-9)
        assert "pool.bytes_used" in f["spec"]["query"] and "pool.stored" in f["spec"]["query_stored"]
