"""Reading plan YAML (cluster and gateway specs, published figures) with the file and the field
named in every error."""

from __future__ import annotations

import math
from typing import Any

from xcbench.cell.protection import Protection, label_fields
from xcbench.errors import XcbError

_REQ = object()


class Reader:
    def __init__(self, data: Any, source: str, path: str = "", overridden: frozenset = frozenset()):
        self.source, self.path, self.overridden = source, path, overridden
        if not isinstance(data, dict):
            self.fail("", f"must be a mapping, got {type(data).__name__}")
        self.data: dict = data
        self.used: set[str] = set()

    def _where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path and key else (key or self.path or "(top)")

    def fail(self, key: str, msg: str):
        where = self._where(key)
        src = "--set" if where in self.overridden else self.source
        raise XcbError(f"{src}: {where}: {msg}")

    def raw(self, key: str, default: Any = _REQ) -> Any:
        self.used.add(key)
        if key not in self.data or self.data[key] is None:
            if default is _REQ:
                self.fail(key, "missing")
            return default
        return self.data[key]

    def sub(self, key: str, required: bool = True) -> Reader | None:
        v = self.raw(key, _REQ if required else None)
        return None if v is None else Reader(v, self.source, self._where(key), self.overridden)

    def number(self, key: str, default: Any = _REQ, *, integer: bool = False, lo: float = 0,
               strict: bool = False, hi: float = math.inf) -> Any:
        v = self.raw(key, default)
        if v is default and default is not _REQ:
            return v
        if isinstance(v, float) and not math.isfinite(v):  # before int(v): int(nan) raises
            self.fail(key, f"{v} is not a finite number")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and v != int(v)):
            self.fail(key, f"{v!r} is not {'a whole number' if integer else 'a number'}")
        if v < lo or (strict and v == lo):
            self.fail(key, f"must be {'>' if strict else '>='} {lo:g} (got {v})")
        if v > hi:
            self.fail(key, f"must be <= {hi:g} (got {v:.4g})")
        return int(v) if integer else float(v)

    def conv(self, key: str, parse, default: Any = _REQ, *, positive: bool = True) -> Any:
        v = self.raw(key, default)
        if v is default and default is not _REQ:
            return v
        try:
            out = parse(v)
        except (ValueError, TypeError, OverflowError) as e:
            self.fail(key, str(e))
        if positive and not out > 0:
            self.fail(key, f"must be > 0 (got {v!r})")
        return out

    def choice(self, key: str, choices: tuple[str, ...], default: Any = _REQ) -> str:
        v = self.raw(key, default)
        if v not in choices:
            self.fail(key, f"{v!r} is not one of {', '.join(choices)}")
        return v

    def done(self) -> None:
        extra = sorted(set(self.data) - self.used)
        if extra:
            self.fail(extra[0], f"unknown field (known here: {', '.join(sorted(self.used))})")


def protection_of(r: Reader) -> Protection:
    v = r.raw("protection")
    if isinstance(v, str):
        parsed = label_fields(v)
        if parsed is None:
            r.fail("protection", f"{v!r} is not rep<N> or ec<k>+<m> (e.g. rep3, ec8+3)")
        p = Reader(parsed, r.source, r._where("protection"), r.overridden)
    else:
        sub = r.sub("protection")
        assert sub is not None  # required: sub() failed otherwise
        p = sub
    kind = p.choice("kind", ("replicated", "erasure"))
    if kind == "replicated":
        out = Protection("replicated", size=p.number("size", integer=True, lo=1))
    else:
        out = Protection("erasure", k=p.number("k", integer=True, lo=1),
                         m=p.number("m", integer=True, lo=1))
    p.done()
    return out


