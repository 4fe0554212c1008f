"""A matrix's `reference:` (the published table it reproduces): validation, the manifest, and
the report's reference column and network-baseline table."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml

from tests.support.oldrun import old_shape
from tests.support.synthrun import make_run, mixed_cells
from xcbench.analysis.report import network_baseline
from xcbench.analysis.report.document import render_report
from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.matrix import load_matrix
from xcbench.store.rundir import RunDir

M = 1 << 20
BASE = {"name": "t", "backends": {"cephfs": {
    "layouts": [{"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"},
                {"stripe_unit": "1M", "stripe_count": 2, "object_size": "16M"}],
    "pools": ["rep3"]}},
    "reference": {"source": "Someone, CHEP 2024", "conditions": {"pool": "EC 8+3"},
                  "rows": [{"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M",
                            "io_rate_gib_s": 2.8, "iops": 500},
                           {"stripe_unit": "1M", "stripe_count": 2, "object_size": "16M", "iops": 2500}]}}


def write(tmp_path, data) -> str:
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(data))
    return str(p)


def test_reference_is_normalised_into_the_matrix_and_its_manifest(tmp_path):
    m = load_matrix(write(tmp_path, BASE))
    rows = m.reference["rows"]
    assert rows[0] == {"stripe_unit": 4 * M, "stripe_count": 1, "object_size": 4 * M,
                       "io_rate_gib_s": 2.8, "io_rate": 2.8 * (1 << 30), "iops": 500.0}
    assert rows[1]["io_rate"] is None and rows[1]["iops"] == 2500
    assert m.manifest()["reference"] == m.reference
    assert load_matrix(write(tmp_path, {k: v for k, v in BASE.items() if k != "reference"})).reference is None


def _bad(**row):
    ref = json.loads(json.dumps(BASE["reference"]))
    ref["rows"][1] = row
    return {**BASE, "reference": ref}


@pytest.mark.parametrize("data, where, field", [
    (_bad(stripe_unit="2M", stripe_count=1, object_size="16M", iops=1), "reference.rows[1]", "stripe_unit"),
    (_bad(stripe_unit="4M", stripe_count=1, object_size="4M", iops=1), "reference.rows[1]", "stripe_unit"),
    (_bad(stripe_unit="1M", stripe_count=2, object_size="16M", iops=-3), "reference.rows[1]", "iops"),
    (_bad(stripe_unit="1M", stripe_count=2, object_size="16M"), "reference.rows[1]", "io_rate_gib_s"),
    (_bad(stripe_unit="1M", object_size="16M", iops=1), "reference.rows[1]", "stripe_count"),
    (_bad(stripe_unit="1M", stripe_count=2, object_size="16M", iops=1, gbps=3), "reference.rows[1]", "gbps"),
    (_bad(stripe_unit="1Q", stripe_count=2, object_size="16M", iops=1), "reference.rows[1]", "stripe_unit"),
    ({**BASE, "reference": {**BASE["reference"], "source": ""}}, "reference", "source"),
    ({**BASE, "reference": {**BASE["reference"], "rows": []}}, "reference", "rows"),
    ({**BASE, "reference": {**BASE["reference"], "doi": "x"}}, "reference", "doi"),
    ({**BASE, "reference": [1, 2]}, "reference", "reference"),
])
def test_bad_reference_is_one_line_naming_file_row_and_field(tmp_path, capsys, data, where, field):
    path = write(tmp_path, data)
    with pytest.raises(XcbError) as e:
        load_matrix(path)
    assert str(e.value).startswith(f"{path}: {where}: {field}: ") and "\n" not in str(e.value)
    assert main(["matrix", "check", path]) == 2


def test_a_layout_the_matrix_lacks_is_named_as_cell_labels_name_it(tmp_path):
    path = write(tmp_path, _bad(stripe_unit=2 * M, stripe_count=1, object_size="16MiB", iops=1))
    with pytest.raises(XcbError, match=r"stripe_unit: layout su=2M sc=1 os=16M is not a layout of this matrix"):
        load_matrix(path)


def test_ral_layouts_holds_the_published_table():
    m = load_matrix("layouts/ral-layouts.yaml")
    got = {(r["stripe_unit"] // M, r["object_size"] // M, r["stripe_count"]): (r["io_rate_gib_s"], r["iops"])
           for r in m.reference["rows"]}
    assert got == {(8, 16, 2): (2.8, 480), (4, 16, 1): (2.8, 500), (1, 16, 1): (2.4, 600),
                   (2, 16, 1): (2.9, 1500), (1, 16, 2): (3.0, 2500)}
    assert m.reference["conditions"]["fts_limits"] == [200, 400]
    assert all(c.concurrency == (200, 400) for c in m.cells)
    assert all(c.pool.label == "ec8+3" for c in m.cells if c.backend == "cephfs")


def _sort(v):
    return {"text": str(v), "sort": v}


def test_reference_columns_sit_beside_the_runs_own():
    ref = load_matrix("layouts/ral-layouts.yaml").reference
    rows = [{"su": _sort(4 * M), "sc": _sort(1), "os": _sort(16 * M), "rate": _sort(1.4 * (1 << 30))},
            {"su": _sort(64 * M), "sc": _sort(1), "os": _sort(64 * M), "rate": _sort(1.0)}]
    cols = [{"key": k, "label": k, "num": True} for k in ("su", "rate", "ci", "ops", "verdict")]
    out = network_baseline.reference_layout({"matrix": {"reference": ref}}, rows, cols)
    assert [c["key"] for c in out["columns"]] == ["su", "rate", "ref_rate", "ref_ratio", "ci", "ops",
                                                  "ref_iops", "verdict"]
    assert rows[0]["ref_rate"]["text"] == "24.1"  # RAL's 2.8 GiB/s in Gb/s
    assert rows[0]["ref_iops"]["text"] == "500"
    assert rows[0]["ref_ratio"]["text"] == "50 %"
    assert rows[1]["ref_rate"]["text"] == "–" and rows[1]["ref_ratio"]["sort"] == ""
    assert len(out["missing"]) == 4 and "su=8M sc=2 os=16M" in out["missing"]
    assert "fts_limits: 200, 400" in out["conditions"]
    assert network_baseline.reference_layout({"matrix": {"path": "x"}}, rows, cols) is None


@pytest.fixture(scope="module")
def run_with_reference(tmp_path_factory):
    cells = mixed_cells()[1:3]  # two cephfs cells, layout su=4M sc=1 os=4M
    for c in cells:
        c.concurrency, c.files = (2, 8), 24
    path, _ = make_run(tmp_path_factory.mktemp("ref"), cells)
    run = RunDir.open(path)
    run.manifest["matrix"]["reference"] = {
        "source": "Published <b>table</b>", "conditions": {"osds": "54 HDD"}, "rows": [
            {"stripe_unit": 4 * M, "stripe_count": 1, "object_size": 4 * M, "io_rate_gib_s": 2.8,
             "io_rate": 2.8 * (1 << 30), "iops": 480.0}]}
    run.save_manifest()
    pts = [{"kind": "iperf3", "wall": 1.0, "streams": n, "seconds": 1, "bits_per_second": g * 1e9,
            "retransmits": n, "host": "127.0.0.1", "client": "127.0.0.1", "gateway": "127.0.0.1",
            "direction": d, "cpu_host": 10.0, "cpu_remote": 12.0, "error": None}
           for n, g in ((1, 20.0), (4, 31.5), (16, 40.0)) for d in ("write", "read")]
    for p in pts:
        if p["direction"] == "read":
            p["bits_per_second"] /= 2
    (path / "records" / "baseline.jsonl").unlink(missing_ok=True)
    (path / "baseline.parquet").unlink(missing_ok=True)
    run.append("baseline", pts)
    run.close()
    run.finalize("complete")
    return path


def test_report_shows_the_published_column_and_rals_network_table(run_with_reference, tmp_path):
    html = render_report([run_with_reference], "html", tmp_path / "r.html").read_text()
    layout = html[html.index('id="layouts-'):html.index('id="scaling-')]
    assert "published IO rate (Gb/s)" in layout and "published IOPS" in layout
    assert ">24.1<" in layout and ">480<" in layout
    assert "Published &lt;b&gt;table&lt;/b&gt;" in layout and "osds: 54 HDD" in layout
    start = html.index('id="network-')  # after the throughput plot: the section up to the next
    net = html[start:html.index("<h2 ", start)]
    assert "ingress: write, client → gateway (Gb/s)" in net and "egress: read" in net
    assert ">31.5<" in net and ">15.8<" in net and 'id="fig-network-' in net
    sources = json.loads(re.search(r'id="xcb-sources">(.*?)</script>', html, re.S).group(1))
    nets = [s for s in sources if s["what"].startswith("network baseline")]
    assert len(nets) == 3
    table = pd.read_parquet(run_with_reference / "baseline.parquet")
    for s in nets:  # every figure recomputes from the Parquet file with its own query
        for f in s["figures"].values():
            got = table.query(f["spec"]["query"])[f["spec"]["column"]].mean() / 1e9
            assert got == pytest.approx(f["value"])
    md = render_report([run_with_reference], "md", tmp_path / "r.md").read_text()
    assert "published IO rate (Gb/s) 24.1" in md and "## Network baseline" in md  # the same in every row: said once


def test_an_old_single_point_baseline_still_renders_as_the_write_direction(tmp_path):
    path, _ = make_run(tmp_path, mixed_cells()[:1])
    old_shape(path)
    assert "direction" not in pd.read_parquet(path / "baseline.parquet")
    pts = network_baseline.baseline_points(RunDir.open(path).table("baseline"))
    assert list(pts["direction"]) == ["write"] and list(pts["gateway"]) == ["127.0.0.1"]
    html = render_report([path], "html", tmp_path / "r.html").read_text()
    assert "ingress: write" in html and "No iperf3 baseline" not in html
