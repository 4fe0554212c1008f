"""xcbench demo: the embedded default — mini cluster + layouts/quick.yaml + report."""

from __future__ import annotations

import sys
from importlib.resources import files

from xcbench.ceph.cluster import default_state_dir
from xcbench.ceph.mini import MiniCluster
from xcbench.commands.options import add_no_ceph_name
from xcbench.commands.run import (
    add_run_args,
    execute,
    load_run_matrix,
    matrix_path,
    operator_named,
    options,
)
from xcbench.matrix import load_matrix


def add_parser(sub):
    p = sub.add_parser("demo", help="the embedded default: mini cluster + layouts/quick.yaml + report",
                       description="Start the embedded mini Ceph cluster, run layouts/quick.yaml "
                       "(6 cells x 2 levels, about 10 min on 2 cores), render the report, end with the "
                       "closing table and take the cluster down.")
    p.add_argument("--matrix", metavar="FILE", help="another matrix instead of layouts/quick.yaml")
    p.add_argument("--state-dir", metavar="DIR",
                   help="embedded cluster state (default: the state home's cluster/)")
    p.add_argument("--keep-cluster", action="store_true",
                   help="leave a cluster the demo started running (default: take it down)")
    add_run_args(p)
    add_no_ceph_name(p)
    return p


def main(args) -> int:
    opts = options(args)
    matrix = matrix_path(args.matrix or str(files("xcbench.layouts") / "quick.yaml"), opts)
    operator_named(args, load_matrix(matrix))  # bad input fails before a cluster is started
    mini = MiniCluster(default_state_dir(args.state_dir))
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    cluster, started = mini.up(log=log)
    log(f"mini cluster {'started' if started else 'already running'}: {cluster.conf}")
    try:
        return execute(load_run_matrix(matrix, cluster, opts), cluster, opts)
    finally:
        cluster.close()
        if started and not args.keep_cluster:
            mini.down(log=log)
