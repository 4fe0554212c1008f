"""`xcbench report RUN --format md` pastes into a GitHub or GitLab comment unchanged: rendered as
GitHub renders a comment (CommonMark with GFM tables, every newline inside a paragraph a line
break), no line break falls inside a paragraph or a list item and no code span is cut in two;
a "what would settle" line keeps its command in a code span of its own, apart from the prose."""

from __future__ import annotations

import re
import shutil

import pytest
from markdown_it import MarkdownIt

from tests.support.readme import BORDERLINE_RUN
from xcbench.analysis.report.document import render_report


def comment_html(text: str) -> tuple[str, list]:
    """HTML and tokens of ``text`` as a GitHub comment renders it (newlines are breaks)."""
    md = MarkdownIt("commonmark", {"breaks": True, "html": False}).enable(["table", "strikethrough"])
    return md.render(text), md.parse(text)


def breaks_inside(text: str) -> list[str]:
    """The text before each line break a comment would show (none expected)."""
    html, _ = comment_html(text)
    return [html[max(0, m.start() - 80):m.start()] for m in re.finditer(r"<br\s*/?>", html)]


@pytest.fixture(scope="module")
def report_md(tmp_path_factory) -> str:
    run = tmp_path_factory.mktemp("md") / BORDERLINE_RUN.name
    shutil.copytree(BORDERLINE_RUN, run)
    return render_report([run], "md").read_text()


def test_no_line_break_inside_a_sentence(report_md):
    assert breaks_inside(report_md) == []


def test_no_code_span_is_cut_and_commands_stand_apart(report_md):
    _, tokens = comment_html(report_md)
    spans = [c.content for t in tokens if t.children for c in t.children if c.type == "code_inline"]
    assert spans and all("\n" not in s for s in spans)
    settle = [s for s in spans if s.startswith("xcbench confirm ")]
    assert settle, "the run has borderline levels: a confirm command for each"
    for s in settle:  # the command alone: no prose in its span
        assert re.fullmatch(r"xcbench confirm \S+( --\w[\w-]* \S+)+", s), s


def test_the_check_sees_a_folded_paragraph():
    """Control: a paragraph folded at 40 columns, as the report did at 120, shows its breaks."""
    folded = "A level's rate is the bytes moved in its window\nover the window's seconds.\n"
    assert breaks_inside(folded) and not breaks_inside(folded.replace("\n", " ", 1))
