"""The plan's HTML report in a real browser (Debian's chromium, headless, offline), like the run
report: no console errors, the plot decodes, and the published reference sits beside the model --
the published figure, the model's theoretical and usable figures and the check in one table row,
the site's network arithmetic beside the model's, and the extrapolation chain one line per factor."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import clean_screenshot, need_chromium, page_check
from xcbench.cli import main

pytestmark = pytest.mark.integration

PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message || e)); }, true);
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var cells = function (sel) {
    var t = document.querySelector(sel);
    if (!t) return null;
    return Array.prototype.map.call(t.tBodies[0].rows, function (r) {
      return Array.prototype.map.call(r.cells, function (c) { return c.textContent.trim(); }); });
  };
  var heads = function (sel) {
    var t = document.querySelector(sel);
    return t ? Array.prototype.map.call(t.tHead.rows[0].cells, function (c) { return c.textContent.trim(); }) : null;
  };
  var pub = document.querySelector("table#published"), visible = false;
  if (pub) { var r = pub.getBoundingClientRect(); visible = r.width > 200 && r.height > 40; }
  var out = document.createElement("pre");
  out.id = "xcb-check";
  out.textContent = JSON.stringify({
    errors: window.__errors, images: imgs.length,
    broken: imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).length,
    published: cells("table#published"), published_heads: heads("table#published"), visible: visible,
    site: cells("table#site-network-table"), chain: cells("table#chain-1"),
    model: (document.getElementById("write-model") || {}).textContent || "",
    differences: Array.prototype.map.call(document.querySelectorAll("#differences li b"),
                                          function (b) { return b.textContent; })});
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    need_chromium()
    out = tmp_path_factory.mktemp("plan") / "plan.html"
    assert main(["plan", "--cluster-spec", "ral-dev-chep2024", "--rate", "24Gb/s", "--write-fraction", "1",
                 "--efficiency", "24/50", "--because", "RAL dev cluster, CHEP 2024",
                 "--format", "html", "--out", str(out)]) == 0
    return out


def test_plan_report_has_no_console_errors_and_a_screenshot(report, tmp_path):
    clean_screenshot(report, tmp_path / "profile", "1280,2400")


def test_published_reference_beside_the_model(report, tmp_path):
    probe = report.with_name("plan-probe.html")
    probe.write_text(report.read_text().replace("</body>", PROBE + "</body>", 1))
    check = page_check(probe, tmp_path / "profile")
    assert check["errors"] == [] and check["images"] >= 1 and check["broken"] == 0
    heads = check["published_heads"]
    assert heads == ["published figure", "published", "model theoretical", "model usable (planned)",
                     "model / published", "check (hover: the rule)"]
    rows = {r[0]: dict(zip(heads, r, strict=True)) for r in check["published"]}
    assert len(rows) == 4 and check["visible"]
    fts = next(v for k, v in rows.items() if "FTS" in k)
    # the measured 24 Gb/s beside the model's 51.6 Gb/s theoretical and 36.1 Gb/s planned
    assert fts["published"].startswith("24 Gb/s")
    assert fts["model theoretical"].startswith("51.6 Gb/s") and fts["model usable (planned)"].startswith("36.1 Gb/s")
    assert fts["check (hover: the rule)"].startswith("holds")
    site = {r[0]: r[1] for r in check["site"]}
    assert site["site rule of thumb"].startswith("50 Gb/s") and site["model (theoretical)"].startswith("51.6 Gb/s")
    chain = [r[0] for r in check["chain"]]
    assert chain[1].startswith("x achieved") and chain[2].startswith("/ theoretical") and len(chain) == 6
    assert "streaming" in check["model"]
    # the model differences name their figure (outside ±25 %: the FTS and the layouts figures)
    assert len(check["differences"]) == 2 and all(d.startswith("measured") for d in check["differences"])
