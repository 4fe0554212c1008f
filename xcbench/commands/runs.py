"""xcbench runs: list the runs of a result store, or show one run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from xcbench.analysis.report.render import text_table
from xcbench.store.catalog import list_runs, resolve_run
from xcbench.store.rundir import RunDir, default_store
from xcbench.store.tables import TABLES
from xcbench.store.upgrade import TABLES_VERSION


def add_parser(sub):
    p = sub.add_parser("runs", help="list or show runs in the result store",
                       description="List the runs of a result store, or show one run.")
    s = p.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    ls = s.add_parser("list", help="list runs (oldest first)")
    ls.add_argument("--store", type=Path, default=None, metavar="DIR",
                    help=f"result store directory (default: $XCBENCH_STORE or ./{default_store()})")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sh = s.add_parser("show", help="show a run: manifest, cells, tables")
    sh.add_argument("run", metavar="RUN", help="run directory, run id (or unique prefix) in the store, or 'latest'")
    sh.add_argument("--store", type=Path, default=None, metavar="DIR",
                    help=f"result store directory (default: $XCBENCH_STORE or ./{default_store()})")
    sh.add_argument("--json", action="store_true", help="print the manifest as JSON")
    return p


def table_rows(run: RunDir) -> dict[str, int]:
    """Rows per table: Parquet metadata when finalized, else JSONL lines (nothing is loaded)."""
    out = {}
    for name in TABLES:
        pq = run.path / f"{name}.parquet"
        jl = run.path / "records" / f"{name}.jsonl"
        if pq.exists():
            import pyarrow.parquet as papq
            out[name] = papq.read_metadata(pq).num_rows
        elif jl.exists():
            with open(jl, "rb") as fh:
                out[name] = sum(1 for _ in fh)
    return out


def _cell_counts(run: RunDir) -> str:
    counts: dict[str, int] = {}
    for c in run.cells.values():
        counts[c.status] = counts.get(c.status, 0) + 1
    return " ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "0"


def _matrix(m) -> str:
    if isinstance(m, dict):
        return str(m.get("name") or m.get("path") or "")
    return str(m or "")


def _list(args) -> int:
    store = args.store or default_store()
    runs = list_runs(store)
    if args.json:
        print(json.dumps([{"run_id": r.run_id, "path": str(r.path), "start": r.manifest.get("start"),
                           "end": r.manifest.get("end"), "status": r.manifest.get("status"),
                           "matrix": _matrix(r.manifest.get("matrix")), "cells": _cell_counts(r)}
                          for r in runs], indent=2))
        return 0
    if not runs:
        print(f"{store}: no runs")
        return 0
    rows = [[r.run_id, (r.manifest.get("start") or "")[:19], (r.manifest.get("end") or "")[:19],
             r.manifest.get("status"), _matrix(r.manifest.get("matrix")), _cell_counts(r)] for r in runs]
    print(text_table(["run", "start (UTC)", "end (UTC)", "status", "matrix", "cells"], rows))
    return 0


def _show(args) -> int:
    run = resolve_run(args.run, args.store)
    m = run.manifest
    if args.json:
        print(json.dumps(m, indent=2, sort_keys=True, default=str))
        return 0
    fp = m.get("fingerprint") or {}
    v = fp.get("versions") or {}
    host = fp.get("host") or {}
    print(f"run      {run.run_id}  ({run.path})")
    print(f"status   {m.get('status')}   {m.get('start')} -> {m.get('end')}")
    print(f"matrix   {_matrix(m.get('matrix'))}")
    print(f"schema   {m.get('schema_version')}" + (f" (upgraded from {m['upgraded_from']})" if "upgraded_from" in m else "")
          + f"; tables {m.get('tables_version')}"
          + (f" (read as {TABLES_VERSION})" if m.get("tables_version") != TABLES_VERSION else ""))
    if v:
        print("versions " + "  ".join(f"{k} {v[k]}" for k in ("ceph", "xrootd", "fio", "gfal2", "iperf3", "xcbench")
                                      if v.get(k)))
    if host:
        print(f"host     {host.get('hostname')}  {host.get('os')}  kernel {host.get('kernel')}  "
              f"{host.get('cpus')} cpus  {round((host.get('mem_bytes') or 0) / 2**30)} GiB")
    verdicts = {}
    if run.has_table("verdicts"):
        vt = run.table("verdicts")
        for r in vt.itertuples():
            verdicts[r.cell_id] = r.verdict  # the last row (highest level) wins
    rows = [[cid, c.label, c.status, verdicts.get(cid, ""),
             (c.fingerprint or {}).get("digest", "")[:12], (c.error or "")[:70]]
            for cid, c in run.cells.items()]
    print()
    print(text_table(["cell", "label", "status", "verdict", "fingerprint", "error"], rows))
    print()
    counts = table_rows(run)
    print(text_table(["table", "rows"], [[k, n] for k, n in counts.items()], right={1}))
    return 0


def main(args: argparse.Namespace) -> int:
    return _list(args) if args.runs_command == "list" else _show(args)
