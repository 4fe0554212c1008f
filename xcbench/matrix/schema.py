"""Matrix schema: the keys a matrix may hold, parsing of values, and errors that name the
file, the cell (or entry) and the field."""

from __future__ import annotations

import difflib
from collections.abc import Collection
from typing import Any

from xcbench.cell import DIRECTIONS, MODES, SECURITY_MODES, Layout, PoolSpec
from xcbench.cell.classes import SIZE_CLASSES
from xcbench.cell.layout import MIN_STRIPE_UNIT as STRIPE_ALIGN  # noqa: F401 (public name)
from xcbench.errors import XcbError
from xcbench.figures.units import format_size, parse_size
from xcbench.matrix import sections
from xcbench.system import secrets_policy
from xcbench.system.ports import check_bind

SIZE_DISTS = ("fixed", "uniform", "lognormal")
TOP_KEYS = ("name", "description", "defaults", "backends", "exclude", "include", "reference",
            "hosts", "prometheus")
DIM_KEYS = ("origins", "modes", "concurrency", "file_size", "files", "size_dist", "repeats",
            "probe", "gateway", "campaign") + ("streams", "size_class", "size_scale", "cores", "direction") \
    + ("security",)
# dimensions whose cells leave the setting out of the id when it is not given (Cell.OPTIONAL)
OPTIONAL_DIMS = ("streams", "size_class", "cores")
BACKEND_KEYS = {"tmpfs": ("size",) + DIM_KEYS, "cephfs": ("layouts", "pools") + DIM_KEYS,
                "rados": ("layouts", "pools") + DIM_KEYS}
LAYOUT_KEYS = ("stripe_unit", "stripe_count", "object_size")
PROBE_KEYS = ("runtime", "iodepth", "numjobs", "size", "ramp", "ss", "ss_dur", "ss_ramp",
              "patterns", "bs", "direct")
GATEWAY_KEYS = ("async", "buffers_maxbsz", "cksio", "bind", "ceph", "tpc")
CAMPAIGN_KEYS = ("client", "streams", "timeout", "retries", "retry_delay", "checksum", "overwrite",
                 "delete_after_verify", "optimizer", "seed", "duration", "steady") + \
    ("read_fraction", "access")  # read campaigns (direction read | mixed)
ENGINE_KEYS = ("engine", "fts")  # the run's transfer engine (xcbench.scaleout.engine)
RULE_KEYS = ("backend", "pool", "stripe_unit", "stripe_count", "object_size", "size", "origins",
             "mode", "concurrency", "file_size", "files")  # + streams, size_class, cores (DIM_KEYS)



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


def parse_pool(value: Any) -> PoolSpec:
    """'replicated' | 'rep3' | {replicated: 3} | 'ec2+1' | {ec: '8+3'} | {ec: {k: 8, m: 3}}."""
    return PoolSpec.parse(value)


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
    if su is None or sc is None or os_ is None:
        return None
    return Layout(su, sc, os_)


def check_layout(errors: _Errors, where: str, lay: Layout) -> None:
    """Ceph's own rules (CephFS file layouts and libradosstriper reject the rest with EINVAL)."""
    for fieldname, why in lay.problems():
        errors.add(where, fieldname, why)


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
    _new_dims(errors, where, src, out)
    for key, allowed in (("probe", PROBE_KEYS), ("gateway", GATEWAY_KEYS),
                         ("campaign", CAMPAIGN_KEYS + ENGINE_KEYS)):
        if key in src:
            if not isinstance(src[key], dict):
                errors.add(where, key, f"{src[key]!r} is not a mapping")
                continue
            _unknown(errors, f"{where}.{key}", src[key], allowed)
            out[key] = _normalise_tunables(errors, f"{where}.{key}", src[key])
            _add_new(errors, f"{where}.{key}", key, src[key])
    return out


def _choices(errors: _Errors, where: str, key: str, value: Any, allowed: Collection[str]) -> list:
    """A list of names, each one of ``allowed``, in the given order without repeats."""
    out: list = []
    for v in _as_list(value):
        if v not in allowed:
            errors.add(where, key, f"{v!r} is not one of {', '.join(allowed)}")
        elif v not in out:
            out.append(v)
    return out


