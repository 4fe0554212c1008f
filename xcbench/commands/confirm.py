"""xcbench confirm RUN [--cell ID]: test each verdict of a run by intervention.

Relieve the named limit and the rate must rise, or tighten it and the rate must fall in
proportion (xcbench.selftest.confirm). Prints, per verdict, confirmed / refuted / not testable
here (why) with both rates and their noise, and writes <run>/confirmations.json and .parquet.
Exit 0 when no verdict was refuted, 1 when one was, 2 on bad input (before anything starts).
"""

from __future__ import annotations

import json

from xcbench.ceph.cluster import default_state_dir
from xcbench.ceph.mini import MiniCluster
from xcbench.run.runner import Interrupted
from xcbench.selftest import confirm
from xcbench.selftest.run_scenarios import _stderr as log
from xcbench.store.catalog import resolve_run


def add_parser(sub):
    p = sub.add_parser("confirm", help="test a run's verdicts by relieving or tightening the named limit")
    p.add_argument("run", metavar="RUN",
                   help="run directory, run id (or unique prefix) in the store, or 'latest'")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="result store for run ids (default: $XCBENCH_STORE or ./results)")
    p.add_argument("--cell", help="only this cell's verdicts (id or id prefix)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--state-dir", help="embedded cluster state (default ./.xcbench/cluster)")
    p.add_argument("--keep-cluster", action="store_true",
                   help="leave a cluster confirm started running (default: take it down)")
    return p


def run(args) -> int:
    args.run = str(resolve_run(args.run, args.store).path)
    run_dir, rows, _ = confirm.preflight(args.run, args.cell)  # bad input: exit 2, nothing started
    labels = {cid: c.label for cid, c in run_dir.cells.items()}
    embedded = bool((run_dir.manifest.get("cluster") or {}).get("embedded"))
    mini = cluster = None
    started = False
    if confirm.needs_cluster(run_dir, rows) and embedded:
        mini = MiniCluster(default_state_dir(args.state_dir))
        cluster, started = mini.up(log=log)
    try:
        result = confirm.confirm_run(args.run, cluster, cell=args.cell, log=log)
    except Interrupted as e:
        log(f"confirm interrupted; what was measured is in {e}")
        return 130
    finally:
        if cluster is not None:
            cluster.close()
        if mini is not None and started and not args.keep_cluster:
            mini.down(log=log)
    print(json.dumps(result, indent=1, default=str) if args.json else confirm.text(result, labels))
    return 0 if result["ok"] else 1
