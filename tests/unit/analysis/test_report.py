"""The report: self-contained HTML + Markdown twin, verdicts first, plots with units, escaping."""

from __future__ import annotations

import base64
import json
import re
import shutil

import pytest

from tests.support.synthrun import SynthCell, make_run, mixed_cells, role_cells
from xcbench.analysis.report import plots, render
from xcbench.analysis.report.document import render_report
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.figures.units import gbps_num
from xcbench.store.rundir import RunDir


@pytest.fixture(scope="module")
def run_path(tmp_path_factory):
    cells = mixed_cells()[:4]
    for c in cells:  # small: rendering is what these tests exercise
        c.concurrency, c.files = (2, 8), 24
    path, _ = make_run(tmp_path_factory.mktemp("rep"), cells)
    run = RunDir.open(path)
    run.append("findings", [{"cell_id": "x", "what": "<script>alert(1)</script>", "why": "a|b",
                             "fix": "f", "severity": "warning"}])
    run.close()
    run.finalize("complete")
    return path


@pytest.fixture(scope="module")
def html(run_path, tmp_path_factory):
    out = render_report([run_path], "html", tmp_path_factory.mktemp("out") / "report.html")
    return out.read_text()


def test_html_is_self_contained_and_verdicts_come_first(html):
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched from anywhere
    assert "<link" not in html
    order = [html.index(s) for s in ("Verdicts: what capped each cell", "Layouts: IO rate and IOPS",
                                     "Throughput vs concurrency", "Rate timelines",
                                     "Per-transfer throughput", "fio probes", "Configuration fingerprint",
                                     "How verdicts are reached", 'id="sources"')]
    assert order == sorted(order)
    assert "table.sortable" in html and "addEventListener" in html


