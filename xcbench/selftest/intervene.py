"""host-cpu's proportion and ec-overhead tested by intervention, not by the rules' own 85 % line
or EC ratio.

The uncapped run's tmpfs cell names host-cpu where the host's cores ran out. That name comes
from the rule's own busy-cores line; the intervention: every role the self-test started
(gateway, the driver, its ceph-fuse mount, the embedded cluster's daemons) put under ONE CPU
quota at half of what they used, the same cells run again: the rate must fall in proportion,
x0.5 of the uncapped level, judged by analysis.verdicts.experiment (tighten: at least half the
predicted fall, beyond both levels' noise). A quota below what the roles used lowers the rate
whatever capped the level, so this checks a **proportion**, not the name (every rival predicts
the same fall: the judge says "proportion checked", never "confirmed"); a level whose rate does
not fall is refuted. The check is right only when the verdict says host-cpu AND the proportion
holds. What can confirm host-cpu is a relief (CPU given to the roles where other processes held
some: xcbench confirm, analysis.verdicts.experiment_choice).

ec-overhead: the EC cell and its replicated twin run again with EC first (the uncapped run
had the twin first), so the two runs make an A-B-B-A experiment; EC's cost is predicted from
the raw bytes per logical byte each pool measured (twin / EC), and analysis.verdicts.experiment judges
the pairs (tighten: at least half the predicted fall). Confirmed: ec-overhead is right;
refuted: it must not be named; inconclusive: only a verdict that cannot tell either is right.
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.analysis.verdicts.experiment import judge
from xcbench.analysis.verdicts.experiment_choice import CLUSTER_ROLES, HALF


def roles(embedded: bool) -> str:
    """The shared quota's roles, joined as the capping hooks take them."""
    return "+".join(["gateway", "client", "mount", *(CLUSTER_ROLES if embedded else ())])


def quota(host_cores: float, used: float | None = None) -> float:
    """Half of what the roles had: the host's cores, or what they used where other processes
    held part of the host (a quota at half the host would then not bind)."""
    had = min(host_cores, used) if used is not None and used > 0 else host_cores
    return round(HALF * had, 3)


def used(evs: list[dict[str, Any] | None], names: str) -> float | None:
    """The least, over levels, of the CPU (cores) the roles ``names`` ("a+b") used together."""
    sums = []
    for ev in evs:
        rs = (ev or {}).get("roles") or {}
        xs = [(rs.get(r) or {}).get("cpu") for r in names.split("+") if r in rs]
        ok = [float(x) for x in xs if isinstance(x, (int, float)) and math.isfinite(x)]
        if ok:
            sums.append(sum(ok))
    return min(sums) if sums else None


def _rate(ev: dict[str, Any] | None) -> tuple[float, float]:
    """(rate, its own relative error: without a between-run term, which judge adds)."""
    ev = ev or {}
    r, se = ev.get("rate"), ev.get("rate_rel_se_own", ev.get("rate_rel_se"))
    return (float(r) if isinstance(r, (int, float)) and math.isfinite(r) else math.nan,
            float(se) if isinstance(se, (int, float)) and math.isfinite(se) else math.nan)


# a quota below what the roles used lowers the rate whatever capped the level: every rival
# predicts what host-cpu predicts, so this intervention checks a proportion, never the name
# (analysis.verdicts.experiment_choice.EXPERIMENTS)
RIVALS = {"any cause (a quota below the roles' use)": HALF}


def host_cpu_cause(uncapped: dict[str, Any] | None, capped: dict[str, Any] | None,
                   cores: float, host_cores: float) -> dict[str, Any]:
    """The intervention's figures for one level (evidence of the uncapped and the half-host
    level): {"ok", "note", "slowdown", "slowdown_low", "at_quota", ...} as a Check's cause.
    ok: the proportion checked (the name is not: every rival predicts the same fall)."""
    res = judge("tighten", HALF, [(_rate(uncapped), _rate(capped))], min_pairs=1, rivals=RIVALS)
    ratio, high = res.get("ratio"), res.get("high")
    out = {"role": "every role", "intervention": "one quota at half the host", "quota_cores": cores,
           "host_cores": host_cores, "predicted": HALF, "ratio": ratio, "outcome": res["outcome"],
           "slowdown": 1 / ratio if ratio else None, "slowdown_low": 1 / high if high else None,
           "at_quota": True, "ok": res["outcome"] == "proportion checked"}
    out["note"] = (f"every role under one quota of {cores:g} of {host_cores:g} cores: the rate "
                   f"{res['why']}: host-cpu's proportion {'checked' if out['ok'] else 'NOT met'} by "
                   "intervention (a proportion, not the name)")
    return out


def apply(check: Any, capped: dict[str, Any] | None, uncapped: dict[str, Any] | None,
          cores: float, host_cores: float) -> Any:
    """The check made right only with its intervention confirmed; the figures as its cause."""
    cause = host_cpu_cause(uncapped, capped, cores, host_cores)
    check.cause = cause
    check.ok = bool(check.ok and cause["ok"])
    check.note = "; ".join(x for x in (check.note, cause["note"]) if x)
    return check


# ec-overhead: the EC cell against its replicated twin, interleaved
def ec_prediction(ev: dict[str, Any], twin: dict[str, Any] | None) -> float | None:
    """EC's rate over its twin's where the bytes written are what costs: the raw bytes per
    logical byte each pool measured (else the pools' nominal ones), twin over EC."""
    def raw(e: dict[str, Any] | None) -> float | None:
        for k in ("raw_per_logical", "raw_expected"):
            v = (e or {}).get(k)
            if isinstance(v, (int, float)) and math.isfinite(v) and v > 0:
                return float(v)
        return None
    ec, rep = raw(ev), raw(twin)
    return rep / ec if ec and rep and rep < ec else None


def ec_pairs(first: dict[tuple[str, int], dict[str, Any]], second: dict[tuple[str, int], dict[str, Any]],
             ec_id: str, rep_id: str, level: int) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """(twin, EC) rate pairs at ``level`` from the two runs (twin first in one, EC first in the
    other: A-B-B-A); evidence dicts keyed (cell id, level)."""
    out = []
    for got in (first, second):
        a, b = got.get((rep_id, level)), got.get((ec_id, level))
        if a and b:
            out.append((_rate(a.get("evidence")), _rate(b.get("evidence"))))
    return out


def ec_expect(res: dict[str, Any], ev: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """The right verdicts from the interleaved experiment (analysis.verdicts.experiment.judge, tighten):
    confirmed: ec-overhead; refuted: anything but ec-overhead; inconclusive: only a verdict that
    says it cannot tell (inconclusive, or borderline)."""
    from_rules = ("gateway", "storage-bandwidth", "storage-iops", "client", "network", "host-cpu",
                  "storage-network", "storage-disk", "storage-host-cpu", "inconclusive", "concurrency")
    note = f"EC against its twin, interleaved: {res['why']}"
    if res["outcome"] == "confirmed":
        return ("ec-overhead",), note + ": EC costs"
    if res["outcome"] == "refuted":
        return from_rules, note + ": no EC cost, ec-overhead must not be named"
    if ev.get("borderline"):
        return ("ec-overhead", *from_rules), note + ": the experiment cannot tell, nor can the rules (borderline)"
    return ("inconclusive",), note + ": the experiment cannot tell: no verdict may be sure"
