"""The self-test's checks: each level's verdict of a run against the scenario's expectation (and
a capped level against the same level uncapped), the CPU each role used uncapped, and whether a
quota bound at all.
"""

from __future__ import annotations

import json
import math
from typing import Any

from xcbench.analysis.verdicts.experiment_choice import cpu_to_give
from xcbench.figures.units import parse_size
from xcbench.selftest import storage_io
from xcbench.selftest.cause import compare
from xcbench.selftest.scenarios import CELLS, Check, Scenario, expectation, ident


def run_verdicts(run: Any) -> dict[tuple[str, int], dict[str, Any]]:
    df = run.table("verdicts")
    out = {}
    for r in df.to_dict("records"):
        ev = json.loads(r.get("evidence") or "{}")
        out[(r["cell_id"], int(r["concurrency"]))] = {"verdict": r["verdict"], "reason": r["reason"],
                                                      "evidence": ev}
    return out


def cell_ids(matrix: Any) -> dict[str, str]:
    """CellDef key -> cell id in this matrix: by backend and pool, and by file size for a cell
    of its own size (the others of that backend and pool are the ones of no such size)."""
    out = {}
    for key, cd in CELLS.items():
        sized = {parse_size(d.file_size) for d in CELLS.values() if d.ident == cd.ident and d.file_size}
        hits = [c for c in matrix.cells if ident(c) == cd.ident
                and (c.file_size == parse_size(cd.file_size) if cd.file_size else c.file_size not in sized)]
        if hits:
            out[key] = hits[0].id
    return out


def failed_cells(run: Any) -> dict[str, str]:
    return {cid: (c.error or c.status) for cid, c in run.cells.items() if c.status not in ("complete", "degraded")}


