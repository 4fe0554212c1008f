"""Every file a comment or a docstring cites is in this repository: a reader who follows
``see xcbench/ceph/bootstrap.py`` or ``docs/verdicts.md`` finds it (not a note on a machine of
the authors', not a file that moved). Files of other projects are named as such in EXTERNAL.

Cited: a word ending in a source or document suffix (.py .md .j2 .toml .ini .cfg .sh), with or
without directories; it must be a file git tracks, whole or as the tail of one's path.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# where comments are: Python's, and those of the build and CI files
OTHER = ("Makefile", "tox.ini", "pyproject.toml", "mypy.ini", ".ci/run")
CITED = re.compile(r"(?<![\w./:-])((?:[\w.-]+/)*[\w-]+\.(?:py|md|j2|toml|ini|cfg|sh))\b")
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
    sources = [(f, ROOT / f) for f in files if (f.endswith(".py") or f in OTHER) and (ROOT / f).exists()]
    found = missing(files, sources)
    assert not found, ("comments cite files that are not in this repository (cite one that is, "
                       "or name the other project in EXTERNAL): " + "; ".join(found))
