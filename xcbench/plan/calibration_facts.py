"""Facts read back from a run's records for calibration: sampler labels (a cell's
protection is the cell's own: RunData.cell_objects)."""

from __future__ import annotations

import json
from typing import Any


def find_int(obj: Any, keys: tuple[str, ...]) -> int | None:
    """First int under any of ``keys`` anywhere in a JSON-like manifest."""
    if isinstance(obj, dict):
        for k in keys:
            v = obj.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
        for v in obj.values():
            found = find_int(v, keys)
            if found:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = find_int(v, keys)
            if found:
                return found
    return None




def sample_labels(v: Any) -> dict:
    if isinstance(v, dict):
        return v
    if isinstance(v, str) and v.startswith("{"):
        try:
            return json.loads(v)
        except ValueError:
            return {}
    return {}
