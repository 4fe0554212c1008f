"""When a time-based level ends (campaign.duration): LevelRule says when its rate is steady,
between a minimum and a maximum duration. The rule is checked once a second on the level's
timeline so far; the last ``window`` seconds are the level's steady window, whether the rule
held (``ended_by = "steady"``) or the maximum duration came first (``"max"``: not steady).
figures.steady reads that window as the level's. A campaign agent imports this module alone
(no pandas: ~0.3 s less per agent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from xcbench.figures.buckets import block_rates

LEVEL_RULES = ("autoterm", "slope", "none")
_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_SECONDS = 86400.0  # a level longer than a day is a typo


def parse_seconds(value) -> float:
    """20, 2.5, "20s", "1.5m", "1h" -> seconds (finite, >= 0); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, (int, float)):
        s = float(value)
    else:
        text = str(value).strip().lower()
        unit = text[-1] if text and text[-1] in "smh" else ""
        try:
            s = float(text[:-1] if unit else text) * _SECONDS[unit]
        except ValueError:
            raise ValueError(f"{value!r} is not a duration (use e.g. 20s, 1.5m, 45)") from None
    if not math.isfinite(s) or s < 0:
        raise ValueError(f"{value!r} must be a finite duration >= 0")
    return s


def parse_fraction(value) -> float:
    """"10%", 10 (%), 0.1 -> 0.1: a number above 1 is read as percent; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a percentage")
    text = str(value).strip()
    pct = text.endswith("%")
    try:
        f = float(text[:-1] if pct else text)
    except ValueError:
        raise ValueError(f"{value!r} is not a percentage (use e.g. 10%)") from None
    if pct or f > 1:
        f /= 100.0
    if not math.isfinite(f) or not 0 < f < 1:
        raise ValueError(f"{value!r} must be a percentage above 0 and below 100 %")
    return f


@dataclass(frozen=True)
class LevelRule:
    """When a time-based level ends: bounds (s) and the steadiness rule.

    autoterm (after minio/warp's --autoterm, on a fixed window rather than warp's share of the
    whole run): the last ``window`` s, downsampled into ``points`` equal blocks, are steady when
    every block's rate is within ``tolerance`` of their mean.
    slope (after fio's ``ss=bw_slope``): the least-squares line through the same blocks drifts
    by at most ``tolerance`` of their mean over the window.
    none: the level runs for its maximum duration.
    """
    min: float = 20.0
    max: float = 60.0
    rule: str = "autoterm"
    window: float = 10.0
    points: int = 5
    tolerance: float = 0.10

    def problems(self) -> list[tuple[str, str]]:
        """[(field, why)] for settings no level can run with."""
        out = []
        for name in ("min", "max", "window", "tolerance"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                out.append((name, f"{v!r} is not a finite number"))
        if out:
            return out
        if self.rule not in LEVEL_RULES:
            out.append(("rule", f"{self.rule!r} is not one of {', '.join(LEVEL_RULES)}"))
        if not 0 < self.max <= MAX_SECONDS:
            out.append(("max", f"{self.max:g} s must be above 0 and at most {MAX_SECONDS:g} s"))
        if not 0 <= self.min <= self.max:
            out.append(("min", f"{self.min:g} s must be between 0 and max ({self.max:g} s)"))
        if isinstance(self.points, bool) or not isinstance(self.points, int) or self.points < 2:
            out.append(("points", f"{self.points!r} must be an integer >= 2"))
        elif not self.points <= self.window <= self.max:
            out.append(("window", f"{self.window:g} s must be at least 1 s per point "
                                  f"({self.points}) and at most max ({self.max:g} s)"))
        if not 0 < self.tolerance < 1:
            out.append(("tolerance", f"{self.tolerance!r} must be above 0 and below 1 (100 %)"))
        return out

    def describe(self) -> str:
        """The rule as the report prints it."""
        bounds = f"between {self.min:g} s and {self.max:g} s"
        if self.rule == "none":
            return f"time-based level: runs {self.max:g} s (no steadiness check)"
        what = (f"each of {self.points} points within {self.tolerance * 100:g} % of their mean"
                if self.rule == "autoterm" else
                f"a fitted line through {self.points} points drifting by <= "
                f"{self.tolerance * 100:g} % of their mean")
        return (f"time-based level, {bounds}: ends once the last {self.window:g} s (the steady "
                f"window), downsampled to {self.points} points, is steady by rule {self.rule} "
                f"({what}); at the maximum it ends \"not steady\"")

    def check(self, t, nbytes) -> tuple[bool, float]:
        """(steady?, spread) of a level's buckets so far: ``t`` the end of each bucket (s since
        the level began, increasing), ``nbytes`` the bytes moved in it. ``spread`` is the
        largest deviation (autoterm) or the drift (slope) as a fraction of the mean."""
        t = np.asarray(t, dtype=float)
        if self.rule == "none" or t.size == 0 or t[-1] < self.window:
            return False, math.nan
        rates = block_rates(t, nbytes, *self.window_at(t), self.points)
        mean = float(rates.mean())
        if not mean > 0:
            return False, math.nan
        if self.rule == "autoterm":
            spread = float(np.abs(rates - mean).max()) / mean
        else:
            x = (np.arange(self.points) + 0.5) * self.window / self.points
            spread = abs(float(np.polyfit(x, rates, 1)[0])) * self.window / mean
        return spread <= self.tolerance, spread

    def window_at(self, t) -> tuple[float, float]:
        """The steady window of a level judged at the end of its last bucket: from the bucket
        end nearest ``window`` s before it, so the window holds whole buckets (``t``: the
        buckets' ends, s since the level began; a bare number: only the end is known). What
        check() judges, what the level records, what its rate is averaged over (level_steady)
        and what the plots shade."""
        ends = np.atleast_1d(np.asarray(t, dtype=float))
        end = float(ends[-1])
        if np.ndim(t) == 0:
            return max(0.0, end - self.window), end
        edges = np.concatenate([[0.0], ends])
        return float(edges[np.argmin(np.abs(edges - (end - self.window)))]), end

    def settings(self) -> dict:
        return {"min": self.min, "max": self.max, "rule": self.rule, "window": self.window,
                "points": self.points, "tolerance": self.tolerance}
