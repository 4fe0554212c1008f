"""Run the known-answer scenarios on the real chain and compare each verdict with its answer.

    checks = run_selftest(cluster, names=["gateway", "host-cpu"], quick=True, out=Path("results"))

The uncapped run comes first (host-cpu, ec-overhead, and the CPU each role uses uncapped);
each capped scenario then runs its cells again with one role under a CPU quota (capping), and
the interventions run theirs (experiments); every level is judged by judging.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError
from xcbench.selftest import storage_io
from xcbench.selftest.capping import mini_pids, run_doc
from xcbench.selftest.experiments import Log, capped_run, ec_twin, half_host
from xcbench.selftest.judging import (
    cell_ids,
    could_use,
    failed_cells,
    judge_levels,
    least_use,
    quota_unbound,
    run_verdicts,
    uncapped_evidence,
    verdict_ok,
)
from xcbench.selftest.scenarios import (
    CELLS,
    DECOY,
    FULL,
    QUICK,
    SCENARIOS,
    Check,
    Scenario,
    host_cores,
    matrix_yaml,
)
from xcbench.system.cgroups import detect, sweep_stale

FRACTION = 0.5  # a capped role gets this share of the least CPU it used uncapped


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def plan(names: list[str] | None, quick: bool) -> list[Scenario]:
    chosen = names or list(SCENARIOS)
    unknown = [n for n in chosen if n not in SCENARIOS]
    if unknown:
        raise XcbError(f"selftest: --scenario {unknown[0]!r}: unknown (known: {', '.join(SCENARIOS)})")
    return [SCENARIOS[n] for n in chosen]


def cells_of(s: Scenario, quick: bool) -> tuple[str, ...]:
    return s.cells_of(quick)


def run_selftest(cluster: Cluster | None, *, names: list[str] | None = None, quick: bool = False,
                 out: Path = Path("results"), fraction: float = FRACTION,
                 allow_missing: tuple[str, ...] | list[str] = (),
                 log: Log = _stderr) -> dict[str, Any]:
    """Run the scenarios; return {"checks": [Check...], "not_run": [...], "runs": {...}, "ok", ...}.

    A scenario that cannot run here is "not run" with its reason, and the result is not ok
    unless ``allow_missing`` names it (so is a level a scenario could not make, e.g. no CPU to
    cap)."""
    scenarios = plan(names, quick)
    sizes = QUICK if quick else FULL  # sized from this host's cores (scenarios.sizes_for)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    result: dict[str, Any] = {"checks": [], "not_run": [], "runs": {}, "fraction": fraction,
                              "levels": list(sizes.levels), "quick": quick, "cores": host_cores(),
                              "level_rule": sizes.campaign(), "seconds": {},
                              "allow_missing": sorted(allow_missing)}
    runnable = [s for s in scenarios if s.needs is None]
    result["not_run"] = [{"scenario": s.name, "what": s.what, "needs": s.needs}
                         for s in scenarios if s.needs]
    if any(s.io for s in runnable):  # a disk-write throttle on the OSDs' device: can it be made?
        why_io = storage_io.why_not(cluster)
        if why_io:
            result["not_run"] += [{"scenario": s.name, "what": s.what, "needs": why_io}
                                  for s in runnable if s.io]
            runnable = [s for s in runnable if not s.io]
    if not runnable:
        result["ok"] = verdict_ok(result)
        return result
    own, runnable = ([s for s in runnable if s.own_run], [s for s in runnable if not s.own_run])
    for s in own:  # scenarios with runs of their own (network: emulated hosts)
        assert s.own_run is not None
        got = s.own_run(cluster, quick=quick, out=out, workdir=out / f"selftest-{stamp}",
                        stamp=stamp, log=log)
        result["checks"] += got["checks"]
        result["runs"].update(got["runs"])
        result["seconds"].update(got["seconds"])
        result.setdefault("figures", {}).update(got.get("figures") or {})
        if got.get("retried"):
            result["retried"] = result.get("retried", []) + got["retried"]
    if not runnable:
        result["ok"] = verdict_ok(result)
        return result
    if any(s.cap == "osd" for s in runnable):
        mini_pids(cluster)  # the OSDs must be this host's: say so before any run
    if any(s.cap for s in runnable):
        detect()  # no CPU-quota cgroups here: say so before any run
        for path in sweep_stale():
            log(f"selftest: removed a stale cgroup of an earlier run: {path}")
    # the uncapped run holds every cell a scenario needs: its own answer, and the calibration
    wanted = {k for s in runnable for k in cells_of(s, quick)}
    wanted |= {w for k in wanted for w in CELLS[k].with_}  # e.g. the EC cell's replicated twin
    keys = sorted(wanted, key=list(CELLS).index)
    workdir = out / f"selftest-{stamp}"
    workdir.mkdir(parents=True, exist_ok=True)
    log(f"selftest: uncapped run of {', '.join(keys)} at c={list(sizes.levels)}")
    t0 = time.monotonic()
    run, matrix = run_doc(matrix_yaml([CELLS[k] for k in keys], sizes, f"selftest-{stamp}-uncapped"),
                         f"selftest-{stamp}-uncapped", cluster, out, workdir)
    result["runs"]["uncapped"] = str(run.path)
    result["seconds"]["uncapped"] = round(time.monotonic() - t0, 1)
    base = run_verdicts(run)
    ids, failed = cell_ids(matrix), failed_cells(run)
    for s in runnable:
        if s.cap is None:
            for key in cells_of(s, quick):
                result["checks"] += judge_levels(s, key, ids[key], sizes.levels, base, failed)
    twins = [s for s in runnable if s.intervene == "ec-twin"]
    if twins:
        t0 = time.monotonic()
        result["runs"]["ec-twin"] = ec_twin(twins, result["checks"], base, ids, sizes, quick, cluster,
                                            out, workdir, f"selftest-{stamp}-ec-twin", log)
        result["seconds"]["ec-twin"] = round(time.monotonic() - t0, 1)
    half = [s for s in runnable if s.intervene == "half-host"]
    if half:
        t0 = time.monotonic()
        result["runs"]["half-host"] = half_host(half, result["checks"], base, ids, sizes, quick, cluster,
                                                out, workdir, f"selftest-{stamp}-half-host", log)
        result["seconds"]["half-host"] = round(time.monotonic() - t0, 1)
    riders = _riders(runnable, quick)
    for s in runnable:
        if s.cap is None or s.name in riders:
            continue
        keys_s = cells_of(s, quick)
        also = [(r, cells_of(r, quick)) for r in runnable if riders.get(r.name) == s.name]
        cores: dict[str, float] = {}
        for key in keys_s:
            if s.io:  # a throttle on the OSDs' device, from the cell's uncapped rate or op/s
                lim = storage_io.limit_of(s, list(uncapped_evidence(base, ids[key], sizes.levels).values()),
                                          fraction)
                if lim is None:
                    result["checks"] += [Check(s.name, key, ids[key], lv, s.expected, "not run",
                                               "the uncapped run measured no steady rate or pool op/s "
                                               f"to derive a throttle from ({failed.get(ids[key], 'no figures')})",
                                               False) for lv in sizes.levels]
                else:
                    cores[key] = lim
                continue
            use = least_use(base, ids[key], s.cap, sizes.levels)
            if use is None or use <= 0:
                result["checks"] += [Check(s.name, key, ids[key], lv, s.expected, "not run",
                                           f"the uncapped run measured no {s.cap} CPU to cap "
                                           f"({failed.get(ids[key], 'no role telemetry')})", False)
                                     for lv in sizes.levels]
                continue
            if s.decoy:  # generous: DECOY x the most it could have used at any level
                use = could_use(base, ids[key], s.cap, sizes.levels, float(host_cores()),
                                bool(getattr(cluster, "embedded", False))) or use
                cores[key] = round(DECOY * use, 3)
            else:
                cores[key] = max(0.01, round(fraction * use, 3))
        if s.io and cores:  # one device, one throttle: the least over the scenario's cells
            cores = dict.fromkeys(cores, min(cores.values()))
        if not cores:
            continue
        for attempt in (1, 2):
            name = f"selftest-{stamp}-{s.name}" + ("" if attempt == 1 else "-again")
            unit = {"bandwidth": " B/s of device writes", "iops": " device write IO/s"}.get(s.io or "", " cores")
            log(f"selftest: {s.name}: {s.cap} capped at "
                + ", ".join(f"{k} {c:g}{unit}" for k, c in cores.items()))
            t0 = time.monotonic()
            checks, path = capped_run(s, cores, name, ids, base, sizes, fraction, cluster, out, workdir,
                                      also=also, uncapped=run.path)
            for x in (s, *(r for r, _ in also)):
                result["runs"][x.name if attempt == 1 else f"{x.name}-again"] = path
            result["seconds"][s.name if attempt == 1 else f"{s.name}-again"] = \
                round(time.monotonic() - t0, 1)
            if also:
                result.setdefault("shared_runs", {}).update({r.name: s.name for r, _ in also})
            unbound = [] if s.decoy else [c for c in checks if not c.ok and quota_unbound(c)]
            if attempt == 2 or not unbound:
                break
            # the quota did not hold the role: other load on the host took the CPU first, so
            # the bottleneck was not made (not a verdict to judge); try once more
            log(f"selftest: {s.name}: the quota did not bind at "
                + ", ".join(f"{c.cell} c={c.level}" for c in unbound) + ": running it again")
            result["retried"] = result.get("retried", []) + [
                {"scenario": s.name, "checks": [(c.cell, c.level, c.verdict) for c in unbound]}]
        result["checks"] += checks
    result["ok"] = verdict_ok(result)
    return result


def _riders(runnable: list[Scenario], quick: bool) -> dict[str, str]:
    """Scenario -> the scenario whose capped run also judges it: a device-throttle scenario whose
    cells are a strict part of another's with the same cap (storage-bandwidth's replicated cell
    is ec-overhead's twin under the same bytes throttle, derived the same way: the least over
    the cells, so at most the rider's own). Its cells then run once, not twice."""
    out: dict[str, str] = {}
    for s in runnable:
        if not s.io or s.decoy:
            continue
        mine = set(cells_of(s, quick))
        for t in runnable:
            if t is not s and t.cap == s.cap and t.io == s.io and not t.decoy \
                    and mine < set(cells_of(t, quick)):
                out[s.name] = t.name
                break
    return out
