"""docs/: every measured figure in validation.md names the benchmark that produces it (a script
that exists, with flags it takes), and the command-line reference is xcbench's own parser."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.support import clidoc

ROOT = Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "docs" / "validation.md"
STATUS = ("recorded", "to re-measure", "recorded; to re-measure on a quiet box", "superseded")


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Markdown tables: (header, rows), cells stripped."""
    out, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-| ]+\|$", lines[i + 1]):
            head = [c.strip() for c in lines[i].strip("|").split("|")]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            out.append((head, rows))
        else:
            i += 1
    return out


def _figure_rows() -> list[dict[str, str]]:
    return [dict(zip(head, row, strict=True)) for head, rows in _tables(VALIDATION.read_text())
            if "command" in head for row in rows]


def test_every_figure_names_a_benchmark_that_exists_with_flags_it_takes():
    rows = _figure_rows()
    assert len(rows) >= 30
    for r in rows:
        assert r["status"] in STATUS, r
        assert r["status"] != "recorded" or re.match(r"^\d{4}-\d\d-\d\d$", r["measured"]), r
        m = re.fullmatch(r"`(benchmarks/bench_\w+\.py)([^`]*)`", r["command"])
        assert m, f"{r['figure']}: {r['command']!r} is no benchmarks/ command"
        script = ROOT / m[1]
        assert script.is_file(), m[1]
        source = script.read_text()
        for word in shlex.split(m[2]):
            if word.startswith("--"):
                assert f'"{word}"' in source, f"{m[1]} takes no {word}"


def test_the_cli_reference_is_the_parser():
    """Renew with `python -m tests.support.clidoc --write` when a command or a help string changes."""
    assert clidoc.CLI_MD.read_text() == clidoc.render()


def test_the_verdict_rules_are_one_document():
    """docs/verdicts.md is the rules' document the package ships (analysis/verdicts/verdicts.md),
    a link to it: an editor that rewrites the link as a file (``sed -i``) splits them, and the
    two copies drift (it happened once: two edits reached only the docs' copy)."""
    doc, shipped = ROOT / "docs" / "verdicts.md", ROOT / "analysis" / "verdicts" / "verdicts.md"
    assert doc.is_symlink() and doc.resolve() == shipped.resolve(), f"{doc} is not a link to {shipped}"
