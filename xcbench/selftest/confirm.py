"""Confirmation by intervention (``xcbench confirm RUN``): the experiment that tests a verdict.

For each verdict of a run (or of one cell) the cell is replayed at the verdict's level twice,
one run after the other, on the same cluster: a **control** (the limit as the run had it) and
a **changed** run, where the named limit is

- **relieved** (the rate must rise beyond both runs' noise): ``gateway``: the cell's per-origin
  CPU quota (the ``cores`` dimension), or the CPU quota its gateway ran under, doubled (at most
  the host's cores); ``client``: the CPU quota the driver ran under, doubled;
- **tightened** (the rate must fall in proportion): ``storage-bandwidth`` / ``storage-iops``:
  the OSDs' CPU limit (their quota, else the host's cores) halved. Proportion predicts the
  rate x 0.5; the verdict is confirmed when the upper 95 % bound of changed / control shows at
  least half that fall (<= 0.75), refuted otherwise.

A relief is confirmed when the lower 95 % bound of changed / control (figures.stats, each
rate's own noise) is above 1, refuted otherwise. Verdicts no experiment on this host can test
are "not testable here" with the reason (host-cpu: the roles would need hosts of their own;
network: a wider link than the run's; ec-overhead: the comparison with the replicated twin is
the measurement itself; a limit already at every core of the host; OSDs of a cluster that is
not the embedded one). The replays are runs of their own under ``<run>/confirm/``; the
outcome goes to ``<run>/confirmations.json`` and ``confirmations.parquet``. Only what the
replays create is touched: their gateways, targets and quota groups, removed when each ends.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from xcbench.backends.base import backend_class
from xcbench.errors import XcbError
from xcbench.figures.stats import CONFIDENCE, ratio_lower_bound
from xcbench.matrix import load_matrix
from xcbench.matrix.expand import _finish
from xcbench.run.runner import RunOptions, run_matrix
from xcbench.selftest.run_scenarios import Cap, _mini_pids, capping_runner
from xcbench.store.rundir import RunDir
from xcbench.system.cgroups import CpuGroups

RELIEF = 2.0  # a relieved limit: this many times the run's
TIGHTEN = 0.5  # a tightened limit: this share of the run's
TELEMETRY = "host:0.5,roles:0.5,gateway"
OUTCOMES = ("confirmed", "refuted", "not testable here")
Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else math.nan


def _quota(role: dict[str, Any] | None) -> float | None:
    """The role's CPU limit when it is a cgroup quota (not the host's cores, not unknown)."""
    if not role or not isinstance(role.get("limit"), (int, float)):
        return None
    return float(role["limit"]) if str(role.get("source", "")).startswith("cgroup") else None


def experiment(verdict: str, ev: dict[str, Any], cell: Any, host_cores: float,
               embedded: bool) -> dict[str, Any]:
    """What to change for a verdict: {"kind": relieve|tighten, "what", "role", "control_cap",
    "changed_cap", "cell_cores", "expect"} or {"why": ...} when no experiment here tests it."""
    roles = ev.get("roles") or {}
    if verdict == "gateway":
        if getattr(cell, "cores", None):
            c = float(cell.cores)
            if c >= host_cores:
                return {"why": f"each origin already has {c:g} cores, every core of this host: a "
                               "second gateway host would relieve it"}
            new = min(RELIEF * c, host_cores)
            return {"kind": "relieve", "role": None, "cell_cores": new, "expect": new / c,
                    "what": f"the gateway's per-origin CPU quota (cores) {c:g} -> {new:g}"}
        return _relieve_quota("gateway", roles.get("gateway"), host_cores,
                              "a second gateway host (origins on other hosts) would relieve it")
    if verdict == "client":
        return _relieve_quota("client", roles.get("client"), host_cores,
                              "a second client host, or FTS, would relieve it (none given here)")
    if verdict in ("storage-bandwidth", "storage-iops"):
        if not embedded:
            return {"why": "the OSDs are not this host's (a cluster given by --ceph-conf): their "
                           "limits cannot be changed from here"}
        q = _quota(roles.get("osd"))
        lim = q if q is not None else host_cores
        return {"kind": "tighten", "role": "osd", "control_cap": q, "changed_cap": round(TIGHTEN * lim, 3),
                "expect": TIGHTEN,
                "what": f"the OSDs' CPU limit {lim:g} cores ({'their quota' if q else 'the host'}) "
                        f"-> {TIGHTEN * lim:g}"}
    why = {"host-cpu": "the roles share this host's CPU: relieving it needs them on hosts of their "
                       "own (an inventory with more hosts)",
           "network": "relieving a link needs a wider one than the run's (its hosts and links are "
                      "gone with the run; re-run with a wider link: hosts.yaml link.rate)",
           "ec-overhead": "the verdict is itself the comparison with the replicated twin on the "
                          "same OSDs; no limit to relieve",
           "inconclusive": "no limit was named"}
    return {"why": why.get(verdict, f"no experiment for {verdict!r}")}


def _relieve_quota(role: str, x: dict[str, Any] | None, host_cores: float, instead: str) -> dict[str, Any]:
    q = _quota(x)
    if q is None or q >= 0.99 * host_cores:
        src = (x or {}).get("source", "not sampled")
        return {"why": f"the {role} already had every core of this host ({src}): {instead}"}
    new = round(min(RELIEF * q, host_cores), 3)
    return {"kind": "relieve", "role": role, "control_cap": q, "changed_cap": new, "expect": new / q,
            "what": f"the {role}'s CPU quota {q:g} -> {new:g} cores"}


def judge(kind: str, control: tuple[float, float], changed: tuple[float, float],
          expect: float) -> dict[str, Any]:
    """Outcome of one experiment from the two rates and their relative standard errors."""
    (rc, sc), (rx, sx) = control, changed
    out: dict[str, Any] = {"ratio": rx / rc if rc > 0 and math.isfinite(rx) else None,
                           "expected_ratio": expect, "confidence": CONFIDENCE}
    if not (rc > 0 and rx > 0):
        out.update(outcome="not testable here", why="a replay measured no steady rate")
        return out
    if kind == "relieve":
        low = ratio_lower_bound(rc, sc, rx, sx)
        out.update(bound=low, bound_kind="lower",
                   outcome="confirmed" if low > 1.0 else "refuted",
                   why=(f"relieved x{expect:g}: the rate x{rx / rc:.2f}, at least x{low:.2f} at "
                        f"{CONFIDENCE * 100:.0f} %" + ("" if low > 1.0 else ": it did not surely rise")))
        return out
    high = 1.0 / ratio_lower_bound(rx, sx, rc, sc)  # upper bound of changed / control
    need = 1.0 - (1.0 - expect) / 2  # at least half the proportional fall
    ok = high <= need
    out.update(bound=high, bound_kind="upper", outcome="confirmed" if ok else "refuted",
               why=(f"tightened x{expect:g}: the rate x{rx / rc:.2f}, at most x{high:.2f} at "
                    f"{CONFIDENCE * 100:.0f} % (proportion predicts x{expect:g}; confirmed at "
                    f"<= x{need:g})" + ("" if ok else ": it did not fall in proportion")))
    return out


def preflight(run_path: str | Path, cell: str | None = None) -> tuple[Any, list[dict[str, Any]], str]:
    """(the run, its verdict rows to test, its matrix file), or XcbError naming what is wrong:
    before anything starts."""
    path = Path(run_path)
    if not (path / "manifest.json").is_file():
        raise XcbError(f"confirm: {path}: not a run directory (no manifest.json)")
    run = RunDir.open(path)
    rows = run.table("verdicts").to_dict("records")
    if not rows:
        raise XcbError(f"confirm: {path}: the run has no verdicts to confirm")
    if cell:
        rows = [r for r in rows if str(r["cell_id"]).startswith(cell)]
        if not rows:
            raise XcbError(f"confirm: {path}: --cell {cell!r}: no verdict of that cell in the run")
    mpath = (run.manifest.get("matrix") or {}).get("path")
    if not mpath or not Path(mpath).is_file():
        raise XcbError(f"confirm: {path}: the run's matrix file {mpath!r} is gone: the cells "
                       "cannot be replayed")
    return run, rows, str(mpath)


def needs_cluster(run: Any, rows: list[dict[str, Any]]) -> bool:
    """Does testing these verdicts need the run's (embedded) Ceph cluster?"""
    cells = run.cells
    return any(r["verdict"] in ("storage-bandwidth", "storage-iops")
               or getattr(cells.get(r["cell_id"]), "backend", "tmpfs") != "tmpfs" for r in rows)