def test_every_image_is_an_inline_png(html):
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert len(srcs) >= 4 + 3  # scaling, 4 timelines, distributions, fio
    for s in srcs:
        assert s.startswith("data:image/png;base64,")
        png = base64.b64decode(s.split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_every_row_has_a_source_and_sources_are_listed(html):
    data = json.loads(re.search(r'<script type="application/json" id="xcb-sources">(.*?)</script>',
                                html, re.S).group(1))
    ns = [int(n) for n in re.findall(r'href="#src-(\d+)"', html)]
    assert ns and sorted(set(ns)) == [d["n"] for d in data]
    for d in data:
        assert f'id="src-{d["n"]}"' in html
        for f in d["figures"].values():
            assert f["spec"]["run"] == "synthetic" and f["spec"]["table"]


def test_user_text_is_escaped(html):
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_tables_hold_the_figures(run_path, html):
    rd = RunData(run_path)
    p = rd.points.iloc[0]
    assert f'data-sort="{p["rate"]}"' in html
    assert gbps_num(p["rate"]) in html
    for v in ("gateway", "storage-bandwidth", "ec-overhead"):
        assert f'<span class="verdict v-{v}">{v}</span>' in html
    assert "16.2.15" in html and "xcb-ec2-1" in html  # fingerprint: versions, pool


def test_every_rate_is_in_gb_s_and_gib_s_only_in_brackets_beside_it(run_path, html, tmp_path):
    """One rate unit (decimal Gb/s); GiB/s only in brackets after a Gb/s figure, for fio users."""
    md = render_report([run_path], "md", tmp_path / "r.md").read_text()
    for text in (html, md):
        assert "Gb/s" in text
        beside = re.findall(r"Gb/s\s*\([^()]*GiB/s|\([^()]*Gb/s[^()]*GiB/s", text)
        assert text.count("GiB/s") == len(beside)


def test_markdown_for_a_ticket(run_path, tmp_path):
    """Short: the closing table and the verdict counts first, the layout table; no images, no
    links (a ticket shows neither relative paths nor anchors), no sources (they are in the HTML)."""
    out = render_report([run_path], "md", tmp_path / "r.md")
    md = out.read_text()
    assert md.startswith("# xcbench report")
    assert md.index("## Verdicts") < md.index("## Layouts")
    assert "## Sources" not in md and "DataFrame.query" not in md and "cell_id ==" not in md
    assert not re.search(r"\]\(", md) and "data:image" not in md and not (tmp_path / "r_files").exists()
    rd = RunData(run_path)
    rows = [ln for ln in md.splitlines() if ln.startswith("| c=") and "**" in ln]
    assert len(rows) == len(rd.points)  # one row per cell x level, its verdict in bold
    assert all(ln.count("|") == 5 for ln in rows)
    assert "stripe unit" in md and "a|b" in md  # a finding's text as given (a list item, no table)
    assert len(md.splitlines()) < 160
    assert max(len(ln) for ln in md.splitlines() if ln.startswith("|")) <= 120  # tables fit; prose is not folded


def test_two_runs_and_the_cli(run_path, tmp_path, capsys):
    other = tmp_path / "store"
    shutil.copytree(run_path, other / "again")
    assert main(["report", str(run_path), "again", "--store", str(other), "--out",
                 str(tmp_path / "two.html")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "two.html")
    text = (tmp_path / "two.html").read_text()
    assert "Compare synthetic → again" in text and "Run again" in text
    # the runs overlaid in one throughput plot, ahead of each run's own report
    assert text.count('id="fig-overlay"') == 1 and text.index('id="fig-overlay"') < text.index('id="run-')
    assert "Runs overlaid" in text and "(synthetic, again)" in text
    assert main(["report", "missing-run", "--store", str(other)]) == 2


def test_every_plot_says_its_units(run_path, monkeypatch):
    seen = []
    real = plots.fig_to_data_uri

    def capture(fig, dpi=100):
        seen.append([(a.get_xlabel(), a.get_ylabel()) for a in fig.axes])
        return real(fig, dpi)
    monkeypatch.setattr(plots, "fig_to_data_uri", capture)
    render_report([run_path], "html", run_path / "units.html")
    assert len(seen) >= 4
    unit = re.compile(r"\((Gb/s|Gb/s, log|%|op/s|s|cores busy|cores|transfers in flight|op/s, log scale)\)")
    for axes in seen:
        labelled = [lab for xy in axes for lab in xy if lab]
        assert labelled and all(unit.search(lab) for lab in labelled), labelled


def test_the_timeline_shows_each_roles_cpu_against_its_limit(tmp_path, monkeypatch):
    cells = [c for c in role_cells() if c.expect in ("client", "host-cpu")]
    for c in cells:
        c.concurrency, c.files = (8,), 24
    path, _ = make_run(tmp_path, cells)
    panels = []
    real = plots.fig_to_data_uri

    def capture(fig, dpi=100):
        for a in fig.axes:
            if a.get_ylabel() == "role CPU\n(cores)":  # roles in the figure's legend, limits on their lines
                panels.append([t.get_text() for t in fig.legends[0].get_texts()] + [t.get_text() for t in a.texts])
        return real(fig, dpi)
    monkeypatch.setattr(plots, "fig_to_data_uri", capture)
    render_report([path], "html", path / "roles.html")
    assert len(panels) == 2
    client = next(p for p in panels if "limit 0.5: client (cgroup v1 cpu.cfs_quota_us=50000/100000)" in p)
    assert "client CPU" in client and "gateway CPU" in client
    host = next(p for p in panels if p is not client)
    assert "mds CPU (limit unknown)" in host and "limit 8: host cores" in host
    assert {"gateway CPU", "client CPU", "osd CPU", "mount CPU"} <= set(host)


def test_render_helper_is_strict_and_generic(tmp_path):
    with pytest.raises(XcbError, match="report.html.j2: 'title' is undefined"):
        render.render("report", {}, "html")
    with pytest.raises(XcbError, match="report format 'pdf'"):
        render.render("report", {}, "pdf")
    with pytest.raises(XcbError, match="template not found"):
        render.render("nope", {}, "md")
    fig, ax = render.new_figure()
    ax.plot([1, 2], [1, 2])
    uri = render.fig_to_data_uri(fig)
    out = render.write_report(f"![x]({uri})\n", tmp_path / "a.md", "md")
    assert out.read_text() == "![x](a_files/fig1.png)\n"


def test_a_run_without_timeline_table_is_rebuilt_from_transfers(tmp_path):
    path, _ = make_run(tmp_path, [SynthCell("tmpfs", concurrency=(2,), files=16)])
    (path / "timeline.parquet").unlink()
    (path / "records" / "timeline.jsonl").unlink()
    out = render_report([path], "html", tmp_path / "r.html")
    text = out.read_text()
    assert "timelines rebuilt from the transfer records" in text
    assert "figures.steady.timeline_from_transfers" in text


def test_runs_without_campaigns_or_records_still_render(tmp_path):
    cells = mixed_cells()[:2]
    for c in cells:
        c.concurrency, c.files = (2,), 8
    path, _ = make_run(tmp_path, cells)
    for t in ("transfers", "timeline", "campaigns"):  # e.g. a probes-only run
        (path / f"{t}.parquet").unlink()
        (path / "records" / f"{t}.jsonl").unlink()
    text = render_report([path], "html", tmp_path / "probes-only.html").read_text()
    assert "fio probes" in text and "No timeline." in text
    empty = RunDir.create(tmp_path, name="empty", fingerprint=False)  # just started, nothing yet
    assert "status <b>running</b>" in render_report([empty.path], "html", tmp_path / "e.html").read_text()
    assert render_report([empty.path], "md", tmp_path / "e.md").exists()
