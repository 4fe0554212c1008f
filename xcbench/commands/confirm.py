"""xcbench confirm RUN [--cell ID]: test each verdict of a run by intervention.

Relieve the named limit and the rate must rise, or tighten it and the rate must fall, in
control/changed pairs run A-B-B-A (xcbench.selftest.confirm, judged by analysis.verdicts.experiment).
Prints, per verdict, the experiment, the predicted and the measured ratio, and confirmed /
refuted / inconclusive / not testable here (why); writes <run>/confirmations.json and .parquet.
Exit 0 when no verdict was refuted, 1 when one was, 2 on bad input (before anything starts).
"""

from __future__ import annotations

import json
from pathlib import Path

from xcbench.analysis.verdicts.experiment import MAX_PAIRS, PAIRS
from xcbench.analysis.verdicts.experiment_choice import EXPERIMENTS
from xcbench.ceph.cluster import cluster_from_args, default_state_dir
from xcbench.ceph.mini import MiniCluster
from xcbench.commands.options import add_ceph_args, add_fts_endpoint_arg
from xcbench.errors import XcbError
from xcbench.hosts.checks import check_versions
from xcbench.hosts.matrix_section import SLURM_SOURCE, SLURM_WORD, inventory_for
from xcbench.hosts.slurm import kind_of, nodes_of
from xcbench.run.runner import Interrupted
from xcbench.selftest import confirm
from xcbench.selftest.run_scenarios import _stderr as log
from xcbench.store.catalog import resolve_run
from xcbench.system.userfiles import read_yaml


def add_parser(sub):
    p = sub.add_parser("confirm", help="test a run's verdicts by relieving or tightening the named limit",
                       description="Test a run's verdicts by intervention: relieve the named limit "
                                   "(the rate must rise) or tighten it (the rate must fall), control "
                                   "and changed runs interleaved A-B-B-A.")
    p.add_argument("run", metavar="RUN",
                   help="run directory, run id (or unique prefix) in the store, or 'latest'")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="result store for run ids (default: $XCBENCH_STORE or ./results)")
    p.add_argument("--cell", metavar="ID", help="only this cell's verdicts (id or id prefix)")
    p.add_argument("--level", type=int, help="only the verdicts at this concurrency level")
    p.add_argument("--verdict", action="append", help="only verdicts of this name (repeatable)")
    p.add_argument("--test", action="append", metavar="VERDICT",
                   help="test this limit at the chosen levels instead of the verdict the run named "
                        "(a borderline verdict's candidates; repeatable)")
    p.add_argument("--experiment", choices=[k for k, x in EXPERIMENTS.items() if x["tests"]], metavar="NAME",
                   help="this experiment instead of the one confirm chooses, where another tests the "
                        "same verdict (docs/experiments.md: e.g. 'one more origin' for a gateway with a "
                        "cores quota, 'storage out' for a storage sub-kind)")
    p.add_argument("--pairs", type=int, default=None,
                   help=f"control/changed pairs per experiment, A-B-B-A, at least {PAIRS} (default: as "
                        f"many as the predicted effect needs at the level's noise, at most {MAX_PAIRS})")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--hosts", metavar="FILE",
                   help="the run's inventory, when its campaigns came from client hosts (default: "
                        "the inventory file the run used, else the matrix's hosts:)")
    add_fts_endpoint_arg(p)
    add_ceph_args(p)
    p.add_argument("--keep-cluster", action="store_true",
                   help="leave a cluster confirm started running (default: take it down)")
    return p


def main(args) -> int:
    if args.pairs is not None and args.pairs < 2:
        raise XcbError(f"confirm: --pairs {args.pairs}: at least 2 (an A-B-B-A experiment)")
    args.run = str(resolve_run(args.run, args.store).path)
    fts = tuple(args.fts_endpoint or ())
    # bad input (a matrix sending its FTS credential where the operator did not say, too):
    # exit 2, nothing started
    run_dir, rows, mpath = confirm.preflight(args.run, args.cell, args.level, tuple(args.test or ()), fts)
    labels = {cid: c.label for cid, c in run_dir.cells.items()}
    hosts = inventory(args, run_dir, mpath)
    with nodes_of(hosts, kind_of(run_dir.manifest)) as hosts:  # Slurm nodes as the run had them
        return _confirm(args, run_dir, rows, labels, hosts, fts)


def _confirm(args, run_dir, rows, labels, hosts, fts) -> int:
    embedded = bool((run_dir.manifest.get("cluster") or {}).get("embedded"))
    mini = cluster = None
    started = False
    if confirm.needs_cluster(run_dir, rows):
        if args.ceph_conf:  # the run's cluster, given: every experiment that needs no daemon of it
            cluster = cluster_from_args(args)
        elif embedded:
            mini = MiniCluster(default_state_dir(args.state_dir))
            cluster, started = mini.up(log=log)
    try:
        result = confirm.confirm_run(args.run, cluster, cell=args.cell, pairs=args.pairs,
                                     verdicts=tuple(args.verdict or ()), level=args.level,
                                     test=tuple(args.test or ()), fts_endpoints=fts, hosts=hosts,
                                     log=log, experiment=args.experiment)
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


def inventory(args, run_dir, matrix_path: str):
    """The inventory the run's campaigns came from (None: the run used none): ``--hosts``, else
    the file the run read (its manifest names it), else the matrix's ``hosts:``; checked as
    `xcbench run` checks it (the same xcbench on every host)."""
    used = (run_dir.manifest.get("hosts") or {})
    if not args.hosts and not used.get("hosts"):
        return None
    source = args.hosts or (used.get("source") if Path(str(used.get("source") or "")).is_file() else None)
    if source is None and used.get("source") == SLURM_SOURCE:
        source = SLURM_WORD  # the run's `--hosts slurm`
    inv = inventory_for(source, read_yaml(matrix_path), matrix_path)
    if inv is None:  # before anything starts
        raise XcbError(f"confirm: {run_dir.path}: the run's campaigns came from the hosts of "
                       f"{used.get('source') or 'an inventory'!r}, which is gone: give it with --hosts")
    if inv.slurm is None:  # nodes from Slurm: checked once known (xcbench.hosts.slurm.nodes_of)
        check_versions(inv)
    return inv

