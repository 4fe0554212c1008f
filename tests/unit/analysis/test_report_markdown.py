"""`xcbench report RUN --format md` for a ticket, on a run of the demo's shape (tmpfs, CephFS and
RADOS cells on replicated and EC pools, several levels, a finding in two cells): no line over
120 characters, findings grouped by kind with the cells' labels (no cell hash), timestamps to
the second, no column that is empty in every row; `report --help` says what md gives."""

from __future__ import annotations

import re

import pytest

from tests.support.synthrun import make_run, mixed_cells
from xcbench.analysis.report import markdown
from xcbench.analysis.report.document import render_report
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.cli import main


@pytest.fixture(scope="module")
def md(tmp_path_factory):
    cells = mixed_cells()
    for c in cells:
        c.files, c.repeats = 16, 1  # one repeat, as the demo: no CI
        c.concurrency = tuple(x for x in c.concurrency if x <= 4) or c.concurrency
    d = tmp_path_factory.mktemp("md")
    path, _ = make_run(d, cells)
    out = render_report([path], "md", d / "r.md")
    return path, out.read_text(), d


def _tables(text: str) -> list[list[list[str]]]:
    out, cur = [], []
    for ln in text.splitlines() + [""]:
        if ln.startswith("|"):
            cur.append([c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]])
        elif cur:
            out.append(cur)
            cur = []
    return out


def test_no_table_line_over_120_characters_and_no_prose_folded(md):
    _, text, _ = md
    long = [ln for ln in text.splitlines() if len(ln) > markdown.WIDTH and ln.startswith("|")]
    assert long == []
    # a paragraph is one line (a ticket shows every newline of a comment as a line break)
    paras = [p for p in text.split("\n\n") if p.strip() and not p.lstrip().startswith(("|", "#", "-"))]
    assert paras and all("\n" not in p.strip() for p in paras), [p for p in paras if "\n" in p.strip()]
    assert len(_tables(text)) >= 4  # the verdicts, layouts, network and EC tables are there


def test_findings_are_grouped_by_kind_with_the_cells_labels(md):
    path, text, _ = md
    rd = RunData(path)
    f = rd.findings
    assert len(f) == 2 and f["what"].nunique() == 1  # the same finding in the two RADOS cells
    sec = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    items = [ln for ln in sec.splitlines() if ln.startswith("- ")]
    assert len(items) == 1 and "XrdCeph pgread crash" in items[0]
    for cid in f["cell_id"]:
        assert cid not in sec  # named by label, not by hash
        assert rd.cells.loc[cid, "label"] in " ".join(sec.split())
    assert "In 2 cells" in sec


def test_timestamps_to_the_second_and_no_empty_column(md):
    _, text, _ = md
    assert not re.search(r"\d\d:\d\d:\d\d\.\d+", text)  # no microseconds
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC → ", text)
    for t in _tables(text):
        head, body = t[0], t[2:]
        for i, h in enumerate(head):
            assert any(r[i] not in ("", "–") for r in body) or not body, f"column {h!r} is empty"
    assert "CI" not in text.split("## Layouts", 1)[1].split("\n## ", 1)[0]  # one repeat: no CI column


def test_the_verdicts_are_one_row_per_level_under_their_cell(md):
    path, text, _ = md
    rd = RunData(path)
    sec = text.split("## Verdicts", 1)[1].split("\n## ", 1)[0]
    levels = [ln for ln in sec.splitlines() if ln.startswith("| c=")]
    assert len(levels) == len(rd.points)
    assert "all o1 push" in sec  # the words every label has, said once
    heads = [ln for ln in sec.splitlines() if ln.startswith("| **")]
    assert len(heads) == len(rd.cells) and not any("o1 push" in h for h in heads)


def test_help_says_what_md_gives_and_no_files_dir_is_written(md, capsys):
    _, _, d = md
    assert not (d / "r_files").exists() and "data:image" not in md[1]
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "_files" not in out and "Markdown for a ticket" in out and "no images" in out


def test_a_table_too_wide_moves_constant_columns_shortens_headers_then_notes():
    cols = [{"key": "cell", "label": "cell"}, {"key": "mode", "label": "mode"},
            {"key": "su", "label": "stripe unit", "num": True}, {"key": "ci", "label": "95 % CI (Gb/s)"},
            {"key": "why", "label": "why"}]
    rows = [{"cell": f"cephfs cell {i}", "mode": "push", "su": f"{i}M", "ci": "–", "why": f"{i} " + "x" * 150}
            for i in range(3)]
    t = markdown.table(rows, cols)
    lines = t.splitlines()
    assert max(len(ln) for ln in lines if ln.startswith("|")) <= markdown.WIDTH
    assert lines[0] == "| cell | su | why |"  # the empty CI column is gone, mode is constant
    assert "In every row: mode push." in t and "su: stripe unit" in t
    assert lines[2].endswith("| [1] |")  # the long text moves under the table, every word kept
    assert "".join(t.split()).count("x" * 150) == 3
    narrow = markdown.table(rows[:1], cols[:3])
    assert narrow.splitlines()[0] == "| cell | mode | stripe unit |"  # fits: left as it is


def test_short_times_and_nothing_folded():
    assert markdown.short_time("2026-11-27T16:57:03.947571+00:00") == "2026-11-27 16:57:03 UTC"
    assert markdown.short_time("2026-11-27T17:57:03.5+01:00") == "2026-11-27 16:57:03 UTC"
    assert markdown.short_time(None) == "?"
    text = "word " * 60 + "\n\n\n\n| " + "t" * 200 + " |\n- " + "item " * 40
    out = markdown.wrap(text)
    assert out == text.replace("\n\n\n\n", "\n\n")  # no line folded; blank lines made one


def test_markdown_draws_no_figure_and_says_what_a_full_render_says(md, monkeypatch):
    """The Markdown report shows no image, so it draws none (drawing is most of a render): its
    text is the one rendered from a context that has every plot (each a stand-in image here:
    one shown would differ from none)."""
    import matplotlib.pyplot as plt

    from xcbench.analysis.report import document, render
    path, text, d = md
    mods = ("plots", "scaling", "network_baseline", "dimensions", "readwrite", "storageplots")

    def stand_in(fig, dpi=100):
        plt.close(fig)
        return "data:image/png;base64,AAAA"
    with monkeypatch.context() as m:
        for mod in mods:
            m.setattr(f"xcbench.analysis.report.{mod}.fig_to_data_uri", stand_in)
        ctx = document.build_context([RunData(path)], images=True)
        assert ctx["runs"][0]["timelines"] and ctx["runs"][0]["figures"]  # it has plots
        full = render.render("report", ctx, "md")

    def no_figure(*a, **k):
        raise AssertionError("a figure was drawn for the Markdown report")
    for mod in mods:
        monkeypatch.setattr(f"xcbench.analysis.report.{mod}.new_figure", no_figure)
    out = render_report([path], "md", d / "again.md").read_text()
    dated = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")
    assert dated.sub("", out) == dated.sub("", markdown.wrap(full)) == dated.sub("", text)
