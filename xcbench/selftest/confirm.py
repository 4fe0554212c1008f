"""Confirmation by intervention (``xcbench confirm RUN``): the experiment that tests a verdict.

For each verdict of a run (or of one cell) the cell is replayed at the verdict's level in pairs
of runs on the same cluster, A-B-B-A (analysis.verdicts.experiment.schedule): a **control** (the cell as
the run had it) and a **changed** run, where the named limit is relieved or tightened through
what xcbench itself controls (analysis.verdicts.experiment_choice):

- storage-bandwidth / storage-iops: the storage taken out (the same gateway, clients and files
  into a tmpfs target): the rate must rise;
- gateway: twice each origin's cores (a ``cores`` cell), else one more origin behind the
  redirector; concurrency: twice the transfers in flight; client: twice the driver's quota;
- host-cpu: CPU given to the roles (every role in one CPU group weighing 10x another process,
  no quota) where other processes held some: the rate must rise by their share; on a box whose
  only load is the roles, "not testable here: no CPU to give";
- ec-overhead: the EC cell and its replicated twin replayed interleaved;
- network: the client host's link (an emulated host xcbench made, still up) shaped to twice its
  rate: the rate must rise (xcbench.hosts.reshape: recorded, restored after); halving it could
  not tell a binding link from one at a high use.

A run whose campaigns came from client hosts is replayed from the same hosts (its inventory).

The pairs are judged by analysis.verdicts.experiment (Student t, the between-run term once per
run, a minimum effect never past a rival's prediction, the measured ratio beside the predicted
one): confirmed, proportion checked (a rival predicts the same), refuted or inconclusive; a
verdict no change here can test is "not testable here" with the one-line reason. As many pairs
as the predicted effect needs at the level's own noise (experiment.pairs_needed, at least 2,
at most MAX_PAIRS; ``pairs`` given: that many). The replays are runs of
their own under ``<run>/confirm/``; the outcome goes to ``<run>/confirmations.json`` and
``confirmations.parquet``. Only what the replays create is touched: their gateways, targets
and quota groups, removed when each ends.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from xcbench.analysis.verdicts import between_run
from xcbench.analysis.verdicts.experiment import (
    MAX_PAIRS,
    PAIRS,
    judge,
    line,
    pair_noise,
    pairs_needed,
    schedule,
)
from xcbench.analysis.verdicts.experiment_choice import CLUSTER_ROLES, TESTABLE, choose
from xcbench.backends.base import backend_class
from xcbench.cell import Cell
from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError
from xcbench.figures.numbers import as_float, finite_or_none
from xcbench.hosts import reshape
from xcbench.matrix import Matrix, load_matrix
from xcbench.matrix.expand import _finish, expand
from xcbench.matrix.schema import _Errors
from xcbench.run.runner import RunOptions
from xcbench.selftest.capping import Cap, CapHooks, mini_pids, run_concluded
from xcbench.store.rundir import RunDir
from xcbench.system.cgroups import CpuGroups
from xcbench.system.secrets_policy import fts_endpoint_problems
from xcbench.system.userfiles import read_yaml

TELEMETRY = "host:0.5,roles:0.5,gateway"
OUTCOMES = ("confirmed", "proportion checked", "not testable here", "refuted", "inconclusive")
UNSIZED_PAIRS = 4  # an experiment with no predicted size (a relief with no ceiling, EC with no raw bytes)
TMPFS_MIN = 1 << 30  # a take-out target holds at least this, and twice the dataset
Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def host_cores() -> float:
    return float(len(os.sched_getaffinity(0)))


def preflight(run_path: str | Path, cell: str | None = None, level: int | None = None,
              test: tuple[str, ...] = (), fts_endpoints: tuple[str, ...] = ()
              ) -> tuple[Any, list[dict[str, Any]], str]:
    """(the run, its verdict rows to test, its matrix file), or XcbError naming what is wrong:
    before anything starts. A replay sends the matrix's FTS credential only to an endpoint the
    operator names (``fts_endpoints``: --fts-endpoint), as `xcbench run` does."""
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
    if level is not None and not any(int(r["concurrency"]) == level for r in rows):
        raise XcbError(f"confirm: {path}: --level {level}: no verdict at that level"
                       + (f" of cell {cell!r}" if cell else ""))
    bad = [t for t in test if t not in TESTABLE]
    if bad:
        raise XcbError(f"confirm: --test {bad[0]!r}: not a verdict confirm tests (one of {', '.join(TESTABLE)})")
    mat = run.manifest.get("matrix") or {}
    mpath = mat.get("path")
    if mpath and Path(mpath).is_file():
        _operator_named(read_yaml(mpath), str(mpath), fts_endpoints)
        return run, rows, str(mpath)
    if isinstance(mat.get("raw"), dict):  # the matrix as the run read it (its file moved, or another cwd)
        _operator_named(mat["raw"], f"{path}: manifest.json: matrix", fts_endpoints)
        kept = path / "confirm" / "matrix.yaml"
        kept.parent.mkdir(exist_ok=True)
        kept.write_text(yaml.safe_dump(mat["raw"], sort_keys=False))
        return run, rows, str(kept)
    raise XcbError(f"confirm: {path}: the run's matrix file {mpath!r} is gone and the manifest "
                   "holds no copy: the cells cannot be replayed")


def _operator_named(raw: Any, where: str, granted: tuple[str, ...]) -> None:
    """XcbError (one line) when the matrix would send its FTS credential to an endpoint the
    operator did not name (xcbench.system.secrets_policy.fts_endpoint_problems), whichever part
    of it (defaults, a backend, an include: entry) the cell's FTS section came from."""
    cells = expand(raw, where, _Errors(where)) if isinstance(raw, dict) else []
    refused = fts_endpoint_problems(cells, where, granted)
    if refused:
        raise XcbError(refused[0])


