"""Matrix files: YAML in layouts/ -> validated cells.

A matrix names backends and, per backend, the dimensions to cross::

    name: quick
    defaults:                 # dimensions shared by every backend (each may override them)
      origins: [1]
      modes: [push]           # push | tpc-root | tpc-http
      concurrency: [1, 4]     # campaign levels run inside each cell
      file_size: 16M
      files: 8
      size_dist: fixed        # fixed | uniform | lognormal
      repeats: 1
      probe: {runtime: 3, iodepth: 4, numjobs: 1, size: 64M}
      gateway: {async: false, buffers_maxbsz: 16M}
    backends:
      tmpfs:  {size: [1G]}
      cephfs: {layouts: [{stripe_unit: 4M, stripe_count: 1, object_size: 4M}], pools: [replicated, ec2+1]}
      rados:  {layouts: [...], pools: [rep1, {ec: 2+1}]}
    exclude: [{backend: rados, pool: ec2+1, stripe_count: 4}]   # drop matching cells
    include: [{backend: cephfs, stripe_unit: 64K, stripe_count: 1, object_size: 64K, pool: rep1}]

Expansion is the Cartesian product per backend (asv's iter_matrix: product, then exclude, then
include). Validation follows Ceph's own rules and happens before anything touches a cluster;
every error is one line naming the file, the cell (or the entry) and the field.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xcbench.cell import BACKENDS, MODES, Cell, Layout, PoolSpec
from xcbench.errors import XcbError
from xcbench.net import check_bind
from xcbench.sizes import format_size, parse_size
from xcbench.userfiles import read_yaml

STRIPE_ALIGN = 64 << 10  # CephFS/libradosstriper: stripe_unit must be a multiple of 64 KiB
SIZE_DISTS = ("fixed", "uniform", "lognormal")
TOP_KEYS = ("name", "description", "defaults", "backends", "exclude", "include")
DIM_KEYS = ("origins", "modes", "concurrency", "file_size", "files", "size_dist", "repeats",
            "probe", "gateway", "campaign")
BACKEND_KEYS = {"tmpfs": ("size",) + DIM_KEYS, "cephfs": ("layouts", "pools") + DIM_KEYS,
                "rados": ("layouts", "pools") + DIM_KEYS}
LAYOUT_KEYS = ("stripe_unit", "stripe_count", "object_size")
PROBE_KEYS = ("runtime", "iodepth", "numjobs", "size", "ramp", "ss", "ss_dur", "ss_ramp",
              "patterns", "bs", "direct")
GATEWAY_KEYS = ("async", "buffers_maxbsz", "cksio", "bind", "ceph")
CAMPAIGN_KEYS = ("client", "streams", "timeout", "retries", "retry_delay", "checksum", "overwrite",
                 "delete_after_verify", "optimizer", "seed")
RULE_KEYS = ("backend", "pool", "stripe_unit", "stripe_count", "object_size", "size", "origins",
             "mode", "concurrency", "file_size", "files")


@dataclass(frozen=True)
class ClusterFacts:
    """What validation needs to know of the target cluster."""
    osd_max_object_size: int = 128 << 20
    num_osds: int = 3
    num_hosts: int = 1
    failure_domain: str = "osd"

    @classmethod
    def of(cls, cluster: Any) -> ClusterFacts:
        return cls(cluster.osd_max_object_size(), cluster.num_osds(), cluster.num_hosts())


@dataclass
class Matrix:
    path: str
    name: str
    description: str
    cells: list[Cell]
    raw: dict[str, Any]
    scaled_ec: dict[str, str] = field(default_factory=dict)  # "ec8+3" -> "ec2+1" (--scale-ec)

    def cell(self, key: str) -> Cell:
        """A cell by id, id prefix or label."""
        hits = [c for c in self.cells if c.id.startswith(key) or c.label == key]
        if len(hits) != 1:
            what = "no cell" if not hits else f"{len(hits)} cells"
            raise XcbError(f"{self.path}: {what} matches {key!r} (see `xcbench matrix show`)")
        return hits[0]

    def manifest(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "raw": self.raw, "scaled_ec": self.scaled_ec,
                "cells": {c.id: {"label": c.label, **c.settings()} for c in self.cells}}


class _Errors:
    """Collects one-line errors; raise_if_any() raises the first (with a count of the rest)."""

    def __init__(self, path: str):
        self.path = path
        self.lines: list[str] = []

    def add(self, where: str, fieldname: str, msg: str) -> None:
        self.lines.append(f"{self.path}: {where}: {fieldname}: {msg}")

    def raise_if_any(self) -> None:
        if self.lines:
            more = f" (and {len(self.lines) - 1} more error(s): run `xcbench matrix check`)" \
                if len(self.lines) > 1 else ""
            err = XcbError(self.lines[0] + more)
            err.lines = list(self.lines)  # type: ignore[attr-defined]
            raise err


def _unknown(errors: _Errors, where: str, data: dict, allowed: tuple[str, ...]) -> None:
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else \
                f" (allowed: {', '.join(allowed)})"
            errors.add(where, str(key), f"unknown key{hint}")


def _size(errors: _Errors, where: str, name: str, value: Any) -> int | None:
    try:
        n = parse_size(value)
    except (ValueError, TypeError) as e:
        errors.add(where, name, str(e))
        return None
    return n


def _posint(errors: _Errors, where: str, name: str, value: Any, minimum: int = 1) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        errors.add(where, name, f"{value!r} is not an integer")
        return None
    if value < minimum:
        errors.add(where, name, f"{value} must be >= {minimum}")
        return None
    return value


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


_POOL_RE = re.compile(r"^(?:ec\s*(\d+)\s*[+-]\s*(\d+)|rep(?:licated)?\s*(\d*))$", re.IGNORECASE)


def parse_pool(value: Any) -> PoolSpec:
    """'replicated' | 'rep3' | {replicated: 3} | 'ec2+1' | {ec: '8+3'} | {ec: {k: 8, m: 3}}."""
    if isinstance(value, dict) and len(value) == 1:
        (kind, arg), = value.items()
        if kind in ("replicated", "rep"):
            value = f"rep{arg}"
        elif kind == "ec":
            if isinstance(arg, dict) and set(arg) == {"k", "m"}:
                value = f"ec{arg['k']}+{arg['m']}"
            else:
                value = f"ec{arg}"
    m = _POOL_RE.match(str(value).strip()) if isinstance(value, str) else None
    if not m:
        raise ValueError(f"{value!r} is not a pool (replicated, rep3, ec2+1, {{ec: 8+3}})")
    if m.group(1) is not None:
        k, mm = int(m.group(1)), int(m.group(2))
        if k < 1 or mm < 1:
            raise ValueError(f"{value!r}: EC needs k >= 1 and m >= 1")
        return PoolSpec("erasure", k=k, m=mm)
    size = int(m.group(3) or 1)
    if size < 1:
        raise ValueError(f"{value!r}: replicated size must be >= 1")
    return PoolSpec("replicated", size=size)


def _layout(errors: _Errors, where: str, entry: Any) -> Layout | None:
    if not isinstance(entry, dict):
        errors.add(where, "layout", f"{entry!r} is not a mapping of {', '.join(LAYOUT_KEYS)}")
        return None
    _unknown(errors, where, entry, LAYOUT_KEYS)
    for key in LAYOUT_KEYS:
        if key not in entry:
            errors.add(where, key, "missing")
    if any(k not in entry for k in LAYOUT_KEYS):
        return None
    su = _size(errors, where, "stripe_unit", entry["stripe_unit"])
    sc = _posint(errors, where, "stripe_count", entry["stripe_count"])
    os_ = _size(errors, where, "object_size", entry["object_size"])
    if None in (su, sc, os_):
        return None
    return Layout(su, sc, os_)


def check_layout(errors: _Errors, where: str, lay: Layout) -> None:
    """Ceph's own rules (CephFS file layouts and libradosstriper reject the rest with EINVAL)."""
    if lay.stripe_unit == 0 or lay.stripe_unit % STRIPE_ALIGN:
        errors.add(where, "stripe_unit",
                   f"{format_size(lay.stripe_unit)} is not a multiple of 64 KiB")
    elif lay.object_size == 0 or lay.object_size % lay.stripe_unit:
        errors.add(where, "object_size", f"{format_size(lay.object_size)} is not a multiple of "
                   f"stripe_unit {format_size(lay.stripe_unit)}")


