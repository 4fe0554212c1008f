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
from dataclasses import dataclass, field, replace
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
from xcbench.run.hooks import RunHooks
from xcbench.run.runner import RunOptions
from xcbench.selftest import lifts
from xcbench.selftest.capping import Cap, CapHooks, mini_pids, run_concluded
from xcbench.selftest.confirm_output import (  # noqa: F401 - confirm's outputs, as its callers import them
    OUTCOMES,
    _clean,
    _mb,
    _se,
    arms,
    measured_as_asked,
    text,
    write,
)
from xcbench.store.rundir import RunDir
from xcbench.system.cgroups import CpuGroups
from xcbench.system.secrets_policy import fts_endpoint_problems
from xcbench.system.userfiles import read_yaml

TELEMETRY = "host:0.5,roles:0.5,gateway"
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


# the self-test's limits a replay keeps (xcbench.selftest.confirming): hooks for the arm's cell
# that make the run's own bottleneck again (a quota the run had through its hooks), or None
Site = Callable[[Cell], RunHooks | None]


@dataclass
class Setting:
    """What every experiment of one confirm shares."""
    matrix: Matrix
    cells: dict[str, Cell]
    store: Path  # where the replays go (<run>/confirm)
    cluster: Cluster | None
    pairs: int | None = None
    cores: float = 0.0
    embedded: bool = False
    between: float | None = None
    tops: dict[tuple[int, str, int], float] = field(default_factory=dict)
    log: Log = _stderr
    hosts: Any = None
    links: dict[str, float] = field(default_factory=dict)
    limits: dict[str, dict[str, Any]] = field(default_factory=dict)  # xcbench's limits on the OSDs
    experiment: str | None = None
    site: Site | None = None


def confirm_run(run_path: str | Path, cluster: Cluster | None, *, cell: str | None = None, pairs: int | None = None,
                verdicts: tuple[str, ...] | None = None, level: int | None = None,
                test: tuple[str, ...] = (), fts_endpoints: tuple[str, ...] = (),
                hosts: Any = None, log: Log = _stderr, experiment: str | None = None,
                site: Site | None = None) -> dict[str, Any]:
    """Test each verdict of the run (of ``cell``, at ``level``; of these ``verdicts``), or the
    limits ``test`` names there instead (a borderline verdict's candidates); {"run",
    "confirmations": [...], "ok"}; written to <run>/confirmations.json and .parquet.
    ``hosts``: the run's inventory (xcbench.hosts.Inventory) when its campaigns came from hosts;
    ``experiment``: this one of EXPERIMENTS instead of the one chosen; ``site``: the self-test's
    limits every replay keeps (Site)."""
    run, rows, mpath = preflight(run_path, cell, level, test, fts_endpoints)
    if (run.manifest.get("hosts") or {}).get("hosts") and hosts is None:
        raise XcbError(f"confirm: {run.path}: the run's campaigns came from the hosts of "
                       f"{(run.manifest['hosts'].get('source') or 'an inventory')!r}: give it with --hosts")
    for h in reshape.restore_left():  # an experiment that died left a link tightened
        log(f"confirm: host {h}'s link was left tightened by an experiment: restored")
    for g in lifts.restore_left():  # or a limit lifted
        log(f"confirm: {g}'s limit was left lifted by an experiment: restored")
    matrix = load_matrix(mpath, cluster) if cluster is not None else load_matrix(mpath)
    embedded = bool(getattr(cluster, "embedded", False))
    cells = {c.id: c for c in matrix.cells}
    s = Setting(matrix, cells, run.path / "confirm", cluster, pairs, host_cores(), embedded,
                between_run.of(run.manifest).get("rate"), ceilings(run.table("verdicts").to_dict("records"), cells),
                log, hosts, {h: x["rate_bits_per_s"] for h, x in reshape.shaped().items()},
                lifts.found(mini_pids(cluster)().get("osd", [])) if embedded else {}, experiment, site)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        if verdicts and row["verdict"] not in verdicts:
            continue
        if level is not None and int(row["concurrency"]) != level:
            continue
        for j, named in enumerate(test or (row["verdict"],)):
            out.append(_one(row, named, f"{stamp}-{i}.{j}", s))
    result = {"run": str(run.path), "pairs": pairs, "confirmations": [_clean(x) for x in out],
              "ok": not any(x["outcome"] == "refuted" for x in out)}
    write(run.path, result)
    return result


