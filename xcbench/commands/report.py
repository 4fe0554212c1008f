"""xcbench report: render a report of one or more runs (HTML, self-contained, or Markdown)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from xcbench.analysis import glance
from xcbench.analysis.report import render_report
from xcbench.analysis.run_data import RunData
from xcbench.store.catalog import resolve_run
from xcbench.store.rundir import default_store

if TYPE_CHECKING:
    from xcbench.analysis.run_data import RunData


def add_parser(sub):
    p = sub.add_parser("report", help="render a report of one or more runs",
                       description="Render the report of one or more runs: verdicts first, then "
                       "the evidence, every figure traceable to its rows.")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="run directory, run id (or unique prefix) in the store, or 'latest'")
    p.add_argument("--format", choices=("html", "md", "text"), default="html",
                   help="html: one self-contained file; md: Markdown + a <name>_files/ dir of PNGs; "
                        "text: the closing table (what capped each level) on stdout")
    p.add_argument("--json", action="store_true",
                   help="print the closing table of each run as JSON on stdout (writes no file)")
    p.add_argument("--out", type=Path, default=None,
                   help="output file (default: <first run>/report.<format>; text: stdout)")
    p.add_argument("--store", type=Path, default=None,
                   help=f"result store for run ids (default: $XCBENCH_STORE or ./{default_store()})")
    return p


def run(args) -> int:
    runs: list[Path | str | RunData] = [resolve_run(r, args.store).path for r in args.runs]
    if args.json or args.format == "text":
        return closing(runs, args.json, args.out)
    out = render_report(runs, args.format, args.out)
    print(out)
    return 0


def closing(runs: list, as_json: bool, out: Path | None) -> int:
    """The closing table of each run (the verdicts of a run judged with the others as references,
    as in the HTML report), as text or JSON, on stdout or into ``out``."""
    import json

    data = [RunData(r) for r in runs]
    tables = [(rd, glance.rows(rd, tuple(o for o in data if o is not rd))) for rd in data]
    if as_json:
        doc = [glance.as_json(rd, rows) for rd, rows in tables]
        text = json.dumps(doc[0] if len(doc) == 1 else doc, indent=1, default=str) + "\n"
        if out:
            out.write_text(text)
            print(out)
        else:
            print(text, end="")
        return 0
    if out:
        out.write_text("\n".join(glance.text(rd, rows, glance.width()) for rd, rows in tables))
        print(out)
        return 0
    for rd, rows in tables:
        glance.print_table(rd, rows)
    return 0
