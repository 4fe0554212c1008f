"""What to do next: per level that is inconclusive or borderline, the experiment that would
settle it; and whether a run is fit for sizing (`plan --calibrate`).

A borderline level names the verdicts within its noise (glance ``near``): ``xcbench confirm``
tests each of them at that level by an experiment that can refute it (``--test``); one
"confirmed" (not "proportion checked": an experiment whose rivals predict the same cannot pick
between candidates) names the cause. host-cpu is suggested only where other processes held CPU
the roles could be given (the row's ``cpu_to_give``, analysis.verdicts.experiment_choice); on a
box whose only load is the roles, only roles on hosts of their own (``--hosts``) tell host-cpu
apart. An inconclusive level with no candidate needs narrower noise (``--repeats``) or another
level (a higher one shows whether more transfers go faster). Rows are the closing table's
(analysis.report.glance.rows).
"""

from __future__ import annotations

from typing import Any

from xcbench.analysis.verdicts.experiment_choice import NO_CPU_TO_GIVE, TESTABLE

HOST_CPU_MOST = 0.5  # more than this share of the levels host-cpu on one box: not fit for sizing
UNTESTABLE_HERE = ("network", "storage-network")  # confirm says why in one line; not suggested


def settle(rows: list[dict[str, Any]], run_path: str, one_box: bool) -> list[str]:
    """One line per inconclusive or borderline level: the level, then the command(s) to run."""
    out = []
    for r in rows:
        near = [v for v in r.get("near") or () if v != r["verdict"]]
        if r["verdict"] != "inconclusive" and not near:
            continue
        give = r.get("cpu_to_give")
        relievable = isinstance(give, (int, float)) and give >= NO_CPU_TO_GIVE
        cands = [v for v in [r["verdict"], *near] if v in TESTABLE and v not in UNTESTABLE_HERE
                 and (v != "host-cpu" or relievable)]
        where = f"{r['cell']} c={r['concurrency']}" + (f" {r['direction']}" if r["direction"] != "write" else "")
        said = r["verdict"] + (f" ~ {', '.join(near)}" if near else "")
        todo = []
        if cands:
            todo.append(f"xcbench confirm {run_path} --cell {str(r['cell_id'])[:10]} --level {r['concurrency']} "
                        + " ".join(f"--test {v}" for v in cands))
        else:
            todo.append(f"--repeats 2 (narrower noise) or a level c={2 * int(r['concurrency'])}")
        if "host-cpu" in [r["verdict"], *near] and (one_box or not relievable):
            todo.append("--hosts FILE (the roles on hosts of their own"
                        + ("" if relievable else "; host-cpu: no CPU to give here") + ")")
        out.append(f"{where}: {said}: " + "; or ".join(todo))
    return out


def fit_for_sizing(rows: list[dict[str, Any]], one_box: bool) -> bool:
    """A run sizes gateways and disks only where its levels were capped by what it measures:
    not when most levels are host-cpu with every role on one box (the box, not the path)."""
    if not rows:
        return False
    host = sum(r["verdict"] == "host-cpu" for r in rows)
    return not (one_box and host > HOST_CPU_MOST * len(rows))


def one_box(manifest: dict[str, Any]) -> bool:
    """Every role on this one machine (no hosts in the run's manifest)."""
    hosts = manifest.get("hosts") if isinstance(manifest, dict) else None
    return not (isinstance(hosts, dict) and hosts)
