"""Units, one meaning each, for the whole tool (matrices, plans, reports, the terminal).

- Sizes (objects, stripes, files, tmpfs): ``64K``, ``4M``, ``1G`` and ``16MiB``/``1GiB`` are powers
  of 1024, as Ceph and fio write them.
- Rates: ``Gb/s`` (lower-case b) = 1e9 *bits*/s; ``GB/s`` = 1e9 *bytes*/s; ``GiB/s`` = 2**30 bytes/s.
  Network rates are decimal bits (as NIC vendors and WLCG targets state them); drive datasheets
  give decimal MB/s. A bare number is refused: the unit is the whole point.
- Capacities: ``TB``/``PB`` are decimal (as drive vendors and funding agencies count), ``TiB``/
  ``PiB`` binary (as Ceph's ``df`` counts). Reports show both.

Internally every rate is bytes/s (float) and every size or capacity bytes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from xcbench.figures.numbers import is_finite

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(ib|b)?\s*$", re.IGNORECASE)


def parse_size(value: int | str) -> int:
    """Bytes for an int or a human size: 4M and 4MiB are powers of 1024 (as Ceph and fio write
    them). 4MB is refused: it is 10^6-based everywhere else in xcbench (rates, capacities) and
    2^20-based in fio, so it is ambiguous here. Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} is negative")
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    m = _RE.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a size (use e.g. 64K, 4M, 16MiB, 1G)")
    if m.group(2) and (m.group(3) or "").lower() == "b":
        p = m.group(2).upper()
        raise ValueError(f"{value!r} is ambiguous: write {m.group(1)}{p} or {m.group(1)}{p}iB "
                         f"(powers of 1024, as Ceph and fio) or the number of bytes")
    n = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not n.is_integer():
        raise ValueError(f"{value!r} is not a whole number of bytes")
    return int(n)


def size_or_none(value: Any) -> int | None:
    """:func:`parse_size`, or None for what is no one size: NaN, None, a range (fio's 4k-16k).
    A stored fio ``bs`` is an int in new runs and fio's label ("4K") in older ones."""
    try:
        return parse_size(value)
    except (ValueError, TypeError):
        return None


def format_size(n: int) -> str:
    """Shortest exact form: 65536 -> '64K', 4194304 -> '4M', 100000 -> '100000'."""
    for unit in "PTGMK":
        mult = _UNITS[unit.lower()]
        if n and n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def layout_label(stripe_unit: int, stripe_count: int, object_size: int) -> str:
    """'su=4M sc=1 os=4M' (sizes in bytes): how cell labels, tables, reports and a matrix's
    messages name a Ceph layout (xcbench.cell.layout.Layout.label)."""
    return f"su={format_size(stripe_unit)} sc={stripe_count} os={format_size(object_size)}"


_SI = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}
_IEC = {"": 1.0, "k": 2.0 ** 10, "m": 2.0 ** 20, "g": 2.0 ** 30, "t": 2.0 ** 40, "p": 2.0 ** 50,
        "e": 2.0 ** 60}
_RATE = re.compile(r"^\s*(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*([kKmMgGtTpP]?)(i?)(bit|b|B)(?:/s|ps)\s*$")
_CAP = re.compile(r"^\s*(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*([kKmMgGtTpPeE]?)(i?)B?\s*$")

SECONDS_PER_YEAR = 365.25 * 86400


def parse_rate(value: Any) -> float:
    """'100Gb/s', '1.22 Tbps', '250MB/s', '1GiB/s' -> bytes/s. Raises ValueError."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"{value!r} has no unit (write e.g. 25Gb/s for bits or 250MB/s for bytes)")
    if value.strip().startswith("-"):
        raise ValueError(f"{value!r} is negative")
    m = _RATE.match(value)
    if not m:
        raise ValueError(f"{value!r} is not a rate (write e.g. 100Gb/s, 1.22Tb/s, 250MB/s, 1GiB/s)")
    num, prefix, binary, unit = m.groups()
    mult = (_IEC if binary else _SI)[prefix.lower()]
    n = float(num) * mult
    return n / 8.0 if unit in ("b", "bit") else n


def parse_capacity(value: Any) -> float:
    """'18TB' -> 18e12 bytes, '16TiB' -> 16*2**40, an int -> bytes. Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a capacity")
    if isinstance(value, (int, float)):
        n = float(value)
    else:
        m = _CAP.match(str(value))
        if str(value).strip().startswith("-"):
            raise ValueError(f"{value!r} is negative")
        if not m:
            raise ValueError(f"{value!r} is not a capacity (write e.g. 18TB, 3.84TB, 16TiB)")
        num, prefix, binary = m.groups()
        if prefix and not str(value).strip().endswith("B"):
            raise ValueError(f"{value!r} is ambiguous: write {num}{prefix.upper()}B (decimal, as "
                             f"drive vendors count) or {num}{prefix.upper()}iB (binary, as Ceph's df)")
        n = float(num) * (_IEC if binary else _SI)[prefix.lower()]
    if n < 0 or not math.isfinite(n):
        raise ValueError(f"{value!r} is not a capacity")
    return n


