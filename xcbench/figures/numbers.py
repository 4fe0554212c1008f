"""Is it a number: the one check for values that come from records, evidence, JSON and servers.

``is_finite(v)``: a finite real number (int, float, a numpy number; not a bool, None, NaN, an
infinity or a string), as a type guard. ``as_float(v)``: ``float(v)`` when that is a finite number
(numeric strings too), else NaN. ``finite_or_none(v)``: the float, or None for JSON (no NaN there).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, TypeGuard


def is_finite(v: Any) -> TypeGuard[float]:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def as_float(v: Any) -> float:
    if isinstance(v, bool):
        return math.nan
    try:
        x = float(v)
    except (TypeError, ValueError, OverflowError):
        return math.nan
    return x if math.isfinite(x) else math.nan


def finite_or_none(v: Any) -> float | None:
    return float(v) if is_finite(v) else None
