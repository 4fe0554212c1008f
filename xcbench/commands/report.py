"""xcbench report: render a report of one or more runs (HTML, self-contained, or Markdown)."""

from __future__ import annotations

from pathlib import Path

from xcbench.analysis.report import glance, grafana
from xcbench.analysis.report.document import render_report
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.commands import argcheck
from xcbench.store.catalog import resolve_run
from xcbench.store.rundir import default_store
from xcbench.system import outfiles


def add_parser(sub):
    p = sub.add_parser("report", help="render a report of one or more runs",
                       description="Render the report of one or more runs: verdicts first, then "
                       "the evidence, every figure traceable to its rows. With two runs or more, "
                       "the runs are overlaid in one throughput-vs-concurrency plot ahead of each "
                       "run's report.")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="run directory, run id (or unique prefix) in the store, or 'latest'")
    p.add_argument("--format", choices=("html", "md", "text"), default="html",
                   help="html: one self-contained file (plots inline; prints on one page: the "
                        "summary); md: Markdown for a ticket (tables and text, no images: the plots are "
                        "in the HTML report); text: the closing table (what capped each level) on stdout")
    p.add_argument("--json", action="store_true",
                   help="print the closing table of each run as JSON on stdout (writes no file)")
    p.add_argument("--out", type=Path, default=None,
                   help="output file (default: <first run>/report.<format>; text: stdout)")
    p.add_argument("--grafana-url", default=None, metavar="URL",
                   help="Grafana's base URL: each run links to docs/grafana/xcbench.json on its time "
                        "range, and its levels are written beside the report as Grafana annotations "
                        "(default: $XCBENCH_GRAFANA_URL; nothing is sent to Grafana)")
    p.add_argument("--store", type=Path, default=None, metavar="DIR",
                   help=f"result store for run ids (default: $XCBENCH_STORE or ./{default_store()})")
    return p


def main(args) -> int:
    grafana.base_url(args.grafana_url)  # a bad URL stops here, before any run is read
    runs = [resolve_run(r, args.store) for r in args.runs]
    if args.out is not None:
        argcheck.ours("--out", args.out)
        outfiles.hold(args.out)  # its dir, ours from now on: nobody makes it a link mid-render
    elif not (args.json or args.format == "text"):  # the default: beside the first run
        argcheck.ours("RUN", runs[0].path / f"report.{args.format}")
        outfiles.hold(runs[0].path / f"report.{args.format}")
    data = [RunData(r) for r in runs]  # each run loaded once, for everything this command shows
    if args.json or args.format == "text":
        return closing(data, args.json, args.out)
    out = render_report(data, args.format, args.out, grafana_url=args.grafana_url)
    print(out)
    return 0


def closing(data: list[RunData], as_json: bool, out: Path | None) -> int:
    """The closing table of each run (the verdicts of a run judged with the others as references,
    as in the HTML report), as text or JSON, on stdout or into ``out``."""
    import json

    tables = [(rd, glance.rows(rd, tuple(o for o in data if o is not rd))) for rd in data]
    if as_json:
        doc = [glance.as_json(rd, rows) for rd, rows in tables]
        text = json.dumps(doc[0] if len(doc) == 1 else doc, indent=1, default=str) + "\n"
        if out:
            outfiles.write(out, text)
            print(out)
        else:
            print(text, end="")
        return 0
    if out:
        outfiles.write(out, "\n".join(glance.text(rd, rows, glance.width()) for rd, rows in tables))
        print(out)
        return 0
    for rd, rows in tables:
        glance.print_table(rd, rows)
    return 0