def needs_cluster(run: Any, rows: list[dict[str, Any]]) -> bool:
    """Does testing these verdicts need the run's Ceph cluster (a cell with storage behind it)?"""
    cells = run.cells
    return any(backend_class(getattr(cells.get(r["cell_id"]), "backend", "tmpfs")).needs_cluster
               for r in rows)


def ceilings(rows: list[dict[str, Any]], cells: dict[str, Any]) -> dict[tuple[int, str, int], float]:
    """The run's gateway ceilings: (level, direction, file size) -> the best tmpfs cell's rate."""
    out: dict[tuple[int, str, int], float] = {}
    for r in rows:
        c = cells.get(r["cell_id"])
        if c is None or backend_class(c.backend).needs_cluster:  # the tmpfs gateway ceiling only
            continue
        rate = as_float(json.loads(r.get("evidence") or "{}").get("rate"))
        key = (int(r["concurrency"]), r.get("direction") or "write", int(c.file_size))
        if rate > 0 and rate > out.get(key, 0.0):
            out[key] = rate
    return out


def confirm_run(run_path: str | Path, cluster: Cluster | None, *, cell: str | None = None, pairs: int | None = None,
                verdicts: tuple[str, ...] | None = None, level: int | None = None,
                test: tuple[str, ...] = (), fts_endpoints: tuple[str, ...] = (),
                hosts: Any = None, log: Log = _stderr) -> dict[str, Any]:
    """Test each verdict of the run (of ``cell``, at ``level``; of these ``verdicts``), or the
    limits ``test`` names there instead (a borderline verdict's candidates); {"run",
    "confirmations": [...], "ok"}; written to <run>/confirmations.json and .parquet.
    ``hosts``: the run's inventory (xcbench.hosts.Inventory) when its campaigns came from hosts."""
    run, rows, mpath = preflight(run_path, cell, level, test, fts_endpoints)
    if (run.manifest.get("hosts") or {}).get("hosts") and hosts is None:
        raise XcbError(f"confirm: {run.path}: the run's campaigns came from the hosts of "
                       f"{(run.manifest['hosts'].get('source') or 'an inventory')!r}: give it with --hosts")
    for h in reshape.restore_left():  # an experiment that died left a link tightened
        log(f"confirm: host {h}'s link was left tightened by an experiment: restored")
    links = {h: x["rate_bits_per_s"] for h, x in reshape.shaped().items()}
    matrix = load_matrix(mpath, cluster) if cluster is not None else load_matrix(mpath)
    cells = {c.id: c for c in matrix.cells}
    cores = host_cores()
    embedded = bool(getattr(cluster, "embedded", False))
    between = between_run.of(run.manifest).get("rate")
    tops = ceilings(run.table("verdicts").to_dict("records"), cells)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        if verdicts and row["verdict"] not in verdicts:
            continue
        if level is not None and int(row["concurrency"]) != level:
            continue
        for j, named in enumerate(test or (row["verdict"],)):
            out.append(_one(row, named, f"{stamp}-{i}.{j}", cells, matrix, run.path, cluster, pairs,
                            cores, embedded, between, tops, log, hosts, links))
    result = {"run": str(run.path), "pairs": pairs, "confirmations": [_clean(x) for x in out],
              "ok": not any(x["outcome"] == "refuted" for x in out)}
    write(run.path, result)
    return result