def gbps(bytes_per_s: float) -> float:
    """bytes/s -> Gb/s (1e9 bits/s)."""
    return bytes_per_s * 8 / 1e9


def from_gbps(gb: float) -> float:
    return gb * 1e9 / 8


def _short(v: float, digits: int = 3) -> str:
    if not math.isfinite(v):
        return "unlimited" if v > 0 else str(v)
    if v == 0:
        return "0"
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def fmt_rate(bytes_per_s: float) -> str:
    """bytes/s -> '100 Gb/s (12.5 GB/s)' — network bits first, storage bytes beside."""
    if not math.isfinite(bytes_per_s):
        return "unlimited"
    b = bytes_per_s * 8
    p, name = next(((p, n) for p, n in ((1e12, "T"), (1e9, "G"), (1e6, "M")) if b >= p), (1e6, "M"))
    q, qname = next(((q, n) for q, n in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")) if bytes_per_s >= q),
                    (1.0, ""))
    return f"{_short(b / p)} {name}b/s ({_short(bytes_per_s / q)} {qname}B/s)"


def fmt_capacity(n: float) -> str:
    """bytes -> '3.46 PB (3.07 PiB)'."""
    for p in "EPTGM":
        if n >= _SI[p.lower()]:
            return f"{_short(n / _SI[p.lower()])} {p}B ({_short(n / _IEC[p.lower()])} {p}iB)"
    return f"{_short(n)} B"


def fmt_bytes(n: float) -> str:
    """A file/object size: '6.5 GiB (6.98 GB)'."""
    for p in "PTGMK":
        if n >= _IEC[p.lower()]:
            return f"{_short(n / _IEC[p.lower()])} {p}iB ({_short(n / _SI[p.lower()])} {p if p != 'K' else 'k'}B)"
    return f"{n:.0f} B"


def fmt_value(value: float, unit: str) -> str:
    if unit == "rate":
        return fmt_rate(value)
    if unit == "capacity":
        return fmt_capacity(value)
    if unit == "ops":
        return f"{_short(value)} ops/s"
    if unit == "count":
        return f"{value:,.0f}" if math.isfinite(value) else "unlimited"
    if unit == "fraction":
        return f"{value * 100:.1f} %"
    return _short(value, 4)


@dataclass
class Figure:
    """One number of a plan, with the formula and inputs it came from (shown in every report)."""
    key: str
    label: str
    value: float
    unit: str  # rate (bytes/s) | capacity (bytes) | ops (ops/s) | count | fraction | ratio
    formula: str
    inputs: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return fmt_value(self.value, self.unit)

    def to_dict(self) -> dict[str, Any]:
        v = self.value if math.isfinite(self.value) else None
        return {"key": self.key, "label": self.label, "value": v, "unit": self.unit,
                "text": self.text, "formula": self.formula, "inputs": dict(self.inputs)}


# --- numbers as reports print them ('–' for missing) ------------------------------------------

GIB = float(1 << 30)

def fmt_num(v: Any, digits: int = 3) -> str:
    """Significant-digit formatting; '–' for missing/NaN."""
    if not is_finite(v):
        return "–"
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def fmt_pct(v: Any, digits: int = 1, sign: bool = False) -> str:
    if not is_finite(v):
        return "–"
    return f"{float(v):{'+' if sign else ''}.{digits}f} %"


def fmt_size(v: Any) -> str:
    if not is_finite(v):
        return "–"
    return format_size(int(v))


# --- rates: one unit everywhere ----------------------------------------------------------------
# decimal gigabits per second (1 Gb/s = 1e9 bit/s), as NICs, iperf3 and network people count;
# GiB/s (2**30 bytes/s, as fio and storage people count) only in brackets beside it.

def gbps_num(bytes_per_s: object, digits: int = 3) -> str:
    """bytes/s -> '6.02' (Gb/s, for a column whose header names the unit); '–' when missing."""
    try:
        v = float(bytes_per_s) * 8 / 1e9  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "–"
    if v != v or v in (float("inf"), float("-inf")):
        return "–"
    if v == 0:
        return "0"
    return f"{v:,.0f}" if abs(v) >= 10 ** digits else f"{v:.{digits}g}"


def fmt_gbps(bytes_per_s: object, digits: int = 3, gib: bool = False) -> str:
    """bytes/s -> '6.02 Gb/s', with ``gib`` '6.02 Gb/s (0.701 GiB/s)'; '–' when missing."""
    n = gbps_num(bytes_per_s, digits)
    if n == "–":
        return n
    if not gib:
        return f"{n} Gb/s"
    g = float(bytes_per_s) / (1 << 30)  # type: ignore[arg-type]
    return f"{n} Gb/s ({g:.{digits}g} GiB/s)"
