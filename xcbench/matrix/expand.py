"""Matrix expansion: the Cartesian product per backend, then exclude, then include (asv's
iter_matrix); a cell's id (a hash of its settings) and its label."""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import replace
from typing import Any

from xcbench.cell import BACKENDS, Cell
from xcbench.cell.classes import class_range, class_sizes
from xcbench.figures.units import format_size
from xcbench.matrix.schema import (
    BACKEND_KEYS,
    DEFAULTS,
    DIM_KEYS,
    LAYOUT_KEYS,
    OPTIONAL_DIMS,
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


def cell_id(settings: dict[str, Any]) -> str:
    blob = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def _label(c: Cell) -> str:
    parts = [c.backend]
    if c.layout:
        parts.append(c.layout.label)
    if c.pool:
        parts.append(c.pool.label)
    if c.tmpfs_size:
        parts.append(format_size(c.tmpfs_size))
    parts += [f"o{c.origins}", c.mode]
    if c.cores is not None:
        parts.append(f"{c.cores:g}c")
    if c.streams is not None:
        parts.append(f"s{c.streams}")
    if c.size_class:
        parts.append(c.size_class + (f"/{c.size_scale}" if (c.size_scale or 1) > 1 else ""))
    if c.direction != "write":
        parts.append(c.direction)
    if c.security != "none":
        parts.append(c.security)
    return " ".join(parts)


def _finish(cell: Cell) -> Cell:
    cell = replace(cell, id="x", label="x")
    return replace(cell, id=cell_id(cell.settings()), label=_label(cell))


def _matches(rule: dict, cell: Cell) -> bool:
    facts = {"backend": cell.backend, "origins": cell.origins, "mode": cell.mode,
             "files": cell.files, "file_size": cell.file_size, "size": cell.tmpfs_size,
             "concurrency": cell.concurrency, "streams": cell.streams,
             "size_class": cell.size_class, "cores": cell.cores, "direction": cell.direction,
             "security": cell.security}
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
        optional = [dims.get(k) or [None] for k in OPTIONAL_DIMS]
        directions = dims.get("direction") or ["write"]
        securities = dims.get("security") or ["none"]
        for tgt, origins, mode, direction, security, *opt in itertools.product(
                targets, dims["origins"], dims["modes"], directions, securities, *optional):
            extra = dict(zip(OPTIONAL_DIMS, opt, strict=True))
            sizes = {"file_size": dims["file_size"] or DEFAULTS["file_size"],
                     "size_dist": dims["size_dist"]}
            if extra["size_class"]:  # the class decides the sizes (uniform between its bounds)
                scale = dims.get("size_scale") or 1
                extra["size_scale"] = scale if scale > 1 else None
                sizes = {k: v for k, v in class_sizes(extra["size_class"], scale).items()
                         if k in sizes}
                _check_class_fits(errors, where, extra["size_class"], scale,
                                  max(dims["concurrency"]), tgt.get("tmpfs_size"))
            cells.append(_finish(Cell(
                id="", label="", backend=bname, origins=origins, mode=mode,
                concurrency=dims["concurrency"], files=dims["files"] or 1,
                repeats=dims["repeats"] or 1, gateway_settings=dims["gateway"], probe=dims["probe"],
                campaign=dims["campaign"], source=path, direction=direction, security=security,
                **sizes, **extra,
                **tgt)))
    product = list(cells)
    for i, rule in enumerate(_as_list(raw.get("exclude") or [])):
        n_errors = len(errors.lines)
        r = _rule(errors, f"exclude[{i}]", rule)
        if r is not None:
            if product and len(errors.lines) == n_errors and \
                    not any(_matches(r, c) for c in product):
                errors.add(f"exclude[{i}]", "rule", f"{rule!r} matches no cell of the matrix "
                           f"(a value no cell has: a typo, or a dimension that is not there)")
            cells = [c for c in cells if not _matches(r, c)]
    for i, spec in enumerate(_as_list(raw.get("include") or [])):
        cells.extend(_include(errors, f"include[{i}]", spec, base, path))
    unique: dict[str, Cell] = {}
    for c in cells:
        unique.setdefault(c.id, c)
    return list(unique.values())


def _check_class_fits(errors: _Errors, where: str, name: str, scale: int, level: int,
                      room: int | None) -> None:
    """A tmpfs target must hold the files in flight at the top concurrency level (each is
    deleted once verified): otherwise ask for a size_scale, and say which would fit."""
    if not room:
        return
    hi = class_range(name, scale)[1]
    if hi * level > room:
        need = 1
        while class_range(name, need)[1] * level > room and need < 1 << 20:
            need *= 2
        errors.add(where, "size_class", f"{name} files up to {format_size(hi)} x concurrency "
                   f"{level} do not fit the {format_size(room)} tmpfs: set size_scale: {need} "
                   f"(or more) and say why in the matrix")


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
