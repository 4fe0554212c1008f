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


def options(args):
    from xcbench import argcheck
    from xcbench.runner import RunOptions
    argcheck.number("--repeats", args.repeats, 1, 10_000)
    argcheck.name("--name", args.name)
    argcheck.directory("--out", args.out)
    argcheck.hosts("--fio-hosts", args.fio_hosts)
    return RunOptions(out=Path(args.out), repeats=args.repeats, name=args.name,
                      resume=Path(args.resume) if args.resume else None, scale_ec=args.scale_ec,
                      fio_hosts=args.fio_hosts.split(",") if args.fio_hosts else None,
                      baseline=not args.no_baseline, probes=not args.no_probes,
                      report=not args.no_report, report_format=args.format)


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


def check_resume(path: str) -> str:
    """The matrix path of a run that `--resume` can continue (XcbError otherwise)."""
    from xcbench.store import RunDir
    prev = RunDir.open(path)
    m = prev.manifest.get("matrix")
    kind = prev.manifest.get("kind")
    if kind not in (None, "run") or not isinstance(m, dict):
        raise XcbError(f"{path}: --resume: not a run of `xcbench run` (it was made by "
                       f"`xcbench {kind or 'unknown'}`); start a new one instead")
    mpath = m.get("path")
    if not isinstance(mpath, str) or not Path(mpath).is_file():
        raise XcbError(f"{path}: --resume: the run's matrix file {mpath!r} is gone")
    return mpath


def run(args) -> int:
    from xcbench.matrix import load_matrix
    if not args.matrix and not args.resume:
        raise XcbError("run: give a MATRIX file (or --resume RUN)")
    if args.resume:  # bad input fails before anything touches a cluster
        load_matrix(check_resume(args.resume))
    if args.matrix:
        load_matrix(args.matrix)
    opts = options(args)
    cluster = cluster_from_args(args)
    return execute(args.matrix, cluster, opts)
