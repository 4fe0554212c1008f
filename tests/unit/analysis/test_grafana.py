"""The Grafana dashboard (docs/grafana/xcbench.json) holds together as Grafana reads it: a
datasource variable, panels each with PromQL targets on that datasource, an annotation of the
xcbench tag, and every query xcbench itself asks Prometheus; a run links to it on its time
range; the run's levels become annotations; a bad Grafana URL stops the command with exit 2."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.dashboard import exprs, load
from tests.support.synthrun import make_run, mixed_cells
from xcbench.analysis.report import glance, grafana
from xcbench.analysis.report.document import render_report
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.telemetry.promqueries import QUERIES


def test_the_dashboard_has_grafanas_structure():
    d = load()
    for key in ("uid", "title", "panels", "templating", "annotations", "schemaVersion", "time"):
        assert key in d, key
    assert d["uid"] == grafana.UID and isinstance(d["schemaVersion"], int)
    var = [v for v in d["templating"]["list"] if v["type"] == "datasource"]
    assert len(var) == 1 and var[0]["query"] == "prometheus"
    ref = "${" + var[0]["name"] + "}"
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)) >= 5
    for p in d["panels"]:
        assert p["type"] == "timeseries" and p["title"] and p["datasource"]["uid"] == ref
        assert set(p["gridPos"]) == {"h", "w", "x", "y"} and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        assert p["targets"] and p["fieldConfig"]["defaults"]["unit"]
        for t in p["targets"]:
            assert t["expr"].strip() and t["refId"] and t["datasource"]["uid"] == ref
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs))
    tags = [a for a in d["annotations"]["list"] if a.get("type") == "tags"]
    assert tags and tags[0]["target"]["tags"] == ["xcbench"]


def test_every_query_xcbench_asks_is_a_panel():
    got = exprs(load())
    for name in QUERIES:
        assert QUERIES[name].format(w="$__rate_interval") in got, name


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cells = mixed_cells()[:2]
    for c in cells:
        c.concurrency, c.files = (1, 2), 8
    path, _ = make_run(tmp_path_factory.mktemp("gf"), cells)
    return RunData(path)


def test_a_runs_link_opens_its_time_range(run):
    lk = grafana.link(run, "https://grafana.example.org/g")
    q = parse_qs(urlsplit(lk["url"]).query)
    assert lk["url"].startswith("https://grafana.example.org/g/d/xcbench/")
    c = run.campaigns
    lo, hi = int(q["from"][0]), int(q["to"][0])
    assert lo <= c["start_time"].min() * 1000 and hi >= c["finish_time"].max() * 1000
    assert hi - lo <= (c["finish_time"].max() - c["start_time"].min() + 2 * grafana.MARGIN_S) * 1000 + 1
    assert grafana.link(run, None)["url"] is None  # no base: the path only


def test_levels_as_annotations_and_the_report_links(run, tmp_path, monkeypatch):
    rows = glance.rows(run)
    notes = grafana.level_annotations(run, rows)
    assert len(notes) == len(run.points)
    for n in notes:
        assert n["time"] < n["timeEnd"] and "xcbench" in n["tags"] and " c=" in n["text"]
    monkeypatch.setenv(grafana.ENV, "http://127.0.0.1:3000")
    md = render_report([run.run.path], "md", tmp_path / "r.md").read_text()
    assert "http://127.0.0.1:3000/d/xcbench/xcbench?" in md
    written = json.loads((tmp_path / f"r-{run.run_id}-grafana-annotations.json").read_text())
    assert written == notes
    monkeypatch.delenv(grafana.ENV)
    html = render_report([run.run.path], "html", tmp_path / "r.html").read_text()
    assert "/d/xcbench/xcbench?" in html and "XCBENCH_GRAFANA_URL" in html  # how to get a link


def test_a_bad_grafana_url_is_one_line_and_exit_2(run, capsys):
    with pytest.raises(XcbError, match="http"):
        grafana.base_url("grafana.example.org")
    rc = main(["report", str(run.run.path), "--grafana-url", "ftp://x"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--grafana-url" in err