def _one(row: dict[str, Any], named: str, tag: str, s: Setting) -> dict[str, Any]:
    """One experiment: the limit ``named`` tested at the row's cell and level."""
    log, pairs = s.log, s.pairs
    ev = json.loads(row.get("evidence") or "{}")
    level, direction = int(row["concurrency"]), row.get("direction") or "write"
    base = {"cell_id": row["cell_id"], "concurrency": level, "direction": direction, "verdict": named}
    if named != row["verdict"]:
        base["run_verdict"] = row["verdict"]
    c = s.cells.get(row["cell_id"])
    if c is None:
        exp: dict[str, Any] = {"why": "the cell is not in the run's matrix file any more"}
    else:
        exp = choose(named, ev, c, level, s.cores, s.embedded, s.tops.get((level, direction, int(c.file_size))),
                     s.links, s.limits, s.experiment)
    if "why" not in exp and c is not None and backend_class(c.backend).needs_cluster and s.cluster is None:
        exp = {"why": "the cell needs the run's Ceph cluster: give it with -c/--ceph-conf"}
    label = f"{c.label if c else row['cell_id']} c={level}"
    if "why" not in exp and pairs is None:
        pairs = _pairs_for(exp, ev, s.between)
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
        r = _replay(s, c, level, direction, exp[arm], f"{tag}-{c.id[:8]}-c{level}-{pair}{arm}")
        got.setdefault(pair, {})[arm] = r["rate"]
        runs.append({"pair": pair, "arm": arm, "bytes_per_s": finite_or_none(r["rate"][0]),
                     "rel_se": finite_or_none(r["rate"][1]), "run": r["run"], "role": r["role"],
                     "steady": r["steady"]})
        log(f"confirm:   pair {pair} {arm}: {_mb(r['rate'][0])} ({_se(r['rate'][1])})"
            + ("" if r["steady"] else ", not steady (the level's longest hit)"))
    res = judge(exp["kind"], exp["predicted"], [(got[p]["control"], got[p]["changed"]) for p in sorted(got)],
                s.between, rivals=exp.get("rivals"), need=exp.get("need"))
    said = measured_as_asked(exp, runs)
    if said:
        res["why"] += "; " + said
    if exp.get("confirms"):  # the storage taken out confirms the storage side, not its sub-kind
        base["confirms"] = exp["confirms"]
        if exp.get("storage_kind"):
            base["storage_kind"] = exp["storage_kind"]
    base["experiment_name"] = exp.get("experiment")
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


def _replay(s: Setting, cell: Cell, level: int, direction: str, change: dict[str, Any],
            name: str) -> dict[str, Any]:
    """Run one arm; {"rate": (B/s, rel se), "run", "steady", "role": the capped role's cpu/limit}
    (the null-experiment benchmark runs arms with a Setting of its own)."""
    c, lv = replay_cell(s.cells, cell, level, change)
    m = replace(s.matrix, cells=[c])
    cluster = s.cluster
    opts = RunOptions(store=s.store, name=name, baseline=False, probes=False, report=False,
                      progress=False, telemetry=TELEMETRY + (",links" if s.hosts is not None else ""),
                      hosts=s.hosts)
    role, cores = change.get("cap") or (None, None)
    weight = None
    if change.get("weight"):  # every role in one group of that weight and the host's cores
        role, weight = change["weight"]
        cores = host_cores()
    site = s.site(c) if s.site is not None and not (role and cores) else None
    if site is not None:  # the self-test's bottleneck made again (an experiment's own cap replaces it)
        opts.hooks = site
    if change.get("lift"):  # a limit xcbench made on the OSDs, at its new value for this arm
        limit, value = change["lift"]
        role = "osd"
        with lifts.lifted(limit, value):
            run = run_concluded(m, cluster, opts)
    elif change.get("link"):
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
    rate, se, x, steady = math.nan, math.nan, None, False
    for r in run.table("verdicts").to_dict("records"):
        if r["cell_id"] == c.id and int(r["concurrency"]) == lv and (r.get("direction") or "write") == direction:
            ev = json.loads(r.get("evidence") or "{}")
            # the run's own error: the between-run term is judge's to add, once per run
            rate, se = as_float(ev.get("rate")), as_float(ev.get("rate_rel_se_own", ev.get("rate_rel_se")))
            x = (ev.get("roles") or {}).get((role or "gateway").split("+")[0])
            steady = ev.get("steady_method") not in (None, "not steady")
    return {"rate": (rate, se), "run": str(run.path), "steady": steady,
            "role": {k: (x or {}).get(k) for k in ("cpu", "limit", "source", "throttled", "saturated")}
            if x else None}
