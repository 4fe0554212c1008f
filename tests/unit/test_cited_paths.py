"""Every file a comment or a docstring cites is in this repository: a reader who follows
``see xcbench/ceph/bootstrap.py`` or ``docs/verdicts.md`` finds it (not a note on a machine of
the authors', not a file that moved). Files of other projects are named as such in EXTERNAL.

Cited: a word ending in a source or document suffix (.py .md .j2 .toml .ini .cfg .sh), with or
without directories; it must be a file git tracks, whole or as the tail of one's path.

A section of a document is cited as ``docs/verdicts.md#noise-between-runs`` (the id GitHub gives
the heading, as a Markdown link writes it) or ``docs/validation.md, "The demo"`` (the heading as
written), in a comment, a docstring or any string (a --help text): the heading must be in that
file. The README is cited by its path (README.md, README.md#reading-a-verdict), never as a bare
"README": its sections moved to docs/ (issue 46), and a pointer nobody can check went stale.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

from tests.support import readme

ROOT = Path(__file__).resolve().parents[2]
SELF = "tests/unit/test_cited_paths.py"  # its examples of what it refuses are strings
# where comments are: Python's, those of the build and CI files, and the matrices' and plans' YAML
OTHER = ("Makefile", "tox.ini", "pyproject.toml", "mypy.ini", ".ci/run")
CITED = re.compile(r"(?<![\w./:-])((?:[\w.-]+/)*[\w-]+\.(?:py|md|j2|toml|ini|cfg|sh))\b")
# a section of a document: its path, then #anchor or , "Heading"
SECTION = re.compile(r"(?<![\w./:-])((?:[\w.-]+/)*[\w-]+\.md)(?:#([\w-]+)|,? \"([^\"\n]+)\")")
BARE_README = re.compile(r"\bREADME\b(?!\.md)")
README_TESTS = ("tests/support/readme.py", "tests/unit/test_readme.py")  # about the file itself
# files of other projects a comment names, with whose they are
EXTERNAL = {
    "vstart.sh": "Ceph's development cluster script",
    "fasterdata-tuning.sh": "OSG's networking repository (github.com/osg-htc/networking)",
    "docs/perfsonar/tools_scripts/fasterdata-tuning.sh": "the same, its path there",
    "sitecustomize.py": "Python's start-up hook (a file an attacker may plant)",
}


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def scanned(files: list[str]) -> list[tuple[str, Path]]:
    """(name, path) of the files ``files`` (tracked) whose comments are read."""
    return [(f, ROOT / f) for f in files if (f.endswith(".py") or f in OTHER or
            (f.endswith(".yaml") and not f.startswith("tests/"))) and (ROOT / f).exists()]


def texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and docstring of ``path``."""
    src = path.read_text()
    if path.suffix != ".py":
        for i, line in enumerate(src.splitlines(), 1):
            if "#" in line:
                yield i, line[line.index("#"):]
        return
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node.body[0].lineno, doc


def missing(files: list[str], sources: list[tuple[str, Path]]) -> list[str]:
    """``where: cited`` for each cited file that ``files`` (repository paths) do not hold."""
    names = {Path(f).name for f in files}

    def found(cited: str) -> bool:
        if "/" not in cited:
            return cited in names
        return any(f == cited or f.endswith("/" + cited) for f in files)

    return [f"{name}:{line}: {m.group(1)}" for name, path in sources for line, text in texts(path)
            for m in CITED.finditer(text) if m.group(1) not in EXTERNAL and not found(m.group(1))]


def said(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and string of ``path`` (docstrings, --help texts, messages)."""
    if path.suffix != ".py":
        yield from texts(path)
        return
    src = path.read_text()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def stale_sections(files: list[str], sources: list[tuple[str, Path]], root: Path) -> list[str]:
    """``where: what`` for each cited section whose heading its file does not have, and each bare
    name of the readme (outside its own tests)."""
    out = []
    for name, path in sources:
        if name == SELF:
            continue
        for line, text in said(path):
            for m in BARE_README.finditer(text) if name not in README_TESTS else ():
                out.append(f"{name}:{line + text.count(chr(10), 0, m.start())}: a bare README (cite "
                           "README.md#anchor, or the docs/ file that holds the section now)")
            for m in SECTION.finditer(text):
                targets = [f for f in files if f == m[1] or f.endswith("/" + m[1])]
                want = m[2] or readme.anchor(m[3])
                if targets and not any(want in readme.anchors(root / f) for f in targets):
                    out.append(f"{name}:{line + text.count(chr(10), 0, m.start())}: {m[1]}#{want} "
                               "(no such heading)")
    return out


def test_a_cited_file_outside_the_repository_is_found(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""See notes/minicluster.md and xcbench/ceph/mini.py."""\n'
                 "x = 1  # as DESIGN.md says; vstart.sh does the same; https://h/x/y.md is a URL\n")
    mk = tmp_path / "Makefile"
    mk.write_text("all:\n\t# see docs/gone.md\n")
    files = ["xcbench/ceph/mini.py", "docs/notes/kernel.md"]
    assert missing(files, [("m.py", f), ("Makefile", mk)]) == [
        "m.py:2: DESIGN.md", "m.py:1: notes/minicluster.md", "Makefile:2: docs/gone.md"]


def test_every_cited_file_is_in_the_repository():
    files = tracked()
    found = missing(files, scanned(files))
    assert not found, ("comments cite files that are not in this repository (cite one that is, "
                       "or name the other project in EXTERNAL): " + "; ".join(found))


def test_a_cited_section_that_is_not_there_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "v.md").write_text("# V\n\n## Noise between runs\n\n```\n# not a heading\n```\n")
    f = tmp_path / "m.py"
    f.write_text('"""See docs/v.md#noise-between-runs and v.md, "Noise between runs"."""\n'
                 "x = 1  # docs/v.md#between-run-noise; docs/v.md#not-a-heading; gone.md#x\n"
                 'HELP = "the rule (README, \\"Shared hosts\\"); README.md is a path"\n')
    mk = tmp_path / "Makefile"
    mk.write_text('all:\n\t# docs/v.md, "Between-run noise"\n')
    files = ["docs/v.md"]
    assert stale_sections(files, [("m.py", f), ("Makefile", mk)], tmp_path) == [
        "m.py:2: docs/v.md#between-run-noise (no such heading)",
        "m.py:2: docs/v.md#not-a-heading (no such heading)",
        "m.py:3: a bare README (cite README.md#anchor, or the docs/ file that holds the section now)",
        "Makefile:2: docs/v.md#between-run-noise (no such heading)"]


def test_every_cited_section_is_a_heading_of_its_file():
    files = tracked()
    found = stale_sections(files, scanned(files), ROOT)
    assert not found, ("comments and strings point at sections that are not there (cite a "
                       "document's path and the #anchor of a heading it has): " + "; ".join(found))
