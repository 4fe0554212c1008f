"""The closing table fits the terminal: $COLUMNS (100 when stdout is no terminal), no trailing
spaces, the words every cell's label shares said once in the title, and a figure's '%' never
wrapped alone onto the next line."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from xcbench.analysis.report import glance
from xcbench.analysis.verdicts.run_data import RunData


@pytest.mark.parametrize("columns", [None, "60", "80", "120"])
def test_report_text_fits_columns_with_no_trailing_space(glance_run, columns):
    run, _ = glance_run
    env = {"PATH": "/usr/bin:/bin", **({"COLUMNS": columns} if columns else {})}
    cp = subprocess.run([sys.executable, "-m", "xcbench", "report", str(run), "--format", "text"],
                        capture_output=True, text=True, env=env, timeout=120)
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    width = int(columns or 100)  # piped: 100 columns
    # a word longer than the line (the run's path, RUN=...) cannot fold: it stands alone
    assert [ln for ln in lines if len(ln) > width and len(ln.split()) > 1] == [], "\n".join(lines)
    assert [ln for ln in lines if ln != ln.rstrip()] == []
    assert not [ln for ln in lines if re.search(r"│ +%", ln) or ln.rstrip().endswith("│")], \
        "\n".join(lines)  # no '%' alone at the start of a wrapped reason line
    assert any(ln.startswith("verdicts: ") for ln in lines) and " %" in cp.stdout


def test_common_words_go_to_the_title_once(glance_run):
    rd = RunData(glance_run[0])
    rows = glance.rows(rd)
    common = glance.common_words([r["cell"] for r in rows])
    assert "o1" in common and "push" in common
    text = glance.text(rd, rows, 100)
    assert text.splitlines()[0] == f"what capped each level — run {rd.run_id} — {' '.join(common)}"
    body = text.split("\n", 1)[1]
    assert " o1 push" not in body


def test_common_words_leave_no_label_empty():
    assert glance.common_words(["tmpfs 2G o1 push"]) == []  # one cell: its label stays
    assert glance.common_words(["a b", "a b c"]) == []  # "a b" would be left empty
    assert glance.common_words(["cephfs rep3 o1 push", "rados ec2+1 o1 push"]) == ["o1", "push"]


@pytest.mark.parametrize("columns", [60, 80, 100])
@pytest.mark.parametrize("run", ["demo", "quick-shape"])
def test_no_word_alone_on_a_line_and_one_home_per_phrase(columns, run):
    """The stored runs (tests/data/runs: a demo, the demo's matrix with short levels): at 60-100
    columns every line of the closing table holds two words or more (a cell's label line
    excepted), and the host-cpu reason does not repeat the phrases the old table said on every
    row; the levels to settle are said piped too."""
    from tests.support.readme import RUNS
    from xcbench.analysis.report import glance
    rd = RunData(RUNS / run)
    rows = glance.rows(rd)
    labels = {glance._without(r["cell"], glance.common_words([x["cell"] for x in rows])) for r in rows}
    lines = glance.lines(rd, rows, columns)
    # a word longer than the line (a run's path in a command) stands alone, the rest fits
    assert [ln for ln in lines if len(ln) > columns and len(ln.rstrip(" \\").split()) > 1] == []
    # the run's path, said once as RUN=...: a copyable command whose length is the checkout's
    # (a CI clone's path may be long), not a word the table folded away from its sentence
    alone = [ln for ln in lines if len(ln.split()) == 1 and ln.strip() not in labels
             and not ln.strip().startswith("RUN=")]
    assert alone == []
    text = "\n".join(lines)
    assert "no role at limit" not in text and "most:" not in text and " + " not in text
    assert ("what would settle a level:" in text) == any(r["near"] or r["verdict"] == "inconclusive"
                                                          for r in rows)


def test_many_candidates_wrap_between_them_not_the_reasons():
    """A level with four borderline candidates (the demo on a busy box: 'host-cpu (or ec-overhead
    or storage-bandwidth or inconclusive or storage-disk)'): the candidates break between them,
    so the reasons keep their column at 80 (kept as one part, the verdict column was 70 wide,
    the reasons 12, and 14 lines held one word)."""
    from xcbench.analysis.report.closing_text import WHY_MIN, Row, lay_out, verdict_column
    why = ("scaling efficiency 0.348 (at most 0.348 < 0.5), the chain's threads wait for the CPU "
           "41 % of the time")
    rows = [Row("cephfs su=4M sc=1 os=4M ec2+1", "1", "1.27", "host-cpu", [],
                ["ec-overhead", "storage-bandwidth", "no cause", "storage-disk"], why),
            Row("cephfs su=4M sc=1 os=4M ec2+1", "4", "1.77", "host-cpu", [], ["ec-overhead"],
                "host CPU 97 %: osd 1.1, mount 0.28 cores")]
    lines = lay_out("what capped each level", rows, 80)
    start, vw = verdict_column(rows, 80)
    assert max(len(ln) for ln in lines) <= 80, "\n".join(lines)
    assert 80 - start - vw - 2 >= WHY_MIN, (start, vw)
    body = [ln for ln in lines[2:] if ln != rows[0].cell]
    assert [ln for ln in body if len(ln.split()) == 1] == [], "\n".join(lines)
    text = "\n".join(lines)
    for c in rows[0].near:  # every candidate said, none cut
        assert re.search(rf"\b{c}\b", text), text
