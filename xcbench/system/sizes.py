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
