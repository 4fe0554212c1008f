"""How long a run takes, said at its start: every level's length is in the matrix (a time-based
level runs between its duration's min and max), and so is every fio probe's (jobs x runtime).
A file-count level ends when its files are moved: its length depends on the rate measured, so
it is counted, not timed."""

from __future__ import annotations

from typing import Any

from xcbench.campaign.spec import level_rule
from xcbench.errors import XcbError
from xcbench.probe.job_settings import settings as probe_settings


def seconds(cells: list[Any], *, repeats: int | None = None, probes: bool = True) -> dict[str, Any]:
    """{lo, hi: seconds of the timed levels and probes, levels, untimed: file-count levels}."""
    lo = hi = 0.0
    levels = untimed = 0
    for c in cells:
        n = len(c.concurrency) * (repeats or c.repeats)
        levels += n
        camp = c.campaign or {}
        try:
            rule = level_rule(camp.get("duration"), camp.get("steady"))
        except XcbError:
            rule = None
        if rule is None:
            untimed += n
        else:
            lo, hi = lo + n * rule.min, hi + n * rule.max
        if probes:
            try:
                p = probe_settings(c)
            except XcbError:
                continue
            ramp = p["ramp"] if isinstance(p["ramp"], int) else 0
            each = len(p["jobs"]) * (p["runtime"] + ramp)
            lo, hi = lo + each, hi + each
    return {"lo": lo, "hi": hi, "levels": levels, "untimed": untimed}


def _dur(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def line(cells: list[Any], *, repeats: int | None = None, probes: bool = True) -> str:
    """'estimate: 5–9 min (12 timed levels and the fio probes) + each cell's set-up'."""
    e = seconds(cells, repeats=repeats, probes=probes)
    if not e["levels"]:
        return "estimate: nothing left to run"
    lo, hi = _dur(e["lo"]), _dur(e["hi"])
    span = hi if lo == hi else f"{lo.split()[0]}–{hi}" if lo.split()[1] == hi.split()[1] \
        else f"{lo}–{hi}"
    timed = e["levels"] - e["untimed"]
    what = " and ".join(x for x in (f"{timed} timed level{'s' * (timed != 1)}" if timed else "",
                                     "the fio probes" if probes else "") if x)
    out = f"estimate: {span} ({what}) + each cell's set-up" if what else "estimate: no timed level"
    if e["untimed"]:
        out += f"; {e['untimed']} file-count level{'s' * (e['untimed'] != 1)} not timed"
    return out
