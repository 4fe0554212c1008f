"""Causes, not names: a capped level held against the same level of the uncapped run.

A scenario that caps a role is right only when the cap made the bottleneck it names:

- **slower**: the capped level's steady rate is below the uncapped one's by more than the two
  levels' own measured noise: the one-sided 95 % lower bound of uncapped / capped
  (figures.stats.ratio_lower_bound, each rate's relative standard error from its steady
  window and repeats, figures.stats.rate_rel_se) is above 1;
- **at its quota**: the capped role's CPU sits at its quota over the steady window (the role's
  ``saturated``: cores >= NEAR of the limit, or its group throttled in most CFS periods).

A rule that named whichever role sits in a quota group would pass the name check and fail
these. A **decoy** cap (a quota well above what the role used) must not bind: its role is not
at its quota, and the verdict must not name it (the scenario's expected set). The figures are
kept with the check (``Check.cause``) and printed in the text and JSON output.
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.figures.numbers import as_float, finite_or_none
from xcbench.figures.stats import CONFIDENCE, ratio_lower_bound


def compare(capped: dict[str, Any], uncapped: dict[str, Any] | None, role: str,
            decoy: bool = False, at_limit: bool | None = None,
            limit_kind: str = "cpu quota") -> dict[str, Any]:
    """The cause figures of one capped level (evidence dicts of the two verdicts).
    ``at_limit``: whether the role sits at a limit other than its CPU quota (a device
    throttle: xcbench.selftest.storage_io); None: its CPU against its quota."""
    rc, sc = as_float(capped.get("rate")), as_float(capped.get("rate_rel_se"))
    x = (capped.get("roles") or {}).get(role) or {}
    out: dict[str, Any] = {
        "role": role, "decoy": decoy, "capped_bytes_per_s": finite_or_none(rc), "capped_rel_se": finite_or_none(sc),
        "role_cpu": x.get("cpu"), "role_limit": x.get("limit"), "role_use": x.get("use"),
        "role_throttled": x.get("throttled"),
        "at_quota": bool(x.get("saturated")) if at_limit is None else at_limit,
        "limit_kind": limit_kind,
        "confidence": CONFIDENCE}
    if uncapped is None:
        out.update(ok=False, note="no uncapped rate at this level to compare with")
        return out
    ru, su = as_float(uncapped.get("rate")), as_float(uncapped.get("rate_rel_se"))
    low = ratio_lower_bound(rc, sc, ru, su) if rc > 0 else math.nan
    out.update(uncapped_bytes_per_s=finite_or_none(ru), uncapped_rel_se=finite_or_none(su),
               slowdown=finite_or_none(ru / rc) if rc > 0 and math.isfinite(ru) else None,
               slowdown_low=finite_or_none(low), slower=bool(math.isfinite(low) and low > 1.0))
    if decoy:
        out["ok"] = not out["at_quota"]
    else:
        out["ok"] = out["slower"] and out["at_quota"]
    out["note"] = note(out)
    return out


def _pct(v: Any) -> str:
    return f"{v * 100:.1f} %" if isinstance(v, (int, float)) and math.isfinite(v) else "?"


def _mb(v: Any) -> str:
    return f"{v / 1e6:.1f} MB/s" if isinstance(v, (int, float)) and math.isfinite(v) else "?"


def note(c: dict[str, Any]) -> str:
    """'capped 61.2 MB/s (±2.1 %) vs uncapped 180.4 MB/s (±1.8 %): x2.95, at least x2.84 at
    95 %; gateway at its quota (97 %, throttled 88 %)'."""
    if "uncapped_bytes_per_s" not in c:
        return c.get("note", "")
    slow = (f"x{c['slowdown']:.2f}, at least x{c['slowdown_low']:.2f} at {c['confidence'] * 100:.0f} %"
            if c.get("slowdown") and c.get("slowdown_low") else "no ratio")
    use = c.get("role_use")
    thr = c.get("role_throttled")
    lim = "quota" if c.get("limit_kind", "cpu quota") == "cpu quota" else "device throttle"
    state = f"at its {lim}" if c["at_quota"] else f"below its {lim}"
    if lim != "quota":  # the device's figures are in the expectation's note
        use = thr = None
    detail = ", ".join(x for x in (f"{use * 100:.0f} % of it" if isinstance(use, (int, float)) else "",
                                    f"throttled {thr * 100:.0f} %" if isinstance(thr, (int, float)) else "")
                       if x)
    head = (f"capped {_mb(c['capped_bytes_per_s'])} (±{_pct(c.get('capped_rel_se'))}) vs uncapped "
            f"{_mb(c['uncapped_bytes_per_s'])} (±{_pct(c.get('uncapped_rel_se'))}): {slow}; "
            f"{c['role']} {state}" + (f" ({detail})" if detail else ""))
    if c["decoy"]:
        return head + ("; a decoy: it must not bind" if c["ok"] else "; a decoy that bound: not a decoy")
    if not c["slower"]:
        head += "; NOT slower beyond the noise: the cap did not make this level's bottleneck"
    if not c["at_quota"]:
        head += f"; the role is NOT at its {lim}"
    return head
