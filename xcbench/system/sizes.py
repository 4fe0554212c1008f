"""Human sizes: "64K", "4M", "16MiB", "1G", "1.5GB" -> bytes (powers of 1024), and back."""

from __future__ import annotations

import re

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(value: int | str) -> int:
    """Bytes for an int or a human size; powers of 1024 whether or not an 'i' is written
    (storage engineers write 4M for 4 MiB, as Ceph and fio do). Raises ValueError."""
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
    n = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not n.is_integer():
        raise ValueError(f"{value!r} is not a whole number of bytes")
    return int(n)


def format_size(n: int) -> str:
    """Shortest exact form: 65536 -> '64K', 4194304 -> '4M', 100000 -> '100000'."""
    for unit in "PTGMK":
        mult = _UNITS[unit.lower()]
        if n and n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


# --- rates: one unit everywhere ----------------------------------------------------------------
# decimal gigabits per second (1 Gb/s = 1e9 bit/s), as NICs, iperf3 and network people count;
# GiB/s (2**30 bytes/s, as fio and storage people count) only in brackets beside it.

def gbps_num(bps: object, digits: int = 3) -> str:
    """bytes/s -> '6.02' (Gb/s, for a column whose header names the unit); '–' when missing."""
    try:
        v = float(bps) * 8 / 1e9  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "–"
    if v != v or v in (float("inf"), float("-inf")):
        return "–"
    if v == 0:
        return "0"
    return f"{v:,.0f}" if abs(v) >= 10 ** digits else f"{v:.{digits}g}"


def fmt_gbps(bps: object, digits: int = 3, gib: bool = False) -> str:
    """bytes/s -> '6.02 Gb/s', with ``gib`` '6.02 Gb/s (0.701 GiB/s)'; '–' when missing."""
    n = gbps_num(bps, digits)
    if n == "–":
        return n
    if not gib:
        return f"{n} Gb/s"
    g = float(bps) / (1 << 30)  # type: ignore[arg-type]
    return f"{n} Gb/s ({g:.{digits}g} GiB/s)"
