"""xcbench run MATRIX: probes, campaigns and telemetry for every cell; verdicts and a report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from xcbench.analysis.conclude import conclude
from xcbench.analysis.report import glance
from xcbench.analysis.verdicts import between_run
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.backends.base import backend_class
from xcbench.ceph.access import check_access
from xcbench.ceph.cluster import cluster_from_args
from xcbench.commands import add_store_arg, argcheck, store_of
from xcbench.commands.options import add_ceph_args, add_fts_endpoint_arg, add_run_name_arg
from xcbench.errors import XcbError
from xcbench.hosts.checks import check_versions
from xcbench.hosts.matrix_section import inventory_for
from xcbench.hosts.slurm import nodes_of
from xcbench.matrix import load_matrix
from xcbench.network.baseline import DIRECTIONS, MAX_STREAMS, SECONDS, STREAMS
from xcbench.network.tcpaudit import tuned
from xcbench.run.progress import MatrixView
from xcbench.run.runner import RunOptions, RunStopped, run_matrix
from xcbench.store.catalog import resolve_run
from xcbench.store.rundir import RunDir
from xcbench.store.storedir import check_store
from xcbench.system.http_auth import check_secret_url, check_url, read_auth
from xcbench.system.secrets_policy import fts_endpoint_problems
from xcbench.telemetry.devices import parse_selection
from xcbench.telemetry.matrix_section import matrix_prometheus

if TYPE_CHECKING:
    from xcbench.matrix import Matrix


def add_parser(sub):
    p = sub.add_parser("run", help="run a matrix: probes, campaigns, telemetry, verdicts, report",
                       description="Run every cell of a matrix: iperf3 baseline, fio probes, a transfer "
                       "campaign per concurrency level with telemetry, then the verdicts (what capped "
                       "each level) and the report; ends with the closing table.")
    p.add_argument("matrix", nargs="?", help="matrix YAML (default with --resume: the run's own)")
    add_run_args(p)
    p.add_argument("--hosts", metavar="FILE",
                   help="inventory of hosts (YAML): campaigns from its client hosts, gateways on "
                        "its gateway hosts, iperf3 between them; its slurm: section, or the word "
                        "slurm inside an allocation, takes nodes from Slurm (docs/slurm.md) "
                        "(default: the matrix's hosts:, else everything on this machine)")
    add_ceph_args(p)
    return p


def add_run_args(p) -> None:
    add_store_arg(p)
    add_run_name_arg(p)
    p.add_argument("--repeats", type=int, help="repeat every campaign N times (overrides the matrix)")
    p.add_argument("--resume", metavar="RUN",
                   help="run only the cells of RUN not yet complete (directory, id in --store, or "
                        "'latest')")
    p.add_argument("--scale-ec", action="store_true",
                   help="map EC k+m pools that do not fit the cluster onto what fits (recorded)")
    p.add_argument("--fio-hosts", metavar="H1,H2",
                   help="fio servers (host or host:port, running `fio --server`) for multi-host probes")
    p.add_argument("--no-baseline", action="store_true", help="skip the iperf3 baseline")
    p.add_argument("--baseline-streams", metavar="LIST",
                   help="the iperf3 baseline's stream counts, comma-separated (default "
                        f"{','.join(map(str, STREAMS))})")
    p.add_argument("--baseline-seconds", type=int, metavar="SECONDS",
                   help=f"seconds per iperf3 point (default {SECONDS})")
    p.add_argument("--tune-tcp", action="store_true",
                   help="set ESnet fasterdata's TCP sysctls for the run, restore them after (root)")
    p.add_argument("--no-probes", action="store_true", help="skip the fio probes")
    p.add_argument("--no-report", action="store_true", help="do not render the report")
    p.add_argument("--format", choices=("html", "md"), default="html", help="report format")
    p.add_argument("--json", action="store_true",
                   help="end with the closing table as JSON on stdout (the paths go to stderr)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress lines: only the closing table, the paths and what went wrong")
    p.add_argument("--telemetry", metavar="DEVICES",
                   help="telemetry devices and intervals, e.g. host,gateway or host:0.5,ceph:2, "
                        "or none (default: every device; see `xcbench telemetry list`)")
    p.add_argument("--prometheus", metavar="URL",
                   help="the site's Prometheus (node_exporter on the storage hosts, the ceph-mgr "
                        "module); default: the matrix's prometheus:, else the inventory's, else the "
                        "embedded cluster's")
    add_fts_endpoint_arg(p)
    p.add_argument("--prometheus-auth", metavar="KIND:PATH",
                   help="credentials for --prometheus from a file: bearer:PATH (a token) or "
                        "basic:PATH (user:password)")


def options(args):
    argcheck.number("--repeats", args.repeats, 1, 10_000)
    argcheck.name("--run-name", args.run_name)
    argcheck.directory("--store", str(store_of(args)))
    check_store(store_of(args), make=False)  # ours, not a link, nobody else's: before anything runs
    argcheck.hosts("--fio-hosts", args.fio_hosts)
    parse_selection(args.telemetry)  # a bad device or interval fails here, before any cluster
    extra: dict = {"tune_tcp": args.tune_tcp, "json": getattr(args, "json", False),
                   "quiet": getattr(args, "quiet", False)}
    streams, seconds = getattr(args, "baseline_streams", None), getattr(args, "baseline_seconds", None)
    argcheck.number("--baseline-seconds", seconds, 1, 60)
    baseline: dict = {}
    if streams is not None:
        baseline["streams"] = argcheck.int_list("--baseline-streams", streams, 1, MAX_STREAMS)
    if seconds is not None:
        baseline["seconds"] = seconds
    if baseline:
        extra["baseline"] = baseline
    if getattr(args, "prometheus", None) or getattr(args, "prometheus_auth", None):
        if not args.prometheus:
            raise XcbError("--prometheus-auth: give --prometheus URL too")
        extra["prometheus"] = {"url": check_url(args.prometheus),
                               "auth": read_auth(args.prometheus_auth)}
        check_secret_url(extra["prometheus"]["url"], extra["prometheus"]["auth"])
    return RunOptions(store=Path(store_of(args)), repeats=args.repeats, name=args.run_name,
                      resume=resolve_run(args.resume, store_of(args)).path if args.resume else None, scale_ec=args.scale_ec,
                      fio_hosts=args.fio_hosts.split(",") if args.fio_hosts else None,
                      baseline=not args.no_baseline, probes=not args.no_probes,
                      report=not args.no_report, report_format=args.format,
                      telemetry=args.telemetry, extra=extra,
                      # this host's between-run noise, measured between fresh clusters
                      # (benchmarks/bench_repeatability.py), recorded in a new run's manifest
                      between_run=between_run.load())


def matrix_path(matrix: str | None, opts) -> str:
    """The matrix file to run: MATRIX, or with --resume the run's own (and its --scale-ec)."""
    if opts.resume:
        prev = RunDir.open(opts.resume).state
        kind = prev.extra.get("kind")
        if kind not in (None, "run"):
            raise XcbError(f"{opts.resume}: --resume: not a run of `xcbench run` (it was made by "
                           f"`xcbench {kind}`); start a new one instead")
        given = prev.matrix or {}
        path = given.get("path")
        opts.scale_ec = bool(given.get("scaled_ec")) or opts.scale_ec
        if not isinstance(path, str) or not Path(path).is_file():
            raise XcbError(f"{opts.resume}: the run's matrix file {path!r} is gone")
        return str(path)
    if not matrix:
        raise XcbError("run: give a MATRIX file (or --resume RUN)")
    return matrix


