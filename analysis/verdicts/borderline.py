"""Borderline figures: a rule's figure whose confidence interval straddles the rule's threshold.

A rule compares a measured figure with a threshold (u_gw >= NEAR, E <= NEAR, growth >= SCALING,
...). Each figure has its own measured noise, and when the figure is within that noise of the
threshold, which side it falls on is decided by the noise: two runs of the same matrix would
name different causes. The rules still decide as before (no threshold moves, the verdict names
do not change); a rule whose figure straddles its threshold, among those the cascade looked at
up to the verdict, is recorded as a *borderline candidate*, and the verdict says so (evidence
``borderline`` and ``borderline_candidates``, a clause in the reason). Two runs whose figures
fall on either side of a threshold then both name that candidate: one as its verdict, the other
as the cause it was within noise of (benchmarks/bench_repeatability.py counts that as agreeing).
When the figure that decided the verdict is itself the borderline one, the verdict the rest of
the cascade reaches is a candidate too ("otherwise"): every verdict one figure's noise away is
named, whichever side of its threshold that figure fell on.

The interval of a figure x with relative standard error se is x * exp(+-z se), z the one-sided
CONFIDENCE quantile: each edge is a one-sided 95 % bound, so the interval is a **two-sided 90 %**
one, and is labelled so (LABEL; it was printed as "95 %"). The growth rule's bound,
figures.stats.ratio_lower_bound, is its lower end. A ratio of two rates takes both rates' errors (sqrt(se1^2 + se2^2)); a figure sampled over
the steady window (CPU busy, pool op/s) its samples' standard error, autocorrelation counted
(figures.stats.mean_rel_se); a share of a fio ceiling the rate's error and the probe's
between-run term where this host has measured one (analysis.verdicts.between_run); of the iperf3
baseline the rate's error only. An unknown error counts as 0: the plain comparison.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from xcbench.figures.numbers import is_finite
from xcbench.figures.stats import CONFIDENCE
from xcbench.figures.units import fmt_num

Z = NormalDist().inv_cdf(CONFIDENCE)
TWO_SIDED = 2 * CONFIDENCE - 1  # what x exp(+-z se) holds: 90 %, each edge a one-sided 95 % bound
LABEL = f"{TWO_SIDED * 100:.0f} % interval"
SKIP = "_skip_rules"  # evidence key: rules taken as not passing (analysis.verdicts.rules._otherwise)
PASSED = "_passed"  # evidence key (dropped before it is stored): the figures that passed, by rule


def combined(*rel_se: Any) -> float:
    """The relative error of a product or ratio of figures with these errors (unknown: 0)."""
    return math.hypot(*(float(s) if is_finite(s) else 0.0 for s in rel_se)) if rel_se else 0.0


def interval(x: float, rel_se: float) -> tuple[float, float]:
    s = rel_se if is_finite(rel_se) else 0.0
    return x * math.exp(-Z * s), x * math.exp(Z * s)


def passes(ev: dict[str, Any], rule: str, figure: str, x: Any, threshold: float, rel_se: Any,
           at_most: bool = False) -> bool:
    """Is ``x`` >= ``threshold`` (``at_most``: <=)? The plain comparison, as the rules always
    made it; when ``x``'s interval straddles the threshold, ``rule`` is recorded as a
    borderline candidate of the point (whichever side ``x`` fell on)."""
    if not is_finite(x) or rule in ev.get(SKIP, ()):
        return False
    x = float(x)
    ok = x <= threshold if at_most else x >= threshold
    if ok:  # what passed, for the deciding figure (analysis.verdicts.rules.deciding)
        ev.setdefault(PASSED, {})[rule] = {"figure": figure, "value": x, "threshold": threshold,
                                           "at_most": at_most}
    lo, hi = interval(x, rel_se)
    if lo < threshold < hi or (lo < threshold <= hi and not at_most) or (lo <= threshold < hi and at_most):
        ev.setdefault("borderline_candidates", []).append(
            {"rule": rule, "figure": figure, "value": x, "threshold": threshold, "low": lo,
             "high": hi, "confidence": TWO_SIDED, "two_sided": True, "at_most": at_most})
    return ok


def mark(ev: dict[str, Any], verdict: str, reason: str, since: int = 0) -> tuple[str, str]:
    """The verdict, with evidence ``borderline`` (any candidate) and a clause per candidate:
    '...; borderline: EC/replicated rate 86 % is within its noise of 85 % (78 %-95 %, 90 % interval).'
    ``since``: clauses only for the candidates from that index on (the reason has the others')."""
    cands = ev.get("borderline_candidates") or []
    ev["borderline"] = bool(cands)
    clauses = []
    for c in cands[since:]:
        if c.get("figure") == "otherwise":  # analysis.verdicts.rules._otherwise
            clauses.append(f"on its other side the verdict would be {c['rule']}")
            continue
        fmt = _fmt(c)
        clauses.append(f"{c['figure']} {fmt(c['value'])} is within its noise of "
                       f"{fmt(c['threshold'])} ({fmt(c['low'])}-{fmt(c['high'])}, "
                       f"{LABEL}{'' if c['rule'] == verdict else ': ' + c['rule'] + '?'})")
    if not clauses:
        return verdict, reason
    joint = "; " if since and "; borderline: " in reason else "; borderline: "
    return verdict, reason.rstrip(".") + joint + "; ".join(clauses) + "."


def causes(verdict: str, evidence: dict[str, Any]) -> set[str]:
    """The causes a verdict names: its own, and its borderline candidates'."""
    return {verdict} | {c["rule"] for c in evidence.get("borderline_candidates") or ()}


def _fmt(cand: dict[str, Any]):
    if cand["figure"] == "growth":
        return lambda v: f"x{fmt_num(v)}"
    return lambda v: f"{v * 100:.0f} %"


