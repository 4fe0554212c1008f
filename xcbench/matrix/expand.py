"""Matrix expansion: the Cartesian product per backend, then exclude, then include (asv's
iter_matrix); a cell's id (a hash of its settings) and its label."""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import replace
from typing import Any

from xcbench.cell import BACKENDS, Cell
from xcbench.matrix.schema import (
    BACKEND_KEYS,
    DEFAULTS,
    DIM_KEYS,
    LAYOUT_KEYS,
    RULE_KEYS,
    TOP_KEYS,
    _as_list,
    _dims,
    _Errors,
    _layout,
    _size,
    _unknown,
    check_layout,
    parse_pool,
)
from xcbench.sizes import format_size


def cell_id(settings: dict[str, Any]) -> str:
    blob = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def _label(c: Cell) -> str:
    parts = [c.backend]
    if c.layout:
        lay = c.layout
        parts.append(f"su={format_size(lay.stripe_unit)} sc={lay.stripe_count} "
                     f"os={format_size(lay.object_size)}")
    if c.pool:
        parts.append(c.pool.label)
    if c.tmpfs_size:
        parts.append(format_size(c.tmpfs_size))
    parts += [f"o{c.origins}", c.mode]
    return " ".join(parts)


def _finish(cell: Cell) -> Cell:
    cell = replace(cell, id="x", label="x")
    return replace(cell, id=cell_id(cell.settings()), label=_label(cell))


def _matches(rule: dict, cell: Cell) -> bool:
    facts = {"backend": cell.backend, "origins": cell.origins, "mode": cell.mode,
             "files": cell.files, "file_size": cell.file_size, "size": cell.tmpfs_size,
             "concurrency": cell.concurrency}
    if cell.layout:
        facts.update(stripe_unit=cell.layout.stripe_unit, stripe_count=cell.layout.stripe_count,
                     object_size=cell.layout.object_size)
    for key, want in rule.items():
        if key == "pool":
            if cell.pool is None or (want not in (cell.pool.kind, cell.pool.label, cell.pool.name)):
                return False
        elif key == "concurrency":
            if want not in cell.concurrency and tuple(_as_list(want)) != cell.concurrency:
                return False
        elif facts.get(key) != want:
            return False
    return True


def _rule(errors: _Errors, where: str, rule: Any) -> dict | None:
    if not isinstance(rule, dict) or not rule:
        errors.add(where, "rule", f"{rule!r} is not a non-empty mapping")
        return None
    _unknown(errors, where, rule, RULE_KEYS + DIM_KEYS)
    out = dict(rule)
    if "backend" in out and out["backend"] not in BACKENDS:
        errors.add(where, "backend", f"{out['backend']!r} is not one of {', '.join(BACKENDS)}")
    if "pool" in out:
        try:
            p = parse_pool(out["pool"])
            out["pool"] = out["pool"] if out["pool"] in ("replicated", "erasure") else p.label
        except ValueError as e:
            errors.add(where, "pool", str(e))
    for key in ("stripe_unit", "object_size", "size", "file_size"):
        if key in out:
            out[key] = _size(errors, where, key, out[key])
    return out