def _dims(errors: _Errors, where: str, src: dict) -> dict[str, Any]:
    """Validate and normalise the shared dimensions found in ``src``."""
    out: dict[str, Any] = {}
    if "origins" in src:
        out["origins"] = [o for o in (_posint(errors, where, "origins", v)
                                      for v in _as_list(src["origins"])) if o]
    if "modes" in src:
        modes = []
        for v in _as_list(src["modes"]):
            if v not in MODES:
                errors.add(where, "modes", f"{v!r} is not one of {', '.join(MODES)}")
            else:
                modes.append(v)
        out["modes"] = modes
    if "concurrency" in src:
        levels = [c for c in (_posint(errors, where, "concurrency", v)
                              for v in _as_list(src["concurrency"])) if c]
        out["concurrency"] = tuple(sorted(set(levels)))
    if "file_size" in src:
        fs = _size(errors, where, "file_size", src["file_size"])
        if fs == 0:
            errors.add(where, "file_size", "must be > 0")
        out["file_size"] = fs
    for key in ("files", "repeats"):
        if key in src:
            out[key] = _posint(errors, where, key, src[key])
    if "size_dist" in src:
        if src["size_dist"] not in SIZE_DISTS:
            errors.add(where, "size_dist", f"{src['size_dist']!r} is not one of {', '.join(SIZE_DISTS)}")
        out["size_dist"] = src["size_dist"]
    for key, allowed in (("probe", PROBE_KEYS), ("gateway", GATEWAY_KEYS),
                         ("campaign", CAMPAIGN_KEYS)):
        if key in src:
            if not isinstance(src[key], dict):
                errors.add(where, key, f"{src[key]!r} is not a mapping")
                continue
            _unknown(errors, f"{where}.{key}", src[key], allowed)
            out[key] = _normalise_tunables(errors, f"{where}.{key}", src[key])
            _add_new(errors, f"{where}.{key}", key, src[key])
    return out