def confirm_run(run_path: str | Path, cluster: Any, *, cell: str | None = None,
                log: Log = _stderr) -> dict[str, Any]:
    """Test each verdict of the run (of ``cell``); {"run", "confirmations": [...], "ok"}; written
    to <run>/confirmations.json and .parquet."""
    import os

    run, rows, mpath = preflight(run_path, cell)
    matrix = load_matrix(mpath, cluster) if cluster is not None else load_matrix(mpath)
    cells = {c.id: c for c in matrix.cells}
    cores = float(len(os.sched_getaffinity(0)))
    embedded = bool(getattr(cluster, "embedded", False))
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        ev = json.loads(row.get("evidence") or "{}")
        direction = row.get("direction") or "write"
        base = {"cell_id": row["cell_id"], "concurrency": int(row["concurrency"]),
                "direction": direction, "verdict": row["verdict"]}
        c = cells.get(row["cell_id"])
        exp = experiment(row["verdict"], ev, c, cores, embedded) if c is not None else \
            {"why": "the cell is not in the run's matrix file any more"}
        if "why" not in exp and c is not None and backend_class(c.backend).needs_cluster and cluster is None:
            exp = {"why": "the cell needs the run's Ceph cluster, which is not the embedded one"}
        if "why" in exp:
            out.append({**base, "outcome": "not testable here", "why": exp["why"]})
            log(f"confirm: {c.label if c else row['cell_id']} c={base['concurrency']}: "
                f"{row['verdict']}: not testable here ({exp['why']})")
            continue
        assert c is not None
        log(f"confirm: {c.label} c={base['concurrency']}: {row['verdict']}: {exp['kind']} "
            f"{exp['what']}")
        got = {}
        for arm in ("control", "changed"):
            got[arm] = _replay(matrix, c, base["concurrency"], direction, exp, arm,
                               f"{stamp}-{c.id[:8]}-c{base['concurrency']}-{i}-{arm}", run.path / "confirm",
                               cluster)
        res = judge(exp["kind"], got["control"]["rate"], got["changed"]["rate"], float(exp["expect"]))
        out.append({**base, "experiment": exp["kind"], "what": exp["what"], **res,
                    "control_Bps": got["control"]["rate"][0], "control_rel_se": got["control"]["rate"][1],
                    "changed_Bps": got["changed"]["rate"][0], "changed_rel_se": got["changed"]["rate"][1],
                    "control_run": got["control"]["run"], "changed_run": got["changed"]["run"],
                    "control_role": got["control"]["role"], "changed_role": got["changed"]["role"]})
        log(f"confirm: {c.label} c={base['concurrency']}: {row['verdict']}: {res['outcome']} "
            f"({res.get('why')})")
    result = {"run": str(run.path), "confirmations": [_clean(x) for x in out],
              "ok": not any(x["outcome"] == "refuted" for x in out)}
    write(run.path, result)
    return result


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def _replay(matrix: Any, cell: Any, level: int, direction: str, exp: dict[str, Any], arm: str,
            name: str, store: Path, cluster: Any) -> dict[str, Any]:
    """Run the cell at one level with the experiment's ``arm``; {"rate": (B/s, rel se), "run",
    "role": the capped role's cpu/limit}."""
    import os

    changes: dict[str, Any] = {"concurrency": (level,)}
    if arm == "changed" and exp.get("cell_cores"):
        changes["cores"] = exp["cell_cores"]
    c = _finish(replace(cell, **changes))
    m = replace(matrix, cells=[c])
    opts = RunOptions(out=store, name=name, baseline=False, probes=False, report=False,
                      progress=False, telemetry=TELEMETRY)
    role, cap = exp.get("role"), exp.get(f"{arm}_cap")
    if role and cap:
        pids = _mini_pids(cluster) if role == "osd" else None
        with CpuGroups(None, run=f"confirm{os.getpid()}-{arm}") as groups:
            run = run_matrix(m, cluster, opts, runner=capping_runner(Cap(role, {c.id: cap}, groups, pids)))
    else:
        run = run_matrix(m, cluster, opts)
    rate, se, x = math.nan, math.nan, None
    for r in run.table("verdicts").to_dict("records"):
        if r["cell_id"] == c.id and int(r["concurrency"]) == level and (r.get("direction") or "write") == direction:
            ev = json.loads(r.get("evidence") or "{}")
            rate, se = _num(ev.get("rate")), _num(ev.get("rate_rel_se"))
            x = (ev.get("roles") or {}).get(role or "gateway")
    return {"rate": (rate, se), "run": str(run.path),
            "role": {k: (x or {}).get(k) for k in ("cpu", "limit", "source", "throttled")} if x else None}


