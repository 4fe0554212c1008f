"""A matrix's ``reference:`` key: the published table the matrix reproduces.

    reference:
      source: RAL (STFC), CHEP 2024 — CephFS layouts behind XRootD gateways
      conditions: {mount: cephfs kernel, pool: ec8+3, hosts: 4, osds: 54 HDD, fts_limits: [200, 400]}
      rows:                       # one per layout, each a layout of the matrix
        - {stripe_unit: 8M, object_size: 16M, stripe_count: 2, io_rate_gib_s: 2.8, iops: 480}

The report's layout table shows these figures beside the run's own (a reference column). The
rows are validated with the matrix, before anything touches a cluster: every row must name a
layout that the matrix measures, once, with a positive published rate and/or IOPS. The section
and its figures follow the one schema of published figures (xcbench.figures.published), which a
plan's ``published:`` follows too.
"""

from __future__ import annotations

from typing import Any

from xcbench.figures.published import SOURCE_KEYS, check_source, check_value
from xcbench.figures.units import layout_label, parse_size

KEYS = (*SOURCE_KEYS, "rows")
LAYOUT = ("stripe_unit", "stripe_count", "object_size")
FIGURES = {"io_rate_gib_s": "B/s", "iops": "op/s"}  # figure -> unit (io_rate_gib_s: in GiB/s)
GIB = float(1 << 30)


def check_reference(raw: Any, cells: list, errors: Any) -> dict[str, Any] | None:
    """The normalised ``reference`` of a parsed matrix (None when it has none); problems go to
    ``errors`` (matrix._Errors: one line each, naming reference.rows[i] and the field)."""
    ref = raw.get("reference") if isinstance(raw, dict) else None
    if ref is None:
        return None
    if not isinstance(ref, dict):
        errors.add("reference", "reference", f"{ref!r} is not a mapping of {', '.join(KEYS)}")
        return None
    for key in ref:
        if key not in KEYS:
            errors.add("reference", str(key), f"unknown key (allowed: {', '.join(KEYS)})")
    head = check_source(ref, lambda name, msg: errors.add("reference", name, msg))
    rows = ref.get("rows")
    if not isinstance(rows, list) or not rows:
        errors.add("reference", "rows", "missing or empty: one row per published layout")
        rows = []
    layouts = {(c.layout.stripe_unit, c.layout.stripe_count, c.layout.object_size)
               for c in cells if getattr(c, "layout", None) is not None}
    out, seen = [], set()
    for i, row in enumerate(rows):
        where = f"reference.rows[{i}]"
        if not isinstance(row, dict):
            errors.add(where, "row", f"{row!r} is not a mapping of {', '.join((*LAYOUT, *FIGURES))}")
            continue
        for key in row:
            if key not in (*LAYOUT, *FIGURES):
                errors.add(where, str(key), f"unknown key (allowed: {', '.join((*LAYOUT, *FIGURES))})")
        lay: list[int | None] = []
        for key in LAYOUT:
            if key not in row:
                errors.add(where, key, "missing")
                lay.append(None)
            elif key == "stripe_count":
                v = row[key]
                ok = isinstance(v, int) and not isinstance(v, bool) and v >= 1
                if not ok:
                    errors.add(where, key, f"{v!r} is not an integer >= 1")
                lay.append(v if ok else None)
            else:
                try:
                    lay.append(parse_size(row[key]))
                except (ValueError, TypeError) as e:
                    errors.add(where, key, str(e))
                    lay.append(None)
        problem = (lambda w: lambda name, msg: errors.add(w, name, msg))(where)
        figs = {k: check_value(row[k], unit, k, problem, scale=GIB, ranged=False)
                for k, unit in FIGURES.items() if k in row}
        if not figs:
            errors.add(where, "io_rate_gib_s", "a row needs the published io_rate_gib_s and/or iops")
        if None in lay:
            continue
        key = tuple(lay)
        if key not in layouts:
            errors.add(where, "stripe_unit", f"layout {layout_label(*key)} is not a layout of this "
                       "matrix (add it, or drop the row)")
        elif key in seen:
            errors.add(where, "stripe_unit", "a second row for the same layout")
        seen.add(key)
        su, sc, os_ = key
        rate, iops = figs.get("io_rate_gib_s"), figs.get("iops")
        out.append({"stripe_unit": su, "stripe_count": sc, "object_size": os_,
                    "io_rate_gib_s": rate[0] / GIB if rate else None,
                    "io_rate": rate[0] if rate else None, "iops": iops[0] if iops else None})
    return {**head.to_dict(), "rows": out}


def lookup(reference: dict[str, Any] | None, stripe_unit: Any, stripe_count: Any,
           object_size: Any) -> dict[str, Any] | None:
    """The reference row of a layout (sizes in bytes), or None."""
    for r in (reference or {}).get("rows") or []:
        try:
            if (int(r["stripe_unit"]), int(r["stripe_count"]), int(r["object_size"])) == \
                    (int(stripe_unit), int(stripe_count), int(object_size)):
                return r
        except (TypeError, ValueError):
            return None
    return None


# RAL's published gateway figures: one XRootD gateway in front of XrdBlackhole (a
# sink/source with no storage behind it), writes and reads at increasing numbers of parallel
# files. The issue gives the rates and the ranges "1-16" (writes, five figures) and "1-32"
# (reads, six figures); five and six figures fit doubling steps, so the parallel-file counts
# below are 1, 2, 4, ..., an interpretation stated wherever the report shows them.
RAL_GATEWAY: dict[str, Any] = {
    "source": "RAL (STFC), XRootD gateway with XrdBlackhole, one gateway",
    "note": "parallel files 1-16 (writes) and 1-32 (reads) as published; the doubling steps "
            "(1, 2, 4, ...) are xcbench's reading of those ranges",
    "write": {"files": (1, 2, 4, 8, 16), "gbps": (8.0, 13.0, 24.0, 30.0, 32.0)},
    "read": {"files": (1, 2, 4, 8, 16, 32), "gbps": (14.5, 27.0, 39.0, 91.0, 150.0, 184.0)},
}


def ral_gateway_rows() -> list[dict[str, Any]]:
    """[{files, write_gbps, read_gbps, read_over_write}] of RAL_GATEWAY (None where unpublished)."""
    w = dict(zip(RAL_GATEWAY["write"]["files"], RAL_GATEWAY["write"]["gbps"], strict=True))
    r = dict(zip(RAL_GATEWAY["read"]["files"], RAL_GATEWAY["read"]["gbps"], strict=True))
    out = []
    for n in sorted(set(w) | set(r)):
        out.append({"files": n, "write_gbps": w.get(n), "read_gbps": r.get(n),
                    "read_over_write": r[n] / w[n] if n in r and n in w else None})
    return out