def expand(raw: dict[str, Any], path: str, errors: _Errors) -> list[Cell]:
    """The cells of a parsed matrix (structure checks only; see validate() for Ceph's rules)."""
    if not isinstance(raw, dict):
        errors.add("top level", "matrix", "is not a mapping")
        return []
    _unknown(errors, "top level", raw, TOP_KEYS)
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, dict):
        errors.add("defaults", "defaults", "is not a mapping")
        defaults = {}
    _unknown(errors, "defaults", defaults, DIM_KEYS)
    base = {**DEFAULTS, **_dims(errors, "defaults", defaults)}
    backends = raw.get("backends")
    if not isinstance(backends, dict) or not backends:
        errors.add("top level", "backends", "missing or empty (tmpfs, cephfs, rados)")
        return []
    cells: list[Cell] = []
    for bname, bspec in backends.items():
        where = f"backends.{bname}"
        if bname not in BACKENDS:
            errors.add("backends", str(bname), f"unknown backend (one of {', '.join(BACKENDS)})")
            continue
        bspec = bspec or {}
        if not isinstance(bspec, dict):
            errors.add(where, bname, "is not a mapping")
            continue
        _unknown(errors, where, bspec, BACKEND_KEYS[bname])
        dims = {**base, **_dims(errors, where, bspec)}
        dims["probe"] = {**base["probe"], **dims["probe"]}
        dims["gateway"] = {**base["gateway"], **dims["gateway"]}
        dims["campaign"] = {**base["campaign"], **dims["campaign"]}
        targets: list[dict] = []
        if bname == "tmpfs":
            for i, v in enumerate(_as_list(bspec.get("size", "1G"))):
                n = _size(errors, f"{where}.size[{i}]", "size", v)
                if n is not None:
                    targets.append({"tmpfs_size": n})
        else:
            for key in ("layouts", "pools"):
                if not bspec.get(key):
                    errors.add(where, key, "missing or empty")
            layouts = [_layout(errors, f"{where}.layouts[{i}]", e)
                       for i, e in enumerate(_as_list(bspec.get("layouts") or []))]
            pools = []
            for i, p in enumerate(_as_list(bspec.get("pools") or [])):
                try:
                    pools.append(parse_pool(p))
                except ValueError as e:
                    errors.add(f"{where}.pools[{i}]", "pool", str(e))
            for i, lay in enumerate(layouts):
                if lay is not None:
                    check_layout(errors, f"{where}.layouts[{i}]", lay)
            targets = [{"layout": lay, "pool": p} for lay, p in
                       itertools.product([x for x in layouts if x], pools)]
        for tgt, origins, mode in itertools.product(targets, dims["origins"], dims["modes"]):
            cells.append(_finish(Cell(
                id="", label="", backend=bname, origins=origins, mode=mode,
                concurrency=dims["concurrency"], file_size=dims["file_size"] or DEFAULTS["file_size"],
                files=dims["files"] or 1, size_dist=dims["size_dist"], repeats=dims["repeats"] or 1,
                gateway=dims["gateway"], probe=dims["probe"], campaign=dims["campaign"],
                source=path, **tgt)))
    for i, rule in enumerate(_as_list(raw.get("exclude") or [])):
        r = _rule(errors, f"exclude[{i}]", rule)
        if r is not None:
            cells = [c for c in cells if not _matches(r, c)]
    for i, spec in enumerate(_as_list(raw.get("include") or [])):
        cells.extend(_include(errors, f"include[{i}]", spec, base, path))
    unique: dict[str, Cell] = {}
    for c in cells:
        unique.setdefault(c.id, c)
    return list(unique.values())


def _include(errors: _Errors, where: str, spec: Any, base: dict, path: str) -> list[Cell]:
    """An include entry is one extra target: backend + (layout fields + pool | size) + dims."""
    if not isinstance(spec, dict) or "backend" not in spec:
        errors.add(where, "backend", "an include entry needs a backend")
        return []
    b = spec["backend"]
    if b not in BACKENDS:
        errors.add(where, "backend", f"{b!r} is not one of {', '.join(BACKENDS)}")
        return []
    allowed = ("backend", "pool", "size") + LAYOUT_KEYS + DIM_KEYS + ("mode", "concurrency")
    _unknown(errors, where, spec, allowed)
    dimsrc = {k: v for k, v in spec.items() if k in DIM_KEYS}
    if "mode" in spec:
        dimsrc["modes"] = spec["mode"]
    dims = {**base, **_dims(errors, where, dimsrc)}
    raw: dict[str, Any] = {"backends": {b: {}}}
    if b == "tmpfs":
        raw["backends"][b]["size"] = spec.get("size", "1G")
    else:
        raw["backends"][b]["layouts"] = [{k: spec[k] for k in LAYOUT_KEYS if k in spec}]
        raw["backends"][b]["pools"] = [spec.get("pool", "replicated")]
    raw["defaults"] = {k: v for k, v in dims.items() if k in DIM_KEYS}
    raw["defaults"]["concurrency"] = list(dims["concurrency"])
    sub = _Errors(errors.path)
    cells = expand(raw, path, sub)
    for line in sub.lines:  # re-home the sub-errors under the include entry
        errors.lines.append(line.replace(f"{errors.path}: backends.{b}", f"{errors.path}: {where}", 1))
    return cells
