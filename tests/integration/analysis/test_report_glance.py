"""The answer at a glance on a real run of the demo matrix's shape (the session's ``demo_run``,
tests/support/demorun.py: layouts/quick.yaml with short levels): `xcbench run
--json` ends with one row per cell x level; the report's first screen, in a real browser
(Debian's chromium, headless, 1280x900), shows every cell x level with its verdict in the first
viewport, and no label in the grid is clipped or overlaps another (boxes measured in the page)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.browser import chromium, need_chromium, page_check

pytestmark = pytest.mark.integration

WINDOW = "--window-size=1280,900"

# Injected into a copy of the report: measures the grid's boxes once the page has loaded.
PROBE = """<script>
window.addEventListener("load", function () {
  function box(e) { var r = e.getBoundingClientRect();
    return {l: r.left, t: r.top, r: r.right, b: r.bottom, w: r.width, h: r.height}; }
  function inside(a, b) { return a.l >= b.l - 0.5 && a.r <= b.r + 0.5 && a.t >= b.t - 0.5 && a.b <= b.b + 0.5; }
  function overlap(a, b) { var w = Math.min(a.r, b.r) - Math.max(a.l, b.l), h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
    return w > 1 && h > 1; }
  var out = {vw: window.innerWidth, vh: window.innerHeight, cells: [], clipped: [], overlaps: [],
             page_width: document.documentElement.scrollWidth};
  var g = document.querySelector("table.grid");
  out.grid = g ? box(g) : null;
  if (g) {
    var labels = Array.prototype.slice.call(g.querySelectorAll("thead th, th.cellname"));
    labels.forEach(function (th) {
      if (th.scrollWidth > th.clientWidth + 1) out.clipped.push("label " + th.textContent.trim()); });
    g.querySelectorAll("tbody tr").forEach(function (tr) {
      var name = tr.querySelector("th.cellname").textContent.trim();
      tr.querySelectorAll("td.pt").forEach(function (td) {
        var v = td.querySelector(".verdict");
        out.cells.push({cell: name, level: td.getAttribute("data-level"), verdict: td.getAttribute("data-verdict"),
                        shown: v ? v.textContent.trim() : null, rate: (td.querySelector(".rate") || {}).textContent,
                        why: (td.querySelector(".why") || {}).textContent, title: td.getAttribute("title")});
        var tb = box(td);
        // every text line of every label inside its grid cell, and no two labels on each other
        var parts = [];
        td.querySelectorAll(".rate, .dagger, .gib, .verdict, .why, .beat").forEach(function (e) {
          Array.prototype.forEach.call(e.getClientRects(), function (r) {
            var b = {l: r.left, t: r.top, r: r.right, b: r.bottom, w: r.width, h: r.height, what: e.className};
            if (!inside(b, tb)) out.clipped.push(name + " c=" + td.getAttribute("data-level") + " " + e.className);
            parts.push(b); });
          if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).display === "block")
            out.clipped.push(name + " overflow " + e.className);
        });
        for (var i = 0; i < parts.length; i++) for (var j = i + 1; j < parts.length; j++)
          if (overlap(parts[i], parts[j])) out.overlaps.push(name + ": " + parts[i].what + " / " + parts[j].what);
      });
    });
    var counts = document.querySelectorAll("h2.glance-h .verdict");
    Array.prototype.forEach.call(counts, function (e) { if (box(e).r > out.vw) out.clipped.push("count " + e.textContent); });
    var ctx = document.querySelector("p.context");
    out.context = ctx ? ctx.textContent : null;
    if (ctx && box(ctx).r > out.vw) out.clipped.push("context line");
  }
  var pre = document.createElement("pre"); pre.id = "xcb-check"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
def run(demo_run):
    need_chromium()
    return {"path": demo_run.run.path, "closing": demo_run.closing, "cells": demo_run.cells,
            "levels": demo_run.levels, "stderr": demo_run.stderr}


def test_run_ends_with_the_closing_table_as_data(run):
    doc = run["closing"]
    assert run["cells"] == 6 and run["levels"] == [1, 4]  # the demo's shape
    pts = doc["points"]
    assert len(pts) == run["cells"] * len(run["levels"])
    assert len({p["cell_id"] for p in pts}) == run["cells"]
    for p in pts:
        assert p["verdict"] and p["short_reason"] and len(p["short_reason"]) <= 72
        assert p["rate_gbps"] > 0 and p["rate_gbps"] == pytest.approx(p["rate_bytes_per_s"] * 8 / 1e9)
    assert sum(doc["verdict_counts"].values()) == len(pts)
    # the progress view named the steady rate per level, and the paths went to stderr (--json)
    assert re.search(r"c=4: [\d.]+ Gb/s (steady|over the whole level)", run["stderr"])
    assert f"run: {run['path'].resolve()}" in run["stderr"]


def measure(report: Path, profile: Path, css: str = "") -> dict:
    """The probe's measurements of ``report`` (with ``css`` added) in headless chromium."""
    text = report.read_text()
    probe = report.with_name("report-glance-probe.html")
    probe.write_text(text.replace("</head>", f"<style>{css}</style></head>", 1)
                     .replace("</body>", PROBE + "</body>", 1))
    return page_check(probe, profile, WINDOW)


def test_the_box_check_sees_a_clipped_or_overlapping_label(run, tmp_path):
    """Control: labels pushed onto each other and out of their cells are reported."""
    report = run["path"] / "report.html"
    page = measure(report, tmp_path / "p1", "table.grid .why { margin-top: -1.1em; }")
    assert page["overlaps"], page["overlaps"]
    page = measure(report, tmp_path / "p2", "table.grid td.pt { height: 1em; }"
                   " table.grid .why { position: absolute !important; top: 3em; white-space: nowrap; }")
    assert page["clipped"], page["clipped"]


def test_first_screen_holds_the_grid_with_every_verdict_and_nothing_clipped(run, tmp_path):
    report = run["path"] / "report.html"
    page = measure(report, tmp_path / "profile")
    assert page["vw"] == 1280, page  # the page is laid out 1280 px wide
    # every cell x level, with the verdict of the closing table
    want = {(p["cell"], str(p["concurrency"])): p["verdict"] for p in run["closing"]["points"]}
    got = {(c["cell"], c["level"]): c["shown"] for c in page["cells"]}
    assert got == want
    for c in page["cells"]:
        assert c["verdict"] == c["shown"] and re.fullmatch(r"[\d.,]+", c["rate"].strip()), c
        assert c["why"].strip() and c["title"] and len(c["title"]) >= len(c["why"].strip()), c
    assert page["clipped"] == [] and page["overlaps"] == []
    assert page["page_width"] <= page["vw"]  # nothing pushes the page sideways
    # the first viewport of a 1280x900 screen holds the whole grid (page coordinates: the page
    # is not scrolled; headless chromium's own window may be shorter than 900 px)
    assert 0 < page["grid"]["t"] and page["grid"]["b"] <= 900, page["grid"]
    # the run's context in one line: machine, cores, file size, matrix, what the baseline measured
    ctx = page["context"]
    for s in ("cores", "files 8M", "matrix quick-shape: 6 cells", "levels 1, 4", "network baseline",
              "target 100 Gb/s"):
        assert s in ctx, ctx
    assert "loopback" in ctx  # every role on one machine: the baseline is loopback, and says so
    shot = report.with_name("first-screen.png")
    chromium(tmp_path / "profile2", WINDOW, f"--screenshot={shot}", report.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