def load_run_matrix(path: str | Path, cluster, opts) -> Matrix:
    """The matrix parsed once for the run: with the cluster's facts when there is a cluster
    (call load_matrix(path) first, before the cluster is asked, to fail fast on bad input)."""
    if cluster is None:
        return load_matrix(path)
    return load_matrix(path, cluster, scale_ec=opts.scale_ec)


def execute(matrix: Matrix, cluster, opts) -> int:
    """Run, conclude and print where the results are; 130 after Ctrl-C (everything flushed and
    stopped, the verdicts of what was measured stored)."""
    try:
        with tuned(opts.extra.get("tune_tcp", False)):  # old sysctls back on any exit
            view = MatrixView(one_box=one_box(cluster, opts), probes=opts.probes,
                              repeats=opts.repeats, baseline=baseline_shape(opts),
                              quiet=bool(opts.extra.get("quiet")))
            run = run_matrix(matrix, cluster, opts, view=view)
    except RunStopped as e:
        conclude(e.run)
        print(f"interrupted: what was measured is in {e}; continue with "
              f"`xcbench run --resume {e}`", file=sys.stderr)
        return 130
    return finish(run, opts)


def finish(run: RunDir, opts) -> int:
    """A finished run concluded from one load of it (xcbench.analysis.conclude: the verdicts,
    the reports), then its closing table and paths; 1 when a cell failed."""
    rd = conclude(run, opts.report_format if opts.report else None)
    failed = [c for c in run.cells.values() if c.status == "failed"]
    as_json = bool(opts.extra.get("json"))
    fit = closing(rd, as_json)
    out = sys.stderr if as_json else sys.stdout
    print(f"run: {run.path.resolve()}", file=out)
    if run.state.report:
        print(f"report: {Path(run.state.report).resolve()}", file=out)
    if run.state.report and fit:  # not when the box, not the path, capped most levels
        print("next: size gateways and disks for a target rate from what this run measured:",
              file=out)
        print(f"  xcbench plan --calibrate {run.path}", file=out)
    for w in run.state.warnings or []:
        print(f"warning: {w}", file=sys.stderr)
    for c in failed:
        print(f"failed cell {c.label}: {c.error}", file=sys.stderr)
    return 1 if failed else 0


