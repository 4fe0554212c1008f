"""host-cpu proven by intervention, not by the rule's own 85 % line.

The uncapped run's tmpfs cell names host-cpu where the host's cores ran out. That name comes
from the rule's own busy-cores line; the proof is an intervention: every role the self-test
started (gateway, the driver, and the embedded cluster's daemons) put under ONE CPU quota at
half the host's cores, the same cells run again. If the host's CPU was the limit, the rate
falls in proportion: predicted x0.5 of the uncapped level, judged by analysis.experiment
(tighten: at least half the predicted fall, beyond both levels' noise). A level whose roles
did not need the whole host (a rule that named host-cpu wrongly) keeps its rate under a quota
of half the host and is refuted. The check is right only when the verdict says host-cpu AND
the intervention confirms it.
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.analysis.experiment import judge
from xcbench.analysis.experiment_choice import CLUSTER_ROLES, HALF


def roles(embedded: bool) -> str:
    """The shared quota's roles, joined as the capping runner takes them."""
    return "+".join(["gateway", "client", *(CLUSTER_ROLES if embedded else ())])


def quota(host_cores: float) -> float:
    return round(HALF * host_cores, 3)


def _rate(ev: dict[str, Any] | None) -> tuple[float, float]:
    ev = ev or {}
    r, se = ev.get("rate"), ev.get("rate_rel_se")
    return (float(r) if isinstance(r, (int, float)) and math.isfinite(r) else math.nan,
            float(se) if isinstance(se, (int, float)) and math.isfinite(se) else math.nan)


def host_cpu_cause(uncapped: dict[str, Any] | None, capped: dict[str, Any] | None,
                   cores: float, host_cores: float) -> dict[str, Any]:
    """The intervention's figures for one level (evidence of the uncapped and the half-host
    level): {"ok", "note", "slowdown", "slowdown_low", "at_quota", ...} as a Check's cause."""
    res = judge("tighten", HALF, [(_rate(uncapped), _rate(capped))], min_pairs=1)
    ratio, high = res.get("ratio"), res.get("high")
    out = {"role": "every role", "intervention": "one quota at half the host", "quota_cores": cores,
           "host_cores": host_cores, "predicted": HALF, "ratio": ratio, "outcome": res["outcome"],
           "slowdown": 1 / ratio if ratio else None, "slowdown_low": 1 / high if high else None,
           "at_quota": True, "ok": res["outcome"] == "confirmed"}
    out["note"] = (f"every role under one quota of {cores:g} of {host_cores:g} cores: the rate "
                   f"{res['why']}: host-cpu {'confirmed' if out['ok'] else 'NOT confirmed'} by intervention")
    return out


def apply(check: Any, capped: dict[str, Any] | None, uncapped: dict[str, Any] | None,
          cores: float, host_cores: float) -> Any:
    """The check made right only with its intervention confirmed; the figures as its cause."""
    cause = host_cpu_cause(uncapped, capped, cores, host_cores)
    check.cause = cause
    check.ok = bool(check.ok and cause["ok"])
    check.note = "; ".join(x for x in (check.note, cause["note"]) if x)
    return check
