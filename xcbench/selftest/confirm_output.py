"""What `xcbench confirm` says: each experiment's arms in words (steady or not, the relieved
limit binding or not), each arm's rate over its runs, the text per verdict with the counts of
outcomes, and the files (<run>/confirmations.json and .parquet)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from xcbench.analysis.verdicts.experiment_choice import NEAR
from xcbench.analysis.verdicts.roles import THROTTLED

OUTCOMES = ("confirmed", "proportion checked", "not testable here", "refuted", "inconclusive")


def measured_as_asked(exp: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """What the arms say of the experiment's own premise, in words ("" when nothing): arms that
    ended not steady (their rate carries the window's-choice error: the level's longest was too
    short for it), and a relieved CPU limit that did not bind in the changed arms (the role
    used < NEAR of its new limit: the relief was cut short by another, e.g. the host's CPU
    taken by others' load; a fifth of the predicted rise is asked for that reason)."""
    out = []
    loose = [f"{r['arm']} {r['pair']}" for r in runs if not r.get("steady", True)]
    if loose:
        out.append(f"not steady: {', '.join(loose)}")
    changed = exp.get("changed") or {}
    lift = changed.get("lift")
    if exp.get("kind") == "relieve" and ((changed.get("cell") or {}).get("cores") or changed.get("cap")
                                         or (lift and lift[0].get("file", "").startswith("cpu."))):
        held = [r["role"] for r in runs if r["arm"] == "changed" and r.get("role")
                and isinstance(r["role"].get("cpu"), (int, float)) and (r["role"].get("limit") or 0) > 0]
        # the relieved quota bound: its group throttled in most CFS periods (the kernel's word:
        # analysis.verdicts.roles' threshold), or the role at NEAR of it. Not the roles' wider
        # "saturated", which a role waiting on a full host's run queue also is
        loose = [x for x in held if not (x["cpu"] >= NEAR * x["limit"] or (x.get("throttled") or 0) >= THROTTLED)]
        if held and 2 * len(loose) > len(held):
            use = sorted(x["cpu"] / x["limit"] for x in held)[len(held) // 2]
            out.append(f"the relieved limit did not bind in {len(loose)} of {len(held)} changed arms "
                       f"(the role at a median {use * 100:.0f} % of it): another limit cut the relief short")
    return "; ".join(out)


def arms(runs: list[dict[str, Any]]) -> dict[str, float | None]:
    """Each arm's rate over its runs (geometric mean) and that mean's relative error."""
    out: dict[str, float | None] = {}
    for arm in ("control", "changed"):
        got = [(r["bytes_per_s"], r["rel_se"]) for r in runs if r["arm"] == arm and r["bytes_per_s"]]
        if not got:
            out.update({f"{arm}_bytes_per_s": None, f"{arm}_rel_se": None})
            continue
        ses = [se for _, se in got if se is not None]
        out[f"{arm}_bytes_per_s"] = math.exp(sum(math.log(b) for b, _ in got) / len(got))
        out[f"{arm}_rel_se"] = math.sqrt(sum(se * se for se in ses)) / len(ses) if ses else None
    return out


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def write(run_path: Path, result: dict[str, Any]) -> None:
    """<run>/confirmations.json (the whole result) and confirmations.parquet (one row per verdict)."""
    import pandas as pd
    (run_path / "confirmations.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    rows = [{k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in x.items()}
            for x in result["confirmations"]]
    pd.DataFrame(rows).to_parquet(run_path / "confirmations.parquet", index=False)


def _mb(v: Any) -> str:
    return f"{v / 1e6:.1f} MB/s" if isinstance(v, (int, float)) and math.isfinite(v) else "?"


def _se(v: Any) -> str:
    return f"±{v * 100:.1f} %" if isinstance(v, (int, float)) and math.isfinite(v) else "± ?"


def _x(v: Any) -> str:
    return f"x{v:.2f}" if isinstance(v, (int, float)) and math.isfinite(v) else "?"


def text(result: dict[str, Any], labels: dict[str, str] | None = None) -> str:
    """Per verdict: the experiment, the predicted and measured ratio, the prediction error and
    the outcome; a count of outcomes at the end."""
    labels = labels or {}
    lines = [f"xcbench confirm {result['run']}", ""]
    for x in result["confirmations"]:
        out = x["outcome"].upper() if x["outcome"] == "refuted" else x["outcome"]
        lines.append(f"{labels.get(x['cell_id'], x['cell_id'])} c={x['concurrency']} {x['direction']}: "
                     f"{x['verdict']}: {out}")
        if "experiment" not in x:
            lines.append(f"    why: {x['why']}")
            continue
        err = x.get("prediction_error")
        lines.append(f"    {x['experiment']}: {x['what']}")
        se = x.get("rel_se")
        lines.append(f"    predicted {_x(x.get('predicted'))}, measured {_x(x.get('ratio'))}"
                     + (f" (prediction error {err * 100:+.0f} %)" if isinstance(err, (int, float)) else "")
                     + f", asked {_x(x.get('minimum'))}; "
                     + (f"one-sided {x['confidence'] * 100:.0f} % bounds {_x(x.get('low'))} and {_x(x.get('high'))}, noise "
                        f"±{se * 100:.1f} % over {x.get('pairs')} pairs" if isinstance(se, (int, float))
                        else str(x.get("why"))))
        lines.append("    runs: " + ", ".join(f"{r['arm'][:2]} {_mb(r['bytes_per_s'])}" + ("" if r.get("steady", True) else " †")
                                          for r in x.get("runs") or ())
                     + (" († not steady)" if any(not r.get("steady", True) for r in x.get("runs") or ()) else ""))
    n = {o: sum(x["outcome"] == o for x in result["confirmations"]) for o in OUTCOMES}
    lines += ["", ", ".join(f"{v} {k}" for k, v in n.items()) + f"; written to {result['run']}/"
              "confirmations.json"]
    return "\n".join(lines)
