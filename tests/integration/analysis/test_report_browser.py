"""The HTML report in a real browser (Debian's chromium, headless, offline): no console
errors, every plot image decodes, the sortable tables sort, and a screenshot is saved next to
the report (report.png) for people to look at."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import chromium, clean_screenshot, console_messages, need_chromium, page_check
from tests.support.synthrun import make_run, mixed_cells
from xcbench.analysis.report.document import render_report

pytestmark = pytest.mark.integration

# Console messages with --enable-logging=stderr: [..:INFO:CONSOLE:12] "msg", source: ... (older: CONSOLE(12))

# Injected into a copy of the report only: records errors, then checks images and sorting.
PROBE_HEAD = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message || e)); }, true);
(function () { var orig = console.error; console.error = function () {
  window.__errors.push(Array.prototype.join.call(arguments, " ")); orig.apply(console, arguments); }; })();
</script>"""
PROBE_TAIL = """<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                   .map(function (i) { return i.alt; });
  var t = document.querySelector("table[id^=points-]"), sorted = null;
  if (t) {
    var col = 3;  // steady mean (GiB/s)
    var th = t.tHead.rows[0].cells[col];
    var vals = function () { return Array.prototype.map.call(t.tBodies[0].rows, function (r) {
      return parseFloat(r.cells[col].getAttribute("data-sort")); }); };
    th.click(); th.click();  // ascending, then descending
    var v = vals(), ok = true;
    for (var k = 1; k < v.length; k++) { if (v[k - 1] < v[k]) ok = false; }
    sorted = ok && th.getAttribute("data-dir") === "desc";
  }
  var out = document.createElement("pre");
  out.id = "xcb-check";
  out.textContent = JSON.stringify({images: imgs.length, broken: broken, errors: window.__errors,
                                    sorted: sorted});
  document.body.appendChild(out);
});
</script>"""






@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    need_chromium()
    cells = mixed_cells()[:5]
    for c in cells:
        c.concurrency, c.files = (2, 8), 24
    path, _ = make_run(tmp_path_factory.mktemp("browser"), cells)
    return render_report([path], "html", path / "report.html")


def test_console_logging_is_detected_at_all(tmp_path):
    """Control: a page that logs an error is caught by the same parsing (else 'no errors' means nothing)."""
    need_chromium()
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>console.error('xcb-marker');"
                    "undefinedFunction();</script></body></html>")
    out = chromium(tmp_path / "profile", "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri())
    msgs = console_messages(out.stderr)
    assert any("xcb-marker" in m for m in msgs), out.stderr[-2000:]
    assert any("undefinedFunction" in m for m in msgs), out.stderr[-2000:]


def test_report_has_no_console_errors_and_a_screenshot_is_saved(report, tmp_path):
    clean_screenshot(report, tmp_path / "profile", "1280,3200")


def test_every_plot_loads_and_tables_sort(report, tmp_path):
    text = report.read_text()
    probe = report.with_name("report-probe.html")
    probe.write_text(text.replace("<head>", "<head>" + PROBE_HEAD, 1)
                     .replace("</body>", PROBE_TAIL + "</body>", 1))
    check = page_check(probe, tmp_path / "profile")
    assert check["errors"] == []
    assert check["images"] == text.count("<img ") and check["images"] >= 8
    assert check["broken"] == []
    assert check["sorted"] is True
