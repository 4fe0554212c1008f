"""The README as the tests read it: its fenced blocks, its commands, and the two blocks made by
xcbench itself (the closing table of a stored run, the lines `xcbench cluster caps` prints).

    python -m tests.support.readme --write    # renew those two blocks from the current code
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RUNS = ROOT / "tests" / "data" / "runs"
SAMPLE_RUN = RUNS / "demo"  # `xcbench demo` as a user runs it (2026-11-28, a 2-core box under load)
BORDERLINE_RUN = RUNS / "quick-shape"  # the demo's matrix with short levels: borderline levels to settle
COLUMNS = 80  # the closing table as a terminal of 80 columns (or a pipe at COLUMNS=80) shows it
CAPS = ["cluster", "caps", "--fs", "cephfs"]  # the README's `xcbench cluster caps` command

_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```$", re.M | re.S)
_MARK = re.compile(r"<!-- (?P<name>[\w-]+):[^\n]*-->\n$")


@dataclass
class Block:
    lang: str
    body: str
    mark: str | None  # the name of the <!-- name: ... --> comment on the line before, if any
    start: int  # offsets of the body in the file
    end: int


def blocks(text: str) -> list[Block]:
    out = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()]
        mark = _MARK.search(before[before.rfind("\n", 0, len(before) - 1) + 1:])
        out.append(Block(m["lang"], m["body"], mark["name"] if mark else None,
                         m.start("body"), m.end("body")))
    return out


def commands(block: Block) -> list[str]:
    """The shell commands of a block: one per line, a trailing backslash joins the next line,
    a '#' comment dropped."""
    out, cur = [], ""
    for line in block.body.splitlines():
        cur += line.rstrip()
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        cmd = " ".join(shlex.split(cur, comments=True))
        if cmd:
            out.append(cmd)
        cur = ""
    return out


def xcbench(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """``xcbench ARGS`` as a user runs it (this interpreter's install), in the repository."""
    return subprocess.run([sys.executable, "-m", "xcbench", *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **(env or {})}, timeout=timeout)


def closing_table(run: Path = SAMPLE_RUN) -> str:
    """The closing table of ``run`` as `xcbench report RUN --format text` prints it at 80 columns."""
    cp = xcbench("report", str(run), "--format", "text", env={"COLUMNS": str(COLUMNS)})
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


@functools.cache
def anchors(path: Path) -> set[str]:
    """GitHub's ids of a Markdown file's headings (fenced blocks aside): lower case, punctuation
    dropped, spaces -."""
    heads = re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S), re.M)
    return {anchor(h) for h in heads}


def anchor(heading: str) -> str:
    """The id GitHub gives a heading: 'Noise between runs' -> 'noise-between-runs'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def caps_lines() -> str:
    cp = xcbench(*CAPS)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


@functools.cache
def made_by_xcbench() -> dict[str, str]:
    """The README blocks xcbench writes, by the name of their marker."""
    return {"closing-table": closing_table(), "cluster-caps": caps_lines()}


def write(path: Path = README) -> None:
    text = path.read_text()
    want = made_by_xcbench()
    for b in sorted(blocks(text), key=lambda b: -b.start):
        if b.mark in want:
            text = text[:b.start] + want[b.mark] + text[b.end:]
    path.write_text(text)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        sys.exit("usage: python -m tests.support.readme --write")