def _new_dims(errors: _Errors, where: str, src: dict, out: dict[str, Any]) -> None:
    """streams, size_class (+ size_scale), cores and direction: lists crossed like origins and
    modes."""
    if "streams" in src:
        out["streams"] = sorted({s for s in (_posint(errors, where, "streams", v)
                                             for v in _as_list(src["streams"])) if s})
    for key, allowed in (("size_class", SIZE_CLASSES), ("direction", DIRECTIONS),
                         ("security", SECURITY_MODES)):
        if key in src:
            out[key] = _choices(errors, where, key, src[key], allowed)
    if "size_scale" in src:
        out["size_scale"] = _posint(errors, where, "size_scale", src["size_scale"])
    if "cores" in src:
        cores = []
        for v in _as_list(src["cores"]):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                errors.add(where, "cores", f"{v!r} is not a positive number of cores")
            elif v * 100_000 < 1000:  # the kernel's smallest CFS quota is 1 ms per 100 ms period
                errors.add(where, "cores", f"{v} is below the smallest CPU quota (0.01 cores)")
            else:
                cores.append(float(v))
        out["cores"] = sorted(set(cores))


def _add_new(errors: _Errors, where: str, key: str, section: dict) -> None:
    """Campaign values (every one finite and in range), the engine, the gateway's bind (never
    empty), ceph.* directives and fio's settings, checked by their owners (xcbench.matrix.sections); fields
    already reported here are not reported twice."""
    problems: list[tuple[str, str]] = []
    if key == "gateway" and "bind" in section:
        problems = check_bind(section["bind"])
    for check in sections.mapping_checks(key):
        problems += check(section)
    for fld, msg in problems:
        if not any(ln.startswith(f"{errors.path}: {where}: {fld}:") for ln in errors.lines):
            errors.add(where, fld, msg)


def _normalise_tunables(errors: _Errors, where: str, d: dict) -> dict:
    out = dict(d)
    for key in ("size", "buffers_maxbsz", "bs"):
        if key in out and isinstance(out[key], (list, dict)):
            errors.add(where, key, f"{out[key]!r} is not a size (use e.g. 64K, 4M, 1G)")
        elif key in out:
            out[key] = _size(errors, where, key, out[key])
    bsz = out.get("buffers_maxbsz")
    if isinstance(bsz, int) and not (2 << 20) < bsz <= (1 << 30):
        # xrootd 5.5 refuses to start outside this range ("maxbz value ... may not be less")
        errors.add(where, "buffers_maxbsz", f"{format_size(bsz)} must be above 2M and at most 1G")
    for key in ("runtime", "iodepth", "numjobs", "ramp", "streams", "retries"):
        if key in out:
            out[key] = _posint(errors, where, key, out[key],
                               minimum=0 if key in ("ramp", "retries") else 1)
    for key in ("async", "cksio", "overwrite", "delete_after_verify", "direct", "tpc"):
        if key in out and not isinstance(out[key], bool):
            errors.add(where, key, f"{out[key]!r} is not true/false")
    return out


DEFAULTS: dict[str, Any] = {"origins": [1], "modes": ["push"], "concurrency": (4,), "file_size": 64 << 20,
            "files": 16, "size_dist": "fixed", "repeats": 1, "probe": {}, "gateway": {},
            "campaign": {}}


def check_cells(errors: _Errors, cells: list) -> None:
    """Each cell once the defaults and the backend's settings are merged, by the packages that
    run it (xcbench.matrix.sections): time-based levels, reads, driver memory, the engine; and
    where its FTS credential would go (xcbench.system.secrets_policy: include: entries too)."""
    errors.lines += secrets_policy.matrix_problems(cells, errors.path)
    for check in sections.cell_checks():
        for c in cells:
            for fieldname, why in check(c):
                errors.add(f"cell {c.label} ({c.id})", fieldname, why)


def check_top(errors: _Errors, raw: Any, key: str) -> None:
    """A top-level section (hosts, prometheus), checked by its package; a matrix is data, so
    no secret's destination is taken from it (xcbench.system.secrets_policy)."""
    try:
        sections.matrix_check(key)(raw, errors.path)
    except XcbError as e:
        errors.lines.append(str(e))

