"""The self-test's confirmations: falsified verdicts are not confirmed.

For every experiment kind of analysis.verdicts.experiment_choice (docs/experiments.md), a case
(xcbench.selftest.confirm_cases) makes a run whose cause is known and keeps that cause made
through every replay (a limit the run did not make: xcbench.selftest.confirm_setups), then runs
`xcbench confirm` at its level with ``--test`` names: the **right** name must come out
confirmed, and each **wrong** name (one a run could plausibly have given there) must not. Each
test is a check of the self-test (expected "confirmed", or "not confirmed": refuted,
inconclusive, proportion checked or not testable here), with the experiment's figures
(predicted, measured, the line asked, the bounds, the pairs) as its cause.

A right name not confirmed because the case's own cause was not made (the relieved limit did not
bind in the changed arms, or arms ended not steady: confirm_output.measured_as_asked says so) is
run once more, as a capped scenario whose quota did not bind is; the second outcome stands.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from xcbench.backends.base import backend_class
from xcbench.ceph.cluster import Cluster
from xcbench.matrix import load_matrix
from xcbench.run.hooks import RunHooks
from xcbench.selftest import storage_io
from xcbench.selftest.capping import BASELINE, options, run_concluded
from xcbench.selftest.confirm import confirm_run
from xcbench.selftest.confirm_setups import Made, SiteHooks
from xcbench.selftest.judging import cell_ids, roles_short, run_verdicts
from xcbench.selftest.scenarios import CELLS, NOT_CONFIRMED, Check, Sizes, host_cores
from xcbench.system.cgroups import CpuGroups

RIGHT_PAIRS = 3  # a right name's pairs: t(0.95, 2) = 2.92 (two pairs' t(1) = 6.31 asks a spread
# of the pairs' ratios a busy box rarely gives); a wrong name gets the pairs confirm sizes itself
Log = Callable[[str], None]


@dataclass(frozen=True)
class Test:
    """One ``confirm --test NAME`` of a case: ``right``: it must be confirmed (else must not);
    ``experiment``: confirm's --experiment; ``quick``: in the quick variant (a case none of
    whose tests is marked runs them all); ``cell``: the case's cell it is asked at (default:
    its first)."""
    name: str
    right: bool
    experiment: str | None = None
    quick: bool = False
    cell: str | None = None


@dataclass(frozen=True)
class Case:
    """A run with a known cause, made and kept by ``setup(cluster, tag, uncapped)`` (a context
    manager yielding confirm_setups.Made: figures, the device counter, the driver's quota) and
    tested by ``tests``. ``doc(sizes, name, uncapped)``: its matrix; ``uncapped``: the cells of an
    uncapped run made first to derive the setup's limits from (None: none needed)."""
    name: str
    what: str
    cells: tuple[str, ...]
    level: Callable[[int], int]  # the level confirmed, from the host's cores
    doc: Callable[..., dict[str, Any]]
    setup: Callable[..., Any]
    tests: tuple[Test, ...]
    uncapped: tuple[str, ...] | None = None
    driver: Callable[[int], float] | None = None  # the driver's quota (cores), from the host's cores
    higher: Callable[[int], tuple[int, ...]] | None = None  # levels above the confirmed one the run needs
    quick: bool = False  # in the quick variant (the default suite's short one)
    requires: str | None = None  # "osd": the embedded cluster's OSDs; "blkio": and their device throttled


def sizes_for(quick: bool, levels: tuple[int, ...]) -> Sizes:
    """Short time-based levels: a replay ends once steady (~6 s quick); the longest is generous,
    so a relieved arm that ramps for longer on a busy box still ends steady (with 8 s two of
    three changed arms of the gateway's relief ended not steady: 14-32 % errors)."""
    if quick:
        return Sizes(levels=levels, file_size="16M", files=12, duration=("5s", "15s"), window="4s",
                     points=4, tolerance="15%")
    return Sizes(levels=levels, file_size="16M", files=16, duration=("8s", "25s"), window="6s",
                 points=4, tolerance="15%")


def _run(doc: dict[str, Any], name: str, cluster: Cluster | None, out: Path, workdir: Path,
         hooks: Any, probes: bool = True) -> tuple[Any, dict[str, str]]:
    """The run as `xcbench run` makes it (``probes``: its fio probes and iperf3 baseline; an
    uncapped run made only to derive limits from has neither), and its cells' ids by key."""
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    matrix = load_matrix(path, cluster) if cluster is not None else load_matrix(path)
    opts = options(out, name, hooks=hooks or RunHooks(), probes=probes, baseline=probes,
                   **({"extra": {"baseline": dict(BASELINE)}} if probes else {}))
    return run_concluded(matrix, cluster, opts), cell_ids(matrix)


def why_not(case: Case, cluster: Cluster | None) -> str | None:
    """Why the case cannot run here (None: it can)."""
    if any(backend_class(CELLS[k].backend).needs_cluster for k in case.cells) and cluster is None:
        return "its cells need the Ceph cluster"
    if case.requires in ("osd", "blkio") and not getattr(cluster, "embedded", False):
        return "it holds the OSDs under limits: the embedded mini cluster's (a --ceph-conf cluster runs them elsewhere)"
    return storage_io.why_not(cluster) if case.requires == "blkio" else None


def _check(case: Case, test: Test, key: str, cid: str, level: int, ev: dict[str, Any],
           verdict: str, x: dict[str, Any]) -> Check:
    expected = ("confirmed",) if test.right else NOT_CONFIRMED
    ok = x["outcome"] in expected
    said = f"--test {test.name}" + (f" --experiment {test.experiment!r}" if test.experiment else "")
    cause = {k: x.get(k) for k in ("experiment_name", "what", "predicted", "ratio", "minimum", "low", "high",
                                   "pairs", "confirms", "rivals", "separates", "why")}
    cause.update(test=test.name, right=test.right, outcome=x["outcome"], ok=ok,
                 runs=[{k: r.get(k) for k in ("pair", "arm", "bytes_per_s", "rel_se", "steady", "role")}
                       for r in x.get("runs") or ()])
    note = (f"{'right' if test.right else 'wrong'} name {test.name} ({'confirmed' if test.right else 'not confirmed'} "
            f"expected); the run said {verdict}")
    return Check(case.name, key, cid, level, expected, x["outcome"], f"{said}: {x.get('why')}", ok,
                 note=note, roles=roles_short(ev), evidence=ev, cause=cause)


def _premise_failed(x: dict[str, Any]) -> bool:
    why = str(x.get("why") or "")
    return x["outcome"] != "confirmed" and ("did not bind" in why or "not steady" in why)


def run_case(case: Case, cluster: Cluster | None, *, quick: bool = False, out: Path = Path("results"),
             workdir: Path | None = None, stamp: str | None = None, log: Log = print) -> dict[str, Any]:
    """Make the case's run, confirm each of its tests there; {"checks", "runs", "seconds", "figures"}."""
    stamp = stamp or time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    workdir = workdir or out / f"selftest-{stamp}"
    workdir.mkdir(parents=True, exist_ok=True)
    n = host_cores()
    level = case.level(n)
    # the short variant: a case's tests marked quick (all of them where none is)
    tests = [t for t in case.tests if t.quick or not quick or not any(u.quick for u in case.tests)]
    result: dict[str, Any] = {"checks": [], "runs": {}, "seconds": {}, "figures": {}, "retried": []}
    why = why_not(case, cluster)
    if why:  # "not run", with the reason: fails the self-test unless --allow-missing names it
        result["checks"] = [Check(case.name, t.cell or case.cells[0], "-", level, ("confirmed",) if t.right
                                  else NOT_CONFIRMED, "not run", why, False) for t in tests]
        return result
    t0 = time.monotonic()
    uncapped: dict[tuple[str, int], dict[str, Any]] = {}
    if case.uncapped:
        name = f"selftest-{stamp}-{case.name}-uncapped"
        log(f"selftest: {case.name}: uncapped run of {', '.join(case.uncapped)} at c={level}")
        doc = case.doc(sizes_for(quick, (level,)), name, None, case.uncapped)
        run, ids = _run(doc, name, cluster, out, workdir, None, probes=False)
        result["runs"][f"{case.name}-uncapped"] = str(run.path)
        uncapped = {(k, lv): v for (cid, lv), v in run_verdicts(run).items() for k, i in ids.items() if i == cid}
    tag = f"selftest{os.getpid()}-{case.name}"
    name = f"selftest-{stamp}-{case.name}"
    with contextlib.ExitStack() as stack:
        made: Made = stack.enter_context(case.setup(cluster, tag, uncapped))
        groups = None
        if case.driver is not None:
            groups = stack.enter_context(CpuGroups(None, run=f"{tag}-driver"))
        site = SiteHooks(made, case.driver(n) if case.driver else None, groups)
        sizes = sizes_for(quick, tuple(sorted({level, *(case.higher(n) if case.higher else ())})))
        log(f"selftest: {case.name}: {case.what} ({made.figures or 'nothing derived'}); c={list(sizes.levels)}")
        run, keys = _run(case.doc(sizes, name, uncapped, case.cells), name, cluster, out, workdir, site)
        result["runs"][case.name] = str(run.path)
        result["figures"][case.name] = dict(made.figures)
        got = run_verdicts(run)
        for test in tests:
            key = test.cell or case.cells[0]
            cid = keys.get(key)
            v = got.get((cid, level)) if cid else None
            if v is None or cid is None:
                why = {c: (r.error or r.status) for c, r in run.cells.items()}.get(cid or "", "no such cell")
                result["checks"].append(Check(case.name, key, cid or "-", level, ("confirmed",) if test.right
                                              else NOT_CONFIRMED, "missing", f"no verdict at c={level}: {why}",
                                              False))
                continue
            for attempt in (1, 2):
                x = _confirm(run, cid, level, test, cluster, site, log)
                if not (test.right and _premise_failed(x)) or attempt == 2:
                    break
                log(f"selftest: {case.name}: --test {test.name}: the case's cause was not made in its "
                    f"arms ({x.get('why')}): once more")
                result["retried"].append({"scenario": case.name, "test": test.name, "why": x.get("why")})
            result["checks"].append(_check(case, test, key, cid, level, v["evidence"], v["verdict"], x))
    result["seconds"][case.name] = round(time.monotonic() - t0, 1)
    return result


def _confirm(run: Any, cid: str, level: int, test: Test, cluster: Cluster | None, site: SiteHooks,
             log: Log) -> dict[str, Any]:
    got = confirm_run(run.path, cluster, cell=cid, level=level, test=(test.name,),
                      pairs=RIGHT_PAIRS if test.right else None, experiment=test.experiment,
                      site=lambda _cell: site, log=log)
    (x,) = got["confirmations"]
    return json.loads(json.dumps(x, default=str))