def roles_short(ev: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for r, x in (ev.get("roles") or {}).items():
        out[r] = {k: x.get(k) for k in ("cpu", "limit", "source", "use", "throttled", "saturated")}
    return out


def judge_levels(s: Scenario, key: str, cell_id: str, levels: tuple[int, ...], verdicts: dict,
                 failed: dict[str, str], cap: dict[str, Any] | None = None,
                 uncapped: dict[int, dict[str, Any]] | None = None) -> list[Check]:
    """Each level's verdict against its expectation; a capped level (``cap``) also against the
    same level uncapped (``uncapped``: level -> evidence): xcbench.selftest.cause."""
    checks = []
    for level in levels:
        got = verdicts.get((cell_id, level))
        if got is None:
            why = failed.get(cell_id, "no verdict")
            checks.append(Check(s.name, key, cell_id, level, s.expected, "missing",
                                f"no verdict: {why}", False, cap=cap))
            continue
        ev = got["evidence"]
        expected, note = expectation(s, ev)
        ok = got["verdict"] in expected
        if s.extra is not None:
            rok, rnote = s.extra(ev)
            ok, note = ok and rok, "; ".join(x for x in (note, rnote) if x)
        cause = None
        if cap is not None and s.cap is not None:
            at = storage_io.at_limit(ev) if s.io else None
            if "+" in s.cap:  # a shared quota: every role of it named at the limit together
                at = set(s.cap.split("+")) <= set(ev.get("limited_roles") or ())
            cause = compare(ev, (uncapped or {}).get(level), s.cap, decoy=s.decoy, at_limit=at,
                            limit_kind="device throttle" if s.io else "cpu quota")
            ok = ok and cause["ok"]
            note = "; ".join(x for x in (note, cause["note"]) if x)
        checks.append(Check(s.name, key, cell_id, level, expected, got["verdict"], got["reason"], ok,
                            note=note, cap=cap, roles=roles_short(ev), evidence=ev, cause=cause))
    return checks


def uncapped_evidence(verdicts: dict, cell_id: str, levels: tuple[int, ...]) -> dict[int, dict[str, Any]]:
    return {lv: verdicts[(cell_id, lv)]["evidence"] for lv in levels if (cell_id, lv) in verdicts}


def most_use(verdicts: dict, cell_id: str, role: str, levels: tuple[int, ...]) -> float | None:
    """The most mean CPU (cores) ``role`` used over the levels of the uncapped cell."""
    vals = []
    for level in levels:
        got = verdicts.get((cell_id, level))
        x = ((got or {}).get("evidence", {}).get("roles") or {}).get(role) or {}
        if isinstance(x.get("cpu"), (int, float)) and math.isfinite(x["cpu"]):
            vals.append(float(x["cpu"]))
    return max(vals) if vals else None


def could_use(verdicts: dict, cell_id: str, role: str, levels: tuple[int, ...], host: float,
              embedded: bool) -> float | None:
    """The most CPU (cores) ``role`` could have used at any level of the uncapped cell: what it
    used plus what processes outside the run held meanwhile (others' load on a shared box,
    analysis.verdicts.experiment_choice.cpu_to_give: had it gone, the role could have taken it),
    at most the host's cores. A decoy's quota comes from it, not from what the role used: an
    uncapped run measured under heavier contention than the decoy's own would put a "generous"
    quota below what the role then takes, and it binds."""
    vals = []
    for level in levels:
        ev = (verdicts.get((cell_id, level)) or {}).get("evidence") or {}
        x = ((ev.get("roles") or {}).get(role) or {}).get("cpu")
        if isinstance(x, (int, float)) and math.isfinite(x):
            vals.append(min(host, float(x) + (cpu_to_give(ev, embedded) or 0.0)))
    return max(vals) if vals else None


def least_use(verdicts: dict, cell_id: str, role: str, levels: tuple[int, ...]) -> float | None:
    """The least mean CPU (cores) ``role`` used over the levels of the uncapped cell."""
    vals = []
    for level in levels:
        got = verdicts.get((cell_id, level))
        roles = (got or {}).get("evidence", {}).get("roles") or {}
        cpus = [(roles.get(r) or {}).get("cpu") for r in role.split("+")]  # a shared quota: the sum
        ok = [float(x) for x in cpus if isinstance(x, (int, float)) and math.isfinite(x)]
        if len(ok) == len(cpus):
            vals.append(sum(ok))
    return min(vals) if len(vals) == len(levels) and vals else None


def verdict_ok(result: dict[str, Any]) -> bool:
    """Every check right, and nothing "not run" that ``allow_missing`` does not name (a
    scenario that could not run, or a level it could not make)."""
    allow = set(result.get("allow_missing") or ())
    missing = [n["scenario"] for n in result.get("not_run", []) if n["scenario"] not in allow]
    bad = [c for c in result["checks"] if not c.ok
           and not (c.verdict == "not run" and c.scenario in allow)]
    return not missing and not bad and bool(result["checks"] or result.get("not_run"))


UNBOUND = 0.05  # throttled in fewer CFS periods than this: the kernel says the quota never bound


def quota_unbound(c: Check) -> bool:
    """The bottleneck was not made: the capped role's group was (almost) never throttled, or the
    host's CPU ran out before the role reached its quota (verdict host-cpu, the role below its
    limit and not saturated: other load took the CPU the quota would have left it). Both are
    facts of the run, not of the rules: such a level is run once more, never judged leniently."""
    if c.cap and c.cap.get("io"):  # a device throttle: the device's writes/s below MADE of it,
        # or the host's CPU taken mostly by processes outside the chain (others' load on a
        # shared box: the host-cpu rule then fires before the storage ones)
        return not storage_io.at_limit(c.evidence) or _others_took_host(c)
    x = c.roles.get(c.cap["role"].split("+")[0]) if c.cap else None  # a shared group: its throttling
    thr = (x or {}).get("throttled")
    if isinstance(thr, (int, float)) and thr < UNBOUND:
        return True
    return c.verdict == "host-cpu" and x is not None and x.get("saturated") is False


def _others_took_host(c: Check) -> bool:
    """host-cpu, with the run's own roles using less than half of the busy cores."""
    busy, cores = c.evidence.get("host_busy"), c.evidence.get("cores")
    if c.verdict != "host-cpu" or not isinstance(busy, (int, float)) or not isinstance(cores, (int, float)):
        return False
    ours = sum(x["cpu"] for x in c.roles.values() if isinstance(x.get("cpu"), (int, float)))
    return ours < 0.5 * busy * cores