def write(run_path: Path, result: dict[str, Any]) -> None:
    """<run>/confirmations.json (the whole result) and confirmations.parquet (one row per verdict)."""
    import pandas as pd
    (run_path / "confirmations.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    rows = [{k: (json.dumps(v) if isinstance(v, dict) else v) for k, v in x.items()}
            for x in result["confirmations"]]
    pd.DataFrame(rows).to_parquet(run_path / "confirmations.parquet", index=False)


def _mb(v: Any) -> str:
    return f"{v / 1e6:.1f} MB/s" if isinstance(v, (int, float)) and math.isfinite(v) else "?"


def _se(v: Any) -> str:
    return f"±{v * 100:.1f} %" if isinstance(v, (int, float)) and math.isfinite(v) else "± ?"


def text(result: dict[str, Any], labels: dict[str, str] | None = None) -> str:
    labels = labels or {}
    lines = [f"xcbench confirm {result['run']}", ""]
    for x in result["confirmations"]:
        head = (f"{labels.get(x['cell_id'], x['cell_id'])} c={x['concurrency']} {x['direction']}: "
                f"{x['verdict']}: {x['outcome'].upper() if x['outcome'] == 'refuted' else x['outcome']}")
        lines.append(head)
        if x["outcome"] == "not testable here" and "experiment" not in x:
            lines.append(f"    why: {x['why']}")
            continue
        lines.append(f"    {x['experiment']}: {x['what']}")
        lines.append(f"    control {_mb(x['control_Bps'])} ({_se(x['control_rel_se'])}), "
                     f"changed {_mb(x['changed_Bps'])} ({_se(x['changed_rel_se'])}): {x.get('why')}")
    n = {o: sum(x["outcome"] == o for x in result["confirmations"]) for o in OUTCOMES}
    lines += ["", ", ".join(f"{v} {k}" for k, v in n.items()) + f"; written to {result['run']}/"
              "confirmations.json"]
    return "\n".join(lines)