def _add_new(errors: _Errors, where: str, key: str, section: dict) -> None:
    """Campaign values (every one finite and in range) and the gateway's bind (never empty),
    checked by their owners; fields already reported here are not reported twice."""
    problems: list[tuple[str, str]] = []
    if key == "campaign":
        from xcbench.campaign.spec import check_campaign_settings
        problems = check_campaign_settings(section, unknown=False)
    elif key == "gateway" and "bind" in section:
        problems = check_bind(section["bind"])
    for fld, msg in problems:
        if not any(ln.startswith(f"{errors.path}: {where}: {fld}:") for ln in errors.lines):
            errors.add(where, fld, msg)


def _normalise_tunables(errors: _Errors, where: str, d: dict) -> dict:
    out = dict(d)
    for key in ("size", "buffers_maxbsz", "bs"):
        if key in out and not isinstance(out[key], (list, dict)):
            out[key] = _size(errors, where, key, out[key])
    bsz = out.get("buffers_maxbsz")
    if isinstance(bsz, int) and not (2 << 20) < bsz <= (1 << 30):
        # xrootd 5.5 refuses to start outside this range ("maxbz value ... may not be less")
        errors.add(where, "buffers_maxbsz", f"{format_size(bsz)} must be above 2M and at most 1G")
    for key in ("runtime", "iodepth", "numjobs", "ramp", "streams", "retries"):
        if key in out:
            out[key] = _posint(errors, where, key, out[key],
                               minimum=0 if key in ("ramp", "retries") else 1)
    for key in ("async", "cksio", "overwrite", "delete_after_verify", "direct"):
        if key in out and not isinstance(out[key], bool):
            errors.add(where, key, f"{out[key]!r} is not true/false")
    return out


