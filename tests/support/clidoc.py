"""docs/reference/cli.md: the command-line reference, made from xcbench's own parser so it never
drifts from `--help` (tests/unit/test_docs.py compares them).

    python -m tests.support.clidoc --write
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xcbench.cli import HIDDEN, build_parser

ROOT = Path(__file__).resolve().parents[2]
CLI_MD = ROOT / "docs" / "reference" / "cli.md"

HEAD = """# Command line

<!-- Made by `python -m tests.support.clidoc --write` from xcbench's parser: edit the help
strings in xcbench/commands/, not this file (tests/unit/test_docs.py keeps the two equal). -->

Flags mean the same in every command: `-c/--conf`, `--id`, `-n/--name client.ID`, `-k/--keyring`
name an existing Ceph cluster and its client as the `ceph` CLI spells them (`--ceph-conf` and
`--ceph-id` still work); `--run-name NAME` names the run's directory; `--store DIR` is the result
store (default `$XCBENCH_STORE`, else `./results`); `--out FILE` is an output file. A RUN is a run
directory, a run id (or a unique prefix of one) in the store, or `latest`, wherever a command
takes one. `--json` prints data instead of text. Rates are decimal Gb/s (10^9 bit/s) everywhere.

Exit codes: 0 done; 1 a measured failure (a failed cell, a refuted verdict, a self-test mismatch,
a regression past `--fail-if-slower`); 2 bad input, one line naming the file, cell and field,
before anything touches a cluster; 130 stopped by Ctrl-C, SIGTERM or SIGHUP: every process the
command started stopped, what it mounted unmounted, every record flushed (a run is resumable
with `--resume`, an `--fts` campaign's FTS job cancelled). After a `kill -9`, the next command
finds what the killed one left (recorded under the state home), stops it and says so in one line.
"""


def _commands(parser: argparse.ArgumentParser, name: str = "xcbench"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for n, p in action.choices.items():
                if n in HIDDEN:
                    continue
                sub = any(isinstance(a, argparse._SubParsersAction) for a in p._actions)
                yield f"{name} {n}", p, helps.get(n), sub
                yield from _commands(p, f"{name} {n}")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")


def _flag(a: argparse.Action) -> str:
    if not a.option_strings:
        return f"`{a.metavar or a.dest}`"
    names = ", ".join(a.option_strings)
    if a.nargs == 0:
        return f"`{names}`"
    metavar = a.metavar if a.metavar is not None else (
        "{" + ",".join(map(str, a.choices)) + "}" if a.choices else a.dest.upper())
    return f"`{names} {' '.join(metavar) if isinstance(metavar, tuple) else metavar}`"


def render() -> str:
    out = [HEAD]
    for name, p, help_, has_sub in _commands(build_parser()):
        level = "##" if name.count(" ") == 1 else "###"
        out.append(f"{level} {name}\n")
        out.append(_cell(p.description or help_ or "") + "\n")
        if has_sub:
            continue
        rows = [(_flag(a), _cell(a.help or "")) for a in p._actions
                if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]
        if rows:
            out.append("| argument | what |\n|---|---|")
            out.extend(f"| {f} | {h} |" for f, h in rows)
            out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        CLI_MD.write_text(render())
    else:
        sys.exit("usage: python -m tests.support.clidoc --write")