def baseline_shape(opts) -> tuple[int, int, float] | None:
    """The iperf3 baseline the run will make, for its estimate: (stream counts, directions,
    seconds a point), or None without one."""
    if not opts.baseline:
        return None
    b = opts.extra.get("baseline") or {}
    return (len(b.get("streams") or STREAMS), len(DIRECTIONS), float(b.get("seconds") or SECONDS))


def one_box(cluster, opts) -> bool:
    """Every role on this machine: no inventory of hosts, and no cluster or the embedded one
    with its OSDs here (not inside an emulated storage host, `cluster up --osd-host`)."""
    if opts.hosts is not None:
        return False
    return cluster is None or (bool(cluster.embedded) and not (cluster.info or {}).get("osd_host"))


def closing(rd: RunData, as_json: bool = False) -> bool:
    """The closing table of a run (analysis.report.glance): what capped each level; best effort, so a
    run that measured but cannot be summarised still ends with its paths. True when the run
    is fit for sizing (analysis.verdicts.experiment_next)."""
    import json
    try:
        rows = glance.rows(rd)
    except Exception as e:  # noqa: BLE001 - the records are safe; only the summary failed
        print(f"closing table: not made ({type(e).__name__}: {e}); "
              f"`xcbench report {rd.run.path} --format text` retries it", file=sys.stderr)
        return False
    if as_json:
        print(json.dumps(glance.as_json(rd, rows), indent=1, default=str))
    else:
        glance.print_table(rd, rows)
    return glance.fit_for_sizing(rd, rows)


def hosts(args, parsed, opts) -> None:
    """The run's inventory (``--hosts``, else the matrix's) into ``opts.hosts``, and the same
    xcbench on every host checked first (one line naming the host that differs)."""
    inv = inventory_for(getattr(args, "hosts", None), parsed.raw, parsed.path)
    if inv is None:
        return
    if inv.slurm is None:  # nodes from Slurm: checked once they are known (nodes_of)
        check_versions(inv)
    opts.hosts = inv
    if inv.ceph and not getattr(args, "ceph_conf", None):  # the cluster every host reaches
        args.ceph_conf = inv.ceph.get("conf")
        args.ceph_id = getattr(args, "ceph_id", None) or inv.ceph.get("id")


def prometheus(opts, parsed) -> None:
    """The run's Prometheus: the command line's (``--prometheus``), else the matrix's
    ``prometheus:``; without either, the telemetry device takes the inventory's, else the
    embedded cluster's (xcbench.telemetry.devices.prometheus_of)."""
    if opts.extra.get("prometheus"):
        return
    conf = matrix_prometheus(parsed.raw, parsed.path)
    if conf:
        opts.extra["prometheus"] = conf


def operator_named(args, parsed) -> None:
    """The matrix's FTS endpoints that receive a credential, named on the command line too
    (--fts-endpoint): a matrix alone sends no secret anywhere (xcbench.system.secrets_policy)."""
    refused = fts_endpoint_problems(parsed.cells, parsed.path, getattr(args, "fts_endpoint", None))
    if refused:
        raise XcbError(refused[0])


def main(args) -> int:
    if not args.matrix and not args.resume:
        raise XcbError("run: give a MATRIX file (or --resume RUN)")
    opts = options(args)
    path = matrix_path(args.matrix, opts)
    parsed = load_matrix(path)  # structure first: bad input fails before anything touches a cluster
    operator_named(args, parsed)
    hosts(args, parsed, opts)
    prometheus(opts, parsed)
    with nodes_of(opts.hosts) as inv:  # nodes from Slurm: for the run, given back after
        opts.hosts = inv
        return _on_cluster(args, path, parsed, opts)


def _on_cluster(args, path, parsed, opts) -> int:
    """The matrix executed on the run's cluster (none for a tmpfs-only matrix)."""
    if not any(backend_class(c.backend).needs_cluster for c in parsed.cells):  # tmpfs only
        return execute(load_run_matrix(path, None, opts), None, opts)
    cluster = cluster_from_args(args)
    matrix = load_run_matrix(path, cluster, opts)
    check_access(cluster, matrix.cells, backend_class)  # the key can do what the matrix needs: asked, not tried
    return execute(matrix, cluster, opts)