def _one(row: dict[str, Any], named: str, tag: str, cells: dict[str, Any], matrix: Any, run_path: Path,
         cluster: Cluster | None, pairs: int | None, cores: float, embedded: bool, between: float | None,
         tops: dict[tuple[int, str, int], float], log: Log, hosts: Any = None,
         links: dict[str, float] | None = None) -> dict[str, Any]:
    """One experiment: the limit ``named`` tested at the row's cell and level."""
    ev = json.loads(row.get("evidence") or "{}")
    level, direction = int(row["concurrency"]), row.get("direction") or "write"
    base = {"cell_id": row["cell_id"], "concurrency": level, "direction": direction, "verdict": named}
    if named != row["verdict"]:
        base["run_verdict"] = row["verdict"]
    c = cells.get(row["cell_id"])
    if c is None:
        exp: dict[str, Any] = {"why": "the cell is not in the run's matrix file any more"}
    else:
        exp = choose(named, ev, c, level, cores, embedded, tops.get((level, direction, int(c.file_size))),
                     links)
    if "why" not in exp and c is not None and backend_class(c.backend).needs_cluster and cluster is None:
        exp = {"why": "the cell needs the run's Ceph cluster: give it with -c/--ceph-conf"}
    label = f"{c.label if c else row['cell_id']} c={level}"
    if "why" not in exp and pairs is None:
        pairs = _pairs_for(exp, ev, between)
        if pairs is None:
            exp = {"why": f"the effect predicted (x{exp.get('predicted') or 0:.2f}) is within this "
                          f"level's noise: more than {MAX_PAIRS} pairs would be needed"}
    if "why" in exp:
        log(f"confirm: {label}: {named}: not testable here ({exp['why']})")
        return {**base, "outcome": "not testable here", "why": exp["why"]}
    assert c is not None and pairs is not None
    log(f"confirm: {label}: {named}: {exp['kind']}: {exp['what']} ({pairs} pairs, A-B-B-A)")
    got: dict[int, dict[str, Any]] = {}
    runs = []
    for pair, arm in schedule(pairs):
        r = _replay(matrix, cells, c, level, direction, exp[arm], f"{tag}-{c.id[:8]}-c{level}-{pair}{arm}",
                    run_path / "confirm", cluster, hosts)
        got.setdefault(pair, {})[arm] = r["rate"]
        runs.append({"pair": pair, "arm": arm, "bytes_per_s": finite_or_none(r["rate"][0]),
                     "rel_se": finite_or_none(r["rate"][1]), "run": r["run"], "role": r["role"]})
        log(f"confirm:   pair {pair} {arm}: {_mb(r['rate'][0])} ({_se(r['rate'][1])})")
    res = judge(exp["kind"], exp["predicted"], [(got[p]["control"], got[p]["changed"]) for p in sorted(got)],
                between, rivals=exp.get("rivals"), need=exp.get("need"))
    if exp.get("confirms"):  # the storage taken out confirms the storage side, not its sub-kind
        base["confirms"], base["storage_kind"] = exp["confirms"], exp.get("storage_kind")
    log(f"confirm: {label}: {named}: {res['outcome']} ({res['why']})")
    return {**base, "experiment": exp["kind"], "what": exp["what"], **res, **arms(runs), "runs": runs}


