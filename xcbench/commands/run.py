"""xcbench run MATRIX: probes, campaigns and telemetry for every cell; verdicts and a report."""

from __future__ import annotations

import sys
from pathlib import Path

from xcbench.ceph.cluster import add_ceph_args, cluster_from_args
from xcbench.errors import XcbError


def add_parser(sub):
    p = sub.add_parser("run", help="run a matrix: probes, campaigns, telemetry, verdicts, report")
    p.add_argument("matrix", nargs="?", help="matrix YAML (default with --resume: the run's own)")
    add_run_args(p)
    add_ceph_args(p)
    return p


def add_run_args(p) -> None:
    p.add_argument("--out", default="results", help="result store directory (default ./results)")
    p.add_argument("--name", help="run directory name (default: a UTC timestamp)")
    p.add_argument("--repeats", type=int, help="repeat every campaign N times (overrides the matrix)")
    p.add_argument("--resume", metavar="RUN", help="run only the cells of RUN not yet complete")
    p.add_argument("--scale-ec", action="store_true",
                   help="map EC k+m pools that do not fit the cluster onto what fits (recorded)")
    p.add_argument("--fio-hosts", help="comma-separated fio servers for multi-host probes")
    p.add_argument("--no-baseline", action="store_true", help="skip the iperf3 baseline")
    p.add_argument("--no-probes", action="store_true", help="skip the fio probes")
    p.add_argument("--no-report", action="store_true", help="do not render the report")
    p.add_argument("--format", choices=("html", "md"), default="html", help="report format")
    p.add_argument("--telemetry", metavar="DEVICES",
                   help="telemetry devices and intervals, e.g. host,gateway or host:0.5,ceph:2, "
                        "or none (default: every device; see `xcbench telemetry list`)")


def options(args):
    from xcbench.runner import RunOptions
    if args.repeats is not None and args.repeats < 1:
        raise XcbError(f"--repeats: {args.repeats} must be >= 1")
    from xcbench.telemetry.devices import parse_selection
    parse_selection(args.telemetry)  # a bad device or interval fails here, before any cluster
    return RunOptions(out=Path(args.out), repeats=args.repeats, name=args.name,
                      resume=Path(args.resume) if args.resume else None, scale_ec=args.scale_ec,
                      fio_hosts=args.fio_hosts.split(",") if args.fio_hosts else None,
                      baseline=not args.no_baseline, probes=not args.no_probes,
                      report=not args.no_report, report_format=args.format,
                      telemetry=args.telemetry)


def execute(matrix, cluster, opts) -> int:
    """Run and print where the results are; 130 after Ctrl-C (everything flushed and stopped)."""
    from xcbench.progress import MatrixView
    from xcbench.runner import Interrupted, run_matrix
    try:
        run = run_matrix(matrix, cluster, opts, view=MatrixView())
    except Interrupted as e:
        print(f"interrupted: what was measured is in {e}; continue with "
              f"`xcbench run --resume {e}`", file=sys.stderr)
        return 130
    cells = run.manifest["cells"].values()
    failed = [c for c in cells if c.get("status") == "failed"]
    print(f"run: {run.path.resolve()}")
    if run.manifest.get("report"):
        print(f"report: {Path(run.manifest['report']).resolve()}")
    for w in run.manifest.get("warnings", []):
        print(f"warning: {w}", file=sys.stderr)
    for c in failed:
        print(f"failed cell {c.get('label')}: {c.get('error')}", file=sys.stderr)
    return 1 if failed else 0


def run(args) -> int:
    if not args.matrix and not args.resume:
        raise XcbError("run: give a MATRIX file (or --resume RUN)")
    if args.matrix:
        from xcbench.matrix import load_matrix
        load_matrix(args.matrix)  # bad input fails before anything touches a cluster
    opts = options(args)
    cluster = cluster_from_args(args)
    return execute(args.matrix, cluster, opts)
