"""xcbench report: render a report of one or more runs (HTML, self-contained, or Markdown)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

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
    p.add_argument("--format", choices=("html", "md"), default="html",
                   help="html: one self-contained file; md: Markdown + a <name>_files/ dir of PNGs")
    p.add_argument("--out", type=Path, default=None,
                   help="output file (default: <first run>/report.<format>)")
    p.add_argument("--store", type=Path, default=None,
                   help=f"result store for run ids (default: $XCBENCH_STORE or ./{default_store()})")
    return p


def run(args) -> int:
    from xcbench.analysis.report import render_report
    runs: list[Path | str | RunData] = [resolve_run(r, args.store).path for r in args.runs]
    out = render_report(runs, args.format, args.out)
    print(out)
    return 0
