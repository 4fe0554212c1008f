"""xcbench compare: compare two runs cell by cell (% difference, CI overlap, verdict changes)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from xcbench.analysis.compare import MIN_REPEATS, compare_data, versions_changed
from xcbench.analysis.render import fmt_gib, fmt_pct, text_table
from xcbench.analysis.run_data import RunData
from xcbench.store.catalog import resolve_run
from xcbench.store.rundir import default_store


def add_parser(sub):
    p = sub.add_parser("compare", help="compare two runs cell by cell",
                       description="Per cell and concurrency level: steady rate of both runs, "
                       "% difference, whether the 95 % CIs overlap, verdict changes.")
    p.add_argument("base", metavar="BASE", help="the reference run (dir, id or 'latest')")
    p.add_argument("contender", metavar="CONTENDER", help="the run compared with it")
    p.add_argument("--store", type=Path, default=None,
                   help=f"result store for run ids (default: $XCBENCH_STORE or ./{default_store()})")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    return p


def _gib(v: float) -> str:
    return fmt_gib(v)


def run(args) -> int:
    base = RunData(resolve_run(args.base, args.store))
    cont = RunData(resolve_run(args.contender, args.store))
    rows = compare_data(base, cont)
    changed = versions_changed(base, cont)
    if args.json:
        clean = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
                 for r in rows]
        print(json.dumps({"base": base.run_id, "contender": cont.run_id, "rows": clean,
                          "versions_changed": changed}, indent=2, default=str))
        return 0
    print(f"base {base.run_id}  ->  contender {cont.run_id}   (rates: steady mean, GiB/s; CI 95 %)")
    for k, (a, b) in changed.items():
        print(f"  note: {k} changed: {a} -> {b}")
    table = []
    for r in rows:
        ci = "-" if r["ci_overlap"] is None else ("overlap" if r["ci_overlap"] else
                                                  "DISJOINT" if r["significant"] else "disjoint")
        ci += f" (n={r['base_n']}/{r['contender_n']})"
        verdict = r["base_verdict"] or "-"
        if r["verdict_changed"]:
            verdict += f" -> {r['contender_verdict']}"
        note = (f"config changed ({', '.join(r.get('config_fields') or [])}) " if r["config_changed"] else "") + (f"only in {r['only_in']}" if r["only_in"] else "")
        table.append([r["label"], f"{r['concurrency']:g}", _gib(r["base_rate"]), _gib(r["contender_rate"]),
                      fmt_pct(r["pct"], 1, sign=True), ci, verdict, note.strip()])
    print(text_table(["cell", "conc", "base", "contender", "diff", "CIs", "verdict", "note"], table,
                     right={1, 2, 3, 4}))
    sig = sum(1 for r in rows if r["significant"])
    vch = sum(1 for r in rows if r["verdict_changed"])
    print(f"\n{len(rows)} points; {sig} significant (disjoint CIs, >= {MIN_REPEATS} repeats each); "
          f"{vch} verdict changes")
    return 0
