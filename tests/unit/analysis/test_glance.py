"""The closing table (analysis.report.glance): one row per point with its steady rate, the verdict of
the stored record, a one-line reason quoting the deciding figure, and beaten ceilings marked."""

from __future__ import annotations

import json
import re

import pytest

from xcbench.analysis.report import glance
from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.cli import main


def test_one_row_per_point_with_the_stored_verdict_and_the_steady_rate(glance_run):
    path, truth = glance_run
    rd = RunData(path)
    rows = glance.rows(rd)
    pts = rd.points
    assert len(rows) == len(pts)
    stored = {(v.cell_id, float(v.concurrency)): v for v in verdicts_of(rd).itertuples()}
    for r in rows:
        v = stored[(r["cell_id"], float(r["concurrency"]))]
        assert r["verdict"] == v.verdict and r["reason"] == v.reason
        p = pts[(pts["cell_id"] == r["cell_id"]) & (pts["concurrency"] == r["concurrency"])].iloc[0]
        assert r["rate_gbps"] == pytest.approx(p["rate"] * 8 / 1e9)
        assert r["rate_gibps"] == pytest.approx(p["rate"] / 2**30)
        assert 0 < len(r["short_reason"]) <= glance.WIDTH and "\n" not in r["short_reason"]
        assert re.search(r"\d", r["short_reason"]), r  # the figure that decided it
    # each cell's top level is the known answer of the synthetic run
    top = {}
    for r in rows:
        top[r["cell_id"]] = r
    assert {cid: r["verdict"] for cid, r in top.items() if cid in truth} == truth


def test_short_reasons_quote_the_deciding_figure(glance_run):
    rd = RunData(glance_run[0])
    rows = glance.rows(rd)
    by = {r["verdict"]: r["short_reason"] for r in rows}
    assert re.fullmatch(r"\d+ % of fio write [\d.]+ Gb/s", by["storage-bandwidth"])
    assert re.fullmatch(r"pool [\d,]+ op/s, \d+ % of fio [\d,]+ IOPS", by["storage-iops"])
    assert by["ec-overhead"].startswith("EC at ") and "rep3" in by["ec-overhead"]


def test_a_beaten_probe_is_marked_and_an_unknown_verdict_keeps_its_own_words():
    ev = {"rate": 0.254 * 2**30, "utilisation": {"storage-bandwidth": 1.134, "gateway": 0.6},
          "fio_bw": 0.224 * 2**30, "not_ceilings": ["storage-bandwidth"], "direction": "write"}
    b = glance.beaten(ev)
    assert [x["ceiling"] for x in b] == ["storage-bandwidth"]
    assert b[0]["text"] == "113 % of fio bandwidth 1.92 Gb/s"
    assert glance.beaten({"utilisation": {"storage-bandwidth": 0.99}, "fio_bw": 1.0}) == []
    # a verdict this module does not know (e.g. one added later): the reason's first clause
    s = glance.short_reason("borderline", "The chain moves 0.2 GiB/s at 4 transfers (push): "
                            "within the noise of two ceilings; more words.", {})
    assert s == "The chain moves 0.2 GiB/s at 4 transfers (push)"
    assert glance.short_reason("borderline", "x" * 300, {}).endswith("…")
    assert len(glance.short_reason("borderline", "x" * 300, {})) == glance.WIDTH
    # a record's own short reason wins
    assert glance.short_reason("gateway", "long", ev, short="own words 42") == "own words 42"


def test_report_text_and_json(glance_run, capsys, monkeypatch):
    path, _ = glance_run
    monkeypatch.delenv("COLUMNS", raising=False)  # not a terminal: 100 columns (pytest-xdist sets 80)
    assert main(["report", str(path), "--format", "text"]) == 0
    out = capsys.readouterr().out
    rd = RunData(path)
    common = glance.common_words(list(rd.cells["label"]))
    assert common and out.splitlines()[0].endswith(" — " + " ".join(common))  # said once, in the title
    for label in rd.cells["label"]:  # each word of the label (a long verdict may fold the cell column)
        assert all(w in out for w in label.split() if w not in common), label
    assert "Gb/s" in out and "verdicts:" in out
    assert main(["report", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["run"] == rd.run_id and len(doc["points"]) == len(rd.points)
    assert sum(doc["verdict_counts"].values()) == len(rd.points)
    assert not (path / "report.text").exists()


def test_a_borderline_verdict_shows_the_verdicts_it_is_within_noise_of():
    from types import SimpleNamespace
    ev = {"borderline_candidates": [
        {"rule": "storage-bandwidth", "figure": "share of the fio ceiling", "value": 0.87},
        {"rule": "host-cpu", "figure": "otherwise", "otherwise_of": "storage-bandwidth"}]}
    assert glance.near("storage-bandwidth", ev) == ["host-cpu"]
    assert glance.near("host-cpu", ev) == ["storage-bandwidth"]
    assert glance.near("inconclusive", {}) == []
    # the other side of a borderline figure names no cause: said so, not as a verdict name
    doubt = {"borderline_candidates": [{"rule": "inconclusive", "figure": "otherwise", "otherwise_of": "host-cpu"}]}
    assert glance.near("host-cpu", doubt) == ["no cause"]
    from xcbench.analysis.report.closing_text import verdict_text
    assert verdict_text("host-cpu", [], glance.near("host-cpu", doubt)) == "host-cpu (or no cause)"
    row = {"cell": "cephfs ec", "concurrency": 4, "direction": "write", "rate_gbps": 1.5,
           "rate_bytes_per_s": 1.5e9 / 8, "cell_id": "c", "rate_method": "plateau",
           "verdict": "storage-bandwidth", "near": ["host-cpu"], "co_limits": [],
           "short_reason": "87 % of fio write 1.72 Gb/s", "beats": []}
    rd = SimpleNamespace(run_id="r1", run=SimpleNamespace(path="r1"), manifest={"hosts": {"h": {}}})
    lines = glance.lines(rd, [row, {**row, "near": [], "concurrency": 8}], 200)
    # read as "or", never as "approximately"
    assert any("storage-bandwidth (or host-cpu)" in ln and "87 %" in ln for ln in lines)
    assert any(re.match(r"^ +8 ", ln) and "storage-bandwidth" in ln and "(or" not in ln for ln in lines)
