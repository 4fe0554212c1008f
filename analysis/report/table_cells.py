"""Table cells of the report: formatted values with sort keys, titles and sources (§N), and the
small formatters the report's tables share."""

from __future__ import annotations

import json
import math
from typing import Any

from markupsafe import Markup

from xcbench.analysis.verdicts.run_data import source_text
from xcbench.cell.protection import label_fields
from xcbench.figures.units import format_size, gbps_num


class Sources:
    """Numbered sources (§N) of table rows: each names the figures of its row and their specs."""

    def __init__(self):
        self.items: list[dict[str, Any]] = []

    def add(self, what: str, figures: dict[str, tuple[Any, Any, str]]) -> int:
        n = len(self.items) + 1
        figs: dict[str, dict[str, Any]] = {k: {"spec": spec, "value": num_cell(value), "shown": shown}
                for k, (spec, value, shown) in figures.items() if spec}
        lines = [f"{k} = {f['shown']}: {source_text(f['spec'])}" for k, f in figs.items()]
        self.items.append({"n": n, "what": what, "figures": figs,
                           "text": what + (" | " + " | ".join(lines) if lines else "")})
        return n


def num_cell(v: Any) -> float | None:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def table_cell(text: str, sort: Any = None, title: str | None = None, cls: str | None = None,
          html: Markup | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"text": text}
    if sort is not None:
        d["sort"] = sort if not isinstance(sort, float) or math.isfinite(sort) else ""
    if title:
        d["title"] = title
    if cls:
        d["cls"] = cls
    if html is not None:
        d["html"] = html
    return d


def verdict_cell(v: str) -> dict[str, Any]:
    return table_cell(v, v, html=Markup('<span class="verdict v-{0}">{0}</span>').format(v))


def rate_cell(v: float | None) -> dict[str, Any]:
    return table_cell(gbps_num(v), num_cell(v))


def size_cell(v: Any) -> str:
    return format_size(int(v)) if num_cell(v) is not None else "–"


def load_evidence(v: Any) -> dict:
    if isinstance(v, dict):
        return v
    try:
        return json.loads(v) if isinstance(v, str) else {}
    except json.JSONDecodeError:
        return {}


def replicated_size(label: Any) -> str:
    """'rep3' -> 'rep3 (size 3)': the EC comparison says which replicated size it used."""
    f = label_fields(str(label)) if label else None
    return f"{label} (size {f['size']})" if f and f.get("size") else str(label or "")


def level_end_of(p: Any) -> str:
    """The window rule of a point and, for a time-based level, what ended it."""
    ended = getattr(p, "ended_by", "") or ""
    if not ended or ended == "files":
        return p.method
    if ended == "steady":
        return f"{p.method}: steady at {p.steady_at:.0f} s"
    return f"not steady ({'max duration hit' if ended == 'max' else ended})"


def matrix_name(matrix: Any) -> str:
    if isinstance(matrix, dict):
        return str(matrix.get("name") or matrix.get("path") or "")
    return str(matrix or "")