def _pairs_for(exp: dict[str, Any], ev: dict[str, Any], between: float | None) -> int | None:
    """The pairs the experiment needs at this level's own noise (both arms taken as noisy as
    the run's level), at least PAIRS; None: more than MAX_PAIRS."""
    own = as_float(ev.get("rate_rel_se_own", ev.get("rate_rel_se")))
    if not math.isfinite(own):
        return PAIRS  # no noise to size the experiment with: the least
    if exp.get("predicted") is None:  # no size to aim at: t(0.95, 3) = 2.35, not t(1)'s 6.31
        return UNSIZED_PAIRS
    asked = line(exp["kind"], exp.get("predicted"), exp.get("rivals"), exp.get("need"))[0]
    return pairs_needed(exp["kind"], exp.get("predicted"), asked, pair_noise((own, own), between))


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


def replay_cell(cells: dict[str, Cell], cell: Cell, level: int, change: dict[str, Any]
                ) -> tuple[Cell, int]:
    """The cell an arm runs and its level: ``change`` of analysis.verdicts.experiment_choice applied."""
    c = cells[change["twin"]] if change.get("twin") else cell
    lv = int(change.get("level", level))
    fields: dict[str, Any] = {"concurrency": (lv,), **(change.get("cell") or {})}
    if change.get("tmpfs"):
        need = 2 * int(c.file_size) * max(int(c.files), lv)
        fields.update(backend="tmpfs", layout=None, pool=None, tmpfs_size=max(TMPFS_MIN, need))
    return _finish(replace(c, **fields)), lv


def _replay(matrix: Matrix, cells: dict[str, Cell], cell: Cell, level: int, direction: str,
            change: dict[str, Any], name: str, store: Path, cluster: Cluster | None,
            hosts: Any = None) -> dict[str, Any]:
    """Run one arm; {"rate": (B/s, rel se), "run", "role": the capped role's cpu/limit}."""
    c, lv = replay_cell(cells, cell, level, change)
    m = replace(matrix, cells=[c])
    opts = RunOptions(store=store, name=name, baseline=False, probes=False, report=False,
                      progress=False, telemetry=TELEMETRY + (",links" if hosts is not None else ""),
                      hosts=hosts)
    role, cores = change.get("cap") or (None, None)
    weight = None
    if change.get("weight"):  # every role in one group of that weight and the host's cores
        role, weight = change["weight"]
        cores = host_cores()
    if change.get("link"):
        host, bits_per_s = change["link"]
        link = reshape.shaped().get(host)
        if link is None:
            raise XcbError(f"confirm: host {host}'s link is no longer up as an emulated host xcbench made")
        with reshape.tightened(link["record"], host, bits_per_s):
            run = run_concluded(m, cluster, opts)
    elif role and cores:
        wants = set(role.split("+"))
        pids = mini_pids(cluster) if wants & set(CLUSTER_ROLES) else None
        with CpuGroups(None, run=f"confirm{os.getpid()}") as groups:
            opts.hooks = CapHooks(Cap(role, {c.id: cores}, groups, pids, weight=weight), cluster)
            run = run_concluded(m, cluster, opts)
    else:
        run = run_concluded(m, cluster, opts)
    rate, se, x = math.nan, math.nan, None
    for r in run.table("verdicts").to_dict("records"):
        if r["cell_id"] == c.id and int(r["concurrency"]) == lv and (r.get("direction") or "write") == direction:
            ev = json.loads(r.get("evidence") or "{}")
            # the run's own error: the between-run term is judge's to add, once per run
            rate, se = as_float(ev.get("rate")), as_float(ev.get("rate_rel_se_own", ev.get("rate_rel_se")))
            x = (ev.get("roles") or {}).get((role or "gateway").split("+")[0])
    return {"rate": (rate, se), "run": str(run.path),
            "role": {k: (x or {}).get(k) for k in ("cpu", "limit", "source", "throttled")} if x else None}


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
        lines.append("    runs: " + ", ".join(f"{r['arm'][:2]} {_mb(r['bytes_per_s'])}" for r in x.get("runs") or ()))
    n = {o: sum(x["outcome"] == o for x in result["confirmations"]) for o in OUTCOMES}
    lines += ["", ", ".join(f"{v} {k}" for k, v in n.items()) + f"; written to {result['run']}/"
              "confirmations.json"]
    return "\n".join(lines)