DEFAULTS = {"origins": [1], "modes": ["push"], "concurrency": (4,), "file_size": 64 << 20,
            "files": 16, "size_dist": "fixed", "repeats": 1, "probe": {}, "gateway": {},
            "campaign": {}}


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
    raw = {"backends": {b: {}}}
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


def scale_ec_pool(pool: PoolSpec, facts: ClusterFacts) -> PoolSpec:
    """Map k+m onto what fits the cluster's failure domains, keeping m >= 1 and k/m roughly."""
    domains = facts.num_osds if facts.failure_domain == "osd" else facts.num_hosts
    if pool.kind != "erasure" or pool.k + pool.m <= domains or domains < 2:
        return pool
    m = max(1, round(pool.m * domains / (pool.k + pool.m)))
    k = max(1, domains - m)
    return PoolSpec("erasure", k=k, m=m)


def validate(cells: list[Cell], facts: ClusterFacts, errors: _Errors) -> None:
    """Rules that depend on the cluster: object size limit, pool width vs failure domains."""
    domains = facts.num_osds if facts.failure_domain == "osd" else facts.num_hosts
    unit = "OSDs" if facts.failure_domain == "osd" else "hosts"
    for c in cells:
        where = f"cell {c.label} ({c.id})"
        if c.layout and c.layout.object_size > facts.osd_max_object_size:
            errors.add(where, "object_size", f"{format_size(c.layout.object_size)} exceeds the "
                       f"cluster's osd_max_object_size {format_size(facts.osd_max_object_size)}")
        if c.pool and c.pool.kind == "erasure" and c.pool.k + c.pool.m > domains:
            errors.add(where, "pool", f"EC {c.pool.label} needs {c.pool.k + c.pool.m} {unit} "
                       f"(failure domain {facts.failure_domain}), the cluster has {domains}; "
                       f"use --scale-ec to map it onto what fits")
        if c.pool and c.pool.kind == "replicated" and c.pool.size > domains:
            errors.add(where, "pool", f"replicated size {c.pool.size} needs {c.pool.size} {unit}, "
                       f"the cluster has {domains}")


def load_matrix(path: str | Path, cluster: Any = None, *, facts: ClusterFacts | None = None,
                scale_ec: bool = False) -> Matrix:
    """Parse, expand and validate a matrix. Raises XcbError (first error, one line); the
    error's ``lines`` attribute holds every error."""
    path = str(path)
    raw = read_yaml(path)  # xcbench.userfiles: unreadable/non-UTF-8/bad YAML -> one line
    errors = _Errors(path)
    cells = expand(raw, path, errors)
    errors.raise_if_any()
    if not cells:
        raise XcbError(f"{path}: top level: cells: the matrix expands to no cells")
    if facts is None and cluster is not None:
        facts = ClusterFacts.of(cluster)
    scaled: dict[str, str] = {}
    if facts is not None:
        if scale_ec:
            new = []
            for c in cells:
                if c.pool and c.pool.kind == "erasure":
                    p = scale_ec_pool(c.pool, facts)
                    if p != c.pool:
                        scaled[c.pool.label] = p.label
                        c = _finish(replace(c, pool=p))
                new.append(c)
            cells = list({c.id: c for c in new}.values())
        validate(cells, facts, errors)
        errors.raise_if_any()
    name = raw.get("name") or Path(path).stem
    return Matrix(path, str(name), str(raw.get("description") or ""), cells, raw, scaled)


def check_lines(path: str | Path, **kw: Any) -> list[str]:
    """Every error of a matrix as one line each ([] when it is valid)."""
    try:
        load_matrix(path, **kw)
    except XcbError as e:
        return list(getattr(e, "lines", [str(e)]))
    return []
