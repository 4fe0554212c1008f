"""xcbench matrix check|show FILE: validate a matrix, or list its cells as a table."""

from __future__ import annotations

import argparse
import json
import sys

from xcbench.errors import XcbError
from xcbench.figures.units import format_size, parse_size
from xcbench.matrix import ClusterFacts, check_lines, load_matrix


def add_parser(sub):
    p = sub.add_parser("matrix", help="check or show a matrix file",
                       description="Check a matrix file (every error names the file, cell and field) "
                       "or show the cells it expands to.")
    _options(p, listed=False)  # before the action, as the older spelling had them
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, what in (("check", "every error, one line each (exit 2)"), ("show", "the cells as a table")):
        a = acts.add_parser(name, help=what, description=f"{name.capitalize()} a matrix file: {what}.")
        a.add_argument("file", metavar="FILE", help="the matrix YAML")
        _options(a, listed=True)
    return p


def _options(p, listed: bool) -> None:
    """The cluster the matrix is checked for, and --json: listed under each action; before it
    (the older spelling) unlisted, and a value given there stands unless given again after it."""
    def add(*flags, **kw):
        if listed:
            kw["default"] = argparse.SUPPRESS  # not given here: the value before the action stands
        else:
            kw["help"] = argparse.SUPPRESS
        p.add_argument(*flags, **kw)
    add("--scale-ec", action="store_true", default=False,
        help="map EC k+m pools that do not fit the cluster onto what fits")
    add("--osds", type=int, metavar="N", default=None, help="validate for a cluster with this many OSDs")
    add("--ceph-hosts", dest="hosts", type=int, metavar="N", default=1,
        help="... and this many hosts (default 1)")
    # the older --hosts N, unlisted: elsewhere --hosts is an inventory FILE
    p.add_argument("--hosts", dest="hosts", type=int, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    add("--max-object-size", default="128M", metavar="SIZE",
        help="the cluster's osd_max_object_size (default 128M, Ceph's default)")
    add("--failure-domain", choices=("osd", "host"), default="osd",
        help="where the pools' CRUSH rule places replicas and chunks (default osd)")
    add("--json", action="store_true", default=False,
        help="check: {file, ok, errors, cells}; show: the cells' settings, as JSON")


def _facts(args) -> ClusterFacts | None:
    for flag, v in (("--osds", args.osds), ("--ceph-hosts", args.hosts)):
        if v is not None and not 1 <= v <= 1_000_000:
            raise XcbError(f"{flag}: {v if v.bit_length() < 64 else 'a number this large'} "
                           "must be >= 1 and <= 1000000")
    try:
        maxobj = parse_size(args.max_object_size)
    except ValueError as e:
        raise XcbError(f"--max-object-size: {e}") from e
    if not 0 < maxobj <= 1 << 40:
        raise XcbError(f"--max-object-size: {args.max_object_size} must be > 0 and <= 1T")
    if args.osds is None:
        return None
    return ClusterFacts(maxobj, args.osds, args.hosts, args.failure_domain)


def _direction(c) -> str:
    """read / mixed 0.5 / read readv 64x64K: how a reading cell reads."""
    camp = c.campaign or {}
    text = c.direction + (f" {camp.get('read_fraction', 0.5):g}" if c.direction == "mixed" else "")
    access = camp.get("access")
    if isinstance(access, dict) and access.get("pattern", "full") != "full":
        text += f" {access['pattern']} {access.get('count', 16)}x{access.get('size', '64K')}"
    elif isinstance(access, str) and access != "full":
        text += f" {access}"
    return text


def main(args) -> int:
    facts = _facts(args)
    if args.action == "check":
        lines = check_lines(args.file, facts=facts, scale_ec=args.scale_ec)
        m = None if lines else load_matrix(args.file, facts=facts, scale_ec=args.scale_ec)
        if args.json:
            print(json.dumps({"file": args.file, "ok": not lines, "errors": lines,
                              "cells": len(m.cells) if m else None}, indent=1))
        for line in lines:  # every error, each as one user error is said (cli.main)
            print(f"xcbench: error: {line}", file=sys.stderr)
        if lines:
            return 2
        if not args.json:
            print(f"{args.file}: ok, {len(m.cells) if m else 0} cells")
        return 0
    m = load_matrix(args.file, facts=facts, scale_ec=args.scale_ec)
    if args.json:
        print(json.dumps({"name": m.name, "file": args.file, "scaled_ec": dict(m.scaled_ec),
                          "cells": [{"id": c.id, "label": c.label, **c.settings()} for c in m.cells]},
                         indent=1, default=str))
        return 0
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"{m.name}: {len(m.cells)} cells")
    for col in ("id", "backend", "stripe unit", "stripe count", "object size", "pool",
                "origins", "mode", "concurrency", "files × size", "repeats"):
        t.add_column(col)
    dims = any(c.streams or c.size_class or c.cores or c.direction != "write" for c in m.cells)
    if dims:  # only for matrices that use them: the demo's table stays as it was
        t.add_column("streams / size class / cores / direction")
    for c in m.cells:
        lay = c.layout
        extra = [" ".join(x for x in (f"s{c.streams}" if c.streams else "",
                                      c.label.split()[-1] if c.size_class else "",
                                      f"{c.cores:g} cores" if c.cores else "",
                                      _direction(c) if c.direction != "write" else "") if x)] \
            if dims else []
        t.add_row(c.id, c.backend,
                  format_size(lay.stripe_unit) if lay else "-",
                  str(lay.stripe_count) if lay else "-",
                  format_size(lay.object_size) if lay else "-",
                  c.pool.label if c.pool else f"tmpfs {format_size(c.tmpfs_size or 0)}",
                  str(c.origins), c.mode, ",".join(map(str, c.concurrency)),
                  f"{c.files} × {format_size(c.file_size)}", str(c.repeats), *extra)
    Console(width=160).print(t)
    for old, new in m.scaled_ec.items():
        print(f"scaled {old} -> {new} (--scale-ec)")
    return 0
