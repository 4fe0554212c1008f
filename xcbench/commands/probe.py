"""xcbench probe MATRIX [--cell ID]: fio probes of a matrix's cells, on their own.

Each cell's target is prepared by its backend, probed by fio and cleaned up;
cells that differ only in what the probe does not see (origins, mode, concurrency, ...) share
one probe. Prints a table like RAL's: stripe unit, stripe count, object size, pool -> IO rate
(Gb/s, sequential object-sized writes, with RAL's GiB/s in brackets; reads beside it) and IOPS
(4 KiB random writes).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from xcbench.backends.base import backend_class
from xcbench.ceph.access import check_access
from xcbench.ceph.cluster import cluster_from_args
from xcbench.commands import argcheck
from xcbench.commands.options import add_ceph_args
from xcbench.errors import XcbError
from xcbench.figures.units import format_size, gbps_num
from xcbench.matrix import load_matrix
from xcbench.probe.fio import summary
from xcbench.probe.jobs import run_probe
from xcbench.run.session import CellSession
from xcbench.system import orphans
from xcbench.system.fsutil import remove_tree
from xcbench.system.proc import ProcessSet
from xcbench.system.signals import EXIT_CODE, current

GIB = float(1 << 30)


def add_parser(sub):
    p = sub.add_parser("probe", help="fio probes of a matrix's cells (storage ceiling per cell)",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("matrix", nargs="?", metavar="MATRIX", help="matrix YAML (as `xcbench run MATRIX`)")
    # the older spelling keeps working, unlisted, so a site's scripts do not break
    p.add_argument("--matrix", dest="matrix_flag", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--cell", action="append", metavar="ID",
                   help="only this cell (id, id prefix or label; repeatable)")
    p.add_argument("--fio-hosts", metavar="H1,H2",
                   help="fio servers (host or host:port, running `fio --server`) to probe from")
    p.add_argument("--runtime", type=int, metavar="S", help="seconds per fio job (overrides the matrix)")
    p.add_argument("--raw", metavar="DIR", help="keep fio job files and JSON+ output here")
    p.add_argument("--json", action="store_true", help="print the probe rows as JSON lines")
    add_ceph_args(p)
    return p


def _storage_key(cell) -> tuple:
    """What a probe of the cell depends on."""
    return (cell.backend, cell.layout, cell.pool, cell.tmpfs_size, cell.file_size,
            json.dumps(dict(cell.probe), sort_keys=True, default=str))


def _gib(v) -> str:
    """'4.58 (0.533)': Gb/s, the one rate unit, and GiB/s as RAL's table has it."""
    return "-" if v is None else f"{gbps_num(v)} ({v / GIB:.3f})"


def matrix_path(args) -> str:
    """MATRIX, or the same file given by the older ``--matrix FILE``; one line if neither or both."""
    if args.matrix and args.matrix_flag:
        raise XcbError(f"probe: two matrices given ({args.matrix} and --matrix {args.matrix_flag}); "
                       f"give one, as `xcbench probe MATRIX`")
    if not (args.matrix or args.matrix_flag):
        raise XcbError("probe: give a MATRIX file (`xcbench probe MATRIX`)")
    return args.matrix or args.matrix_flag


def main(args) -> int:
    path = matrix_path(args)
    argcheck.number("--runtime", args.runtime, 1, 86400)
    argcheck.directory("--raw", args.raw)
    hosts = argcheck.hosts("--fio-hosts", args.fio_hosts)
    matrix = load_matrix(path)
    cells = [matrix.cell(key) for key in args.cell] if args.cell else list(matrix.cells)
    cluster = None
    if any(backend_class(c.backend).needs_cluster for c in cells):
        cluster = cluster_from_args(args)
        matrix = load_matrix(path, cluster)  # validated against the cluster's limits
        cells = [matrix.cell(c.id) for c in cells]
        check_access(cluster, cells, backend_class)
    seen: dict[tuple, str] = {}
    todo = []
    for c in cells:
        key = _storage_key(c)
        if key not in seen:
            seen[key] = c.id
            todo.append(replace(c, probe={**c.probe, "runtime": args.runtime})
                        if args.runtime else c)

    results: list[tuple] = []  # (cell, summary rows | None, error | None)
    all_rows: list[dict] = []
    workdir = Path(tempfile.mkdtemp(prefix="xcb-probe-"))
    workdir.chmod(0o755)  # backends hand dirs under it to the xrootd user
    orphans.note_dir(workdir)  # after a kill -9, the next command removes it
    procs = ProcessSet()
    interrupted = None
    try:
        with ExitStack() as stack:
            stack.callback(procs.stop_all)
            for c in todo:
                print(f"probe: {c.id} {c.label} ...", file=sys.stderr, flush=True)
                try:
                    with CellSession(c, cluster=cluster, workdir=workdir / c.backend, procs=procs,
                                     gateway=False) as session:
                        raw = Path(args.raw) / c.id if args.raw else None
                        rows = run_probe(c, session.target, cluster=cluster,
                                         workdir=workdir / "fio" / c.id, sink=None, raw_dir=raw,
                                         hosts=hosts)
                except XcbError as e:
                    results.append((c, None, str(e)))
                    print(f"xcbench: error: {e}", file=sys.stderr)
                    continue
                all_rows += rows
                results.append((c, summary(rows), None))
                if args.json:  # each cell's rows as soon as they are measured: a signal loses none
                    for r in rows:
                        print(json.dumps(r), flush=True)
    except KeyboardInterrupt:  # SIGINT/SIGTERM/SIGHUP: fio and the targets are gone; report
        interrupted = current().name
    finally:
        remove_tree(workdir, unmount=True)
        if cluster is not None:  # librados left connected at exit can crash the interpreter
            cluster.close()      # (seen: exit -11 after an interrupted probe)

    if interrupted:
        print(f"interrupted ({interrupted}) after {len(results)} of {len(todo)} probes",
              file=sys.stderr)
    if args.json:
        return EXIT_CODE if interrupted else 1 if any(err for _, _, err in results) else 0
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"{matrix.name}: fio probes"
              + (f" from {len(hosts)} hosts" if hosts else ""))
    for col in ("cell", "backend", "stripe unit", "stripe count", "object size", "pool",
                "IO rate, Gb/s (GiB/s)", "read, Gb/s (GiB/s)", "IOPS", "p99 (ms)"):
        t.add_column(col, justify="right" if col[0].isupper() or "(" in col else "left")
    for c, rows, err in results:
        lay = c.layout
        by = {r["job"]: r for r in rows or []}
        w, rd, rw = by.get("write"), by.get("read"), by.get("randwrite")
        t.add_row(c.id, c.backend,
                  format_size(lay.stripe_unit) if lay else "-",
                  str(lay.stripe_count) if lay else "-",
                  format_size(lay.object_size) if lay else "-",
                  c.pool.label if c.pool else f"tmpfs {format_size(c.tmpfs_size or 0)}",
                  *((_gib(w and w["bw"]), _gib(rd and rd["bw"]),
                     "-" if rw is None else f"{rw['iops']:,.0f}",
                     "-" if not rw or rw["lat_p99_us"] is None else f"{rw['lat_p99_us'] / 1000:.2f}")
                    if err is None else ("error", err[:60], "", "")))
    Console(width=None if sys.stdout.isatty() else 160).print(t)
    return EXIT_CODE if interrupted else 1 if any(err for _, _, err in results) else 0
