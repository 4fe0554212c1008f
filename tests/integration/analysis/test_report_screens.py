"""The report as people see it, in a real browser (Debian's chromium, headless, offline), on a
synthetic run with every verdict the generator makes and on the real run of the demo's shape
(``demo_run``): the first screen (1280x900) shows a verdict in every grid cell and no text on
another text (boxes from the page's getBoundingClientRect); the throughput plot labels every
point with its verdict and no label touches another text (boxes from matplotlib's renderer),
and its image is shown whole; printed, the summary is one page; the Markdown has no table row over
120 characters (a paragraph is one line: a ticket breaks lines where the text does) and each kind
of finding once. Screenshots are saved next to the reports."""

from __future__ import annotations

import base64
import itertools
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from tests.support.browser import chromium, need_chromium, page_check
from tests.support.figtext import _texts
from tests.support.synthrun import make_run, mixed_cells
from xcbench.analysis.report import markdown, scaling
from xcbench.analysis.report.document import render_report
from xcbench.analysis.report.overview import TARGET_BYTES_PER_S
from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.run_data import RunData

pytestmark = pytest.mark.integration


# the first screen's texts: every leaf text element inside the first viewport
PROBE = """<script>
window.addEventListener("load", function () {
  var vh = window.innerHeight, out = {cells: [], overlaps: [], texts: 0};
  function box(e) { var r = e.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; }
  function overlap(a, b) { var w = Math.min(a.r, b.r) - Math.max(a.l, b.l), h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
    return w > 1 && h > 1; }
  var sel = "h1, p.context, h2.glance-h .counts .verdict, table.grid thead th, table.grid th.cellname, " +
            "table.grid .rate, table.grid .gib, table.grid .verdict, table.grid .why, table.grid .beat, " +
            "table.grid .near, table.grid .dagger";
  var parts = [];
  document.querySelectorAll(sel).forEach(function (e) {
    Array.prototype.forEach.call(e.getClientRects(), function (r) {
      if (r.top >= vh || r.width < 1) return;
      parts.push({what: e.className || e.tagName, text: e.textContent.trim().slice(0, 30),
                  b: {l: r.left, t: r.top, r: r.right, b: r.bottom}});
    });
  });
  out.texts = parts.length;
  for (var i = 0; i < parts.length; i++) for (var j = i + 1; j < parts.length; j++)
    if (overlap(parts[i].b, parts[j].b)) out.overlaps.push(parts[i].text + " / " + parts[j].text);
  document.querySelectorAll("table.grid td.pt").forEach(function (td) {
    var v = td.querySelector(".verdict");
    out.cells.push({verdict: td.getAttribute("data-verdict"), shown: v ? v.textContent.trim() : "",
                    visible: box(td).t < vh});
  });
  var img = document.querySelector("figure[id^=fig-scaling] img");
  out.plot = img ? {natural: img.naturalWidth, shown: img.getBoundingClientRect().width} : null;
  var pre = document.createElement("pre"); pre.id = "xcb-check"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    cells = mixed_cells()
    for c in cells:
        c.concurrency, c.files, c.repeats = (1, 2, 4), 16, 1
    path, _ = make_run(tmp_path_factory.mktemp("screens"), cells)
    return path


@pytest.fixture(params=["synthetic", "demo"])
def run_path(request) -> Path:
    need_chromium()
    if request.param == "demo":
        return request.getfixturevalue("demo_run").run.path
    return request.getfixturevalue("synthetic")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """One HTML report per run for the module's tests (a render takes seconds): the tests read it
    and write their own files beside it, never into it."""
    made: dict[Path, Path] = {}

    def html(run: Path) -> Path:
        if run not in made:
            made[run] = render_report([run], "html", tmp_path_factory.mktemp("report") / "report.html")
        return made[run]
    return html


def _measure(report: Path, profile: Path) -> dict:
    probe = report.with_name("report-screens-probe.html")
    probe.write_text(report.read_text().replace("</body>", PROBE + "</body>", 1))
    return page_check(probe, profile, "--window-size=1280,900")


def test_first_screen_every_verdict_shown_and_no_text_on_another(run_path, rendered, tmp_path):
    report = rendered(run_path)
    shot = report.with_name("first-screen.png")
    out = chromium(tmp_path / "profile", "--window-size=1280,900", f"--screenshot={shot}", report.as_uri())
    assert out.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = _measure(report, tmp_path / "profile2")
    rd = RunData(run_path)
    assert len(page["cells"]) == len(rd.points) and page["texts"] > 3 * len(rd.points)
    assert all(c["shown"] and c["shown"] == c["verdict"] for c in page["cells"]), page["cells"]
    assert page["overlaps"] == []
    assert page["plot"] and page["plot"]["shown"] >= 0.75 * page["plot"]["natural"]  # not shrunk to unreadable


def test_throughput_plot_labels_every_point_and_no_label_touches_a_text(run_path, rendered, tmp_path):
    rd = RunData(run_path)
    verdicts = verdicts_of(rd)
    fig = scaling.figure([("", rd.points, scaling.ceilings(verdicts))], rd.cells, TARGET_BYTES_PER_S)
    texts = _texts(fig)
    names = set(verdicts["verdict"])
    labels = [t for t in texts if t[0] in names and t[1].height < 30]  # the point labels
    writes = rd.points[rd.points["direction"] == "write"] if "direction" in rd.points else rd.points
    assert len(labels) == len(writes[writes["rate"] > 0])  # every point labelled, once
    hits = [(a, c) for (a, ba), (c, bc) in itertools.combinations(texts, 2)
            if ba.overlaps(bc) and ba.intersection(ba, bc).width > 1 and ba.intersection(ba, bc).height > 1]
    assert hits == []
    legend = [t[0] for t in texts if "the chain" in t[0]]
    one_repeat = not (rd.points["repeats"] > 1).any()
    assert legend and (("no CI bars" in legend[0]) == one_repeat)
    assert any("host's cores" in t[0] for t in texts)
    plt.close(fig)
    # the report's PNG of it, alone in the browser: a screenshot to look at, the image whole
    html = rendered(run_path).read_text()
    uri = re.search(r'<figure id="fig-scaling[^"]*"><img src="(data:image/png;base64,[^"]+)"', html).group(1)
    png = base64.b64decode(uri.split(",", 1)[1])
    page = tmp_path / "plot.html"
    page.write_text(f'<!DOCTYPE html><html><body style="margin:0"><img src="{uri}"></body></html>')
    shot = tmp_path / "throughput-plot.png"
    w, h = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    out = chromium(tmp_path / "profile", f"--window-size={w},{h}", f"--screenshot={shot}", page.as_uri())
    assert out.returncode == 0 and shot.stat().st_size > 20_000


def test_printed_the_summary_is_one_page(run_path, rendered, tmp_path):
    report = rendered(run_path)
    pdf = tmp_path / "report.pdf"
    out = chromium(tmp_path / "profile", "--no-pdf-header-footer", f"--print-to-pdf={pdf}", report.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf.read_bytes()))
    assert pages == 1
    assert "@media print" in report.read_text()


def test_markdown_lines_and_findings(run_path, tmp_path):
    text = render_report([run_path], "md", tmp_path / "r.md").read_text()
    assert [ln for ln in text.splitlines() if ln.startswith("|") and len(ln) > markdown.WIDTH] == []
    assert [ln for ln in text.splitlines() if ln.startswith("|")]  # the verdict table is there
    rd = RunData(run_path)
    if len(rd.findings):
        sec = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
        items = [ln for ln in sec.splitlines() if ln.startswith("- ")]
        assert len(items) == len(rd.findings.drop_duplicates(["severity", "what", "why", "fix"]))
        assert not any(cid in sec for cid in rd.cells.index)  # cells by label, never by hash
