"""A published figure: a rate or an op/s figure someone else measured or computed, with where it
was published and under which conditions, shown beside xcbench's own. One schema for a matrix's
``reference:`` (xcbench.figures.reference: one figure per layout) and a plan's ``published:``
(xcbench.plan.published: figures held against the model).

The section around the figures is the same in both::

    source: who, what, where, when      # required
    url: https://...                    # optional
    note: how to read the figures       # optional
    conditions: {pool: EC 8+3, ...}     # optional: what the figures were measured on

A figure's value is one number or a range ``[low, high]``: a rate with its unit (``24Gb/s``,
``2.8GiB/s``: xcbench.figures.units.parse_rate), a number in a unit the field's name gives
(``io_rate_gib_s: 2.8``), or op/s. Problems are reported through ``problem(field, message)``,
which the caller binds to its file and place (one line each).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from xcbench.figures.units import parse_rate

Problem = Callable[[str, str], None]  # (field, message): said with the file and the place
SOURCE_KEYS = ("source", "url", "note", "conditions")
UNITS = ("B/s", "op/s")


@dataclass(frozen=True)
class PublishedSource:
    """Where figures were published and what they were measured on."""
    source: str
    url: str | None = None
    note: str | None = None
    conditions: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "url": self.url, "note": self.note,
                "conditions": dict(self.conditions)}


@dataclass(frozen=True)
class PublishedFigure:
    """One published figure: ``value`` is (x,) or a range (low, high), in ``unit``."""
    value: tuple[float, ...]
    unit: str  # B/s | op/s
    what: str = ""
    where: str = ""

    @property
    def low(self) -> float:
        return self.value[0]

    @property
    def high(self) -> float:
        return self.value[-1]


def check_source(raw: Mapping[str, Any], problem: Problem) -> PublishedSource:
    """The section's source, url, note and conditions (other keys are the caller's to check)."""
    src = raw.get("source")
    if not isinstance(src, str) or not src.strip():
        problem("source", "missing: name the publication (who, what, where, when)")
        src = ""
    text: dict[str, str | None] = {}
    for key in ("url", "note"):
        v = raw.get(key)
        if v is not None and not isinstance(v, str):
            problem(key, f"{v!r} is not text")
            v = None
        text[key] = v.strip() if isinstance(v, str) else None
    cond = raw.get("conditions")
    if cond is not None and not isinstance(cond, dict):
        problem("conditions", f"{cond!r} is not a mapping")
        cond = None
    return PublishedSource(" ".join(str(src).split()), text["url"], text["note"], cond or {})


def check_value(v: Any, unit: str, name: str, problem: Problem, *,
                scale: float | None = None, ranged: bool = True) -> tuple[float, ...] | None:
    """A figure's value in ``unit`` (B/s or op/s): one positive number or, with ``ranged``, a
    range [low, high]. A rate is written with its unit unless ``scale`` (the unit a bare number
    is in, as B/s) is given; op/s are bare numbers."""
    vals = v if ranged and isinstance(v, list) else [v]
    if not 1 <= len(vals) <= 2:
        problem(name, f"{v!r} is not a figure or a range [low, high]")
        return None
    out: list[float] = []
    for x in vals:
        bare = isinstance(x, (int, float)) and not isinstance(x, bool)
        try:
            if unit == "op/s" or (bare and scale is not None):
                if not bare:
                    raise ValueError(f"{x!r} is not a number")
                n = float(x) * (scale if unit == "B/s" and scale is not None else 1.0)
            else:
                n = parse_rate(x)
        except (ValueError, TypeError) as e:
            problem(name, str(e))
            return None
        if not n > 0:
            problem(name, f"{x!r} is not a positive figure")
            return None
        out.append(n)
    if len(out) == 2 and out[0] > out[1]:
        problem(name, f"{v!r}: a range is [low, high]")
        return None
    return tuple(out)
