"""xcbench compare: compare two runs cell by cell (% difference, CI overlap, verdict changes),
and with --fail-if-slower PCT a regression gate (exit 1 naming the levels that fell)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from xcbench.analysis.report.render import text_table
from xcbench.analysis.verdicts.compare import MIN_REPEATS, compare_data, slower, versions_changed
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.errors import XcbError
from xcbench.figures.units import fmt_gbps, fmt_pct, gbps_num
from xcbench.store.catalog import resolve_run
from xcbench.store.rundir import default_store


def add_parser(sub):
    p = sub.add_parser("compare", help="compare two runs cell by cell; a regression gate",
                       description="Per cell and concurrency level: steady rate of both runs, "
                       "% difference, whether the 95 % CIs overlap, verdict changes. With "
                       "--fail-if-slower PCT: exit 1 when a level fell by more than PCT % beyond "
                       "noise (for CI against an older run).")
    p.add_argument("base", metavar="BASE", help="the reference run (dir, id or 'latest')")
    p.add_argument("contender", metavar="CONTENDER", help="the run compared with it")
    p.add_argument("--store", type=Path, default=None, metavar="DIR",
                   help=f"result store for run ids (default: $XCBENCH_STORE or ./{default_store()})")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    p.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit 1 when a level's contender rate is below the base's by more than "
                        "PCT %% even at the noisy end (each level's own error and each run's "
                        "between-run term); the levels are listed")
    return p


def _json_rows(rows: list[dict]) -> list[dict]:
    """JSON rows: NaN as null, and each rate also in the one unit (``*_gbps``, 1e9 bit/s) beside
    its bytes/s (``*_rate``, kept for readers of the older output)."""
    out = []
    for r in rows:
        r = {**r, "base_gbps": r["base_rate"] * 8 / 1e9, "contender_gbps": r["contender_rate"] * 8 / 1e9}
        out.append({k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                    for k, v in r.items()})
    return out


def main(args) -> int:
    pct = args.fail_if_slower
    if pct is not None and not (math.isfinite(pct) and 0 <= pct < 100):
        raise XcbError(f"compare: --fail-if-slower: {pct:g} is not a percentage in [0, 100)")
    base = RunData(resolve_run(args.base, args.store))
    cont = RunData(resolve_run(args.contender, args.store))
    rows = compare_data(base, cont)
    changed = versions_changed(base, cont)
    fell = slower(rows, pct) if pct is not None else []
    if args.json:
        doc = {"base": base.run_id, "contender": cont.run_id,
               "unit": "*_rate: bytes/s; *_gbps: 1e9 bit/s",
               "rows": _json_rows(rows), "versions_changed": changed}
        if pct is not None:
            doc["fail_if_slower"] = {"pct": pct, "slower": _json_rows(fell)}
        print(json.dumps(doc, indent=2, default=str))
        return 1 if fell else 0
    print(f"base {base.run_id} -> contender {cont.run_id} (rates: steady mean, Gb/s; CI 95 %)")
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
        table.append([r["label"], f"{r['concurrency']:g}", gbps_num(r["base_rate"]),
                      gbps_num(r["contender_rate"]), fmt_pct(r["pct"], 1, sign=True), ci, verdict,
                      note.strip()])
    print(text_table(["cell", "conc", "base", "contender", "diff", "CIs", "verdict", "note"], table,
                     right={1, 2, 3, 4}))
    sig = sum(1 for r in rows if r["significant"])
    vch = sum(1 for r in rows if r["verdict_changed"])
    print(f"\n{len(rows)} points; {sig} significant (disjoint CIs, >= {MIN_REPEATS} repeats each); "
          f"{vch} verdict changes")
    if pct is None:
        return 0
    if not fell:
        print(f"gate: no level fell by more than {pct:g} % beyond noise")
        return 0
    print(f"gate: {len(fell)} level(s) fell by more than {pct:g} % beyond noise:", file=sys.stderr)
    for r in fell:
        print(f"  {r['label']} c={r['concurrency']:g}: {fmt_gbps(r['base_rate'])} -> "
              f"{fmt_gbps(r['contender_rate'])} ({fmt_pct(r['pct'], 1, sign=True)}; at least "
              f"-{r['fell_at_least'] * 100:.0f} % with the noise)", file=sys.stderr)
    return 1
