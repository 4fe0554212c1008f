"""Run the known-answer scenarios on the real chain and compare each verdict with its answer.

    checks = run_selftest(cluster, names=["gateway", "host-cpu"], quick=True, out=Path("results"))

The uncapped run comes first (host-cpu, ec-overhead, and the CPU each role uses uncapped);
each capped scenario then runs its cells again with one role under a CPU quota made with
xcbench.system.cgroups: ``xcb-selftest<pid>-<scenario>-<role>``, created when the cell's gateway is
up and removed when the cell ends, however it ends (a failed cell, Ctrl-C, exit: the groups'
context manager, and their registry for a sweep after a kill -9).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from xcbench.analysis.verdicts.experiment import judge
from xcbench.ceph.cluster import Cluster
from xcbench.ceph.mini import MiniCluster
from xcbench.errors import XcbError
from xcbench.figures.units import parse_size
from xcbench.matrix import load_matrix
from xcbench.run.runner import Runner, RunOptions, run_matrix
from xcbench.selftest import intervene, storage_io
from xcbench.selftest.cause import compare
from xcbench.selftest.scenarios import (
    CELLS,
    DECOY,
    FULL,
    QUICK,
    SCENARIOS,
    Check,
    Scenario,
    expectation,
    host_cores,
    ident,
    matrix_yaml,
)
from xcbench.system.blkio import IoGroups
from xcbench.system.cgroups import CpuGroups, detect, sweep_stale
from xcbench.telemetry.role_processes import fuse_pids

FRACTION = 0.5  # a capped role gets this share of the least CPU it used uncapped
TELEMETRY = "host:0.5,roles:0.5,gateway,ceph"
# iperf3 on loopback: a few points, in the write direction only: every self-test campaign pushes,
# and a write point is held against the write direction's baseline (RunData.network_for)
BASELINE = {"streams": (1, 4), "seconds": 2, "directions": ("write",)}
Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class Cap:
    """What a capped run caps: ``role`` of each cell in ``cores`` (cell id -> cores)."""
    role: str
    cores: dict[str, float]
    groups: Any  # xcbench.system.cgroups.CpuGroups
    cluster_pids: Callable[[], dict[str, list[int]]] | None = None  # the mini cluster's daemons
    applied: dict[str, dict[str, Any]] = field(default_factory=dict)  # cell id -> what was capped
    io: str | None = None  # "bps" | "iops": a blkio write throttle on ``dev`` instead of a quota
    dev: str | None = None
    io_groups: Any = None  # xcbench.system.blkio.IoGroups
    device: dict[str, dict[int, dict[str, float]]] = field(default_factory=dict)  # cell -> level -> writes/s


class CappingRunner(Runner):
    """A Runner that puts one role of each cell under a CPU quota once its gateway is up (just
    before telemetry starts) and removes the quota when the cell ends, however it ends."""

    cap: Cap

    def _telemetry(self, cell, target, gateway, listener):
        cores = self.cap.cores.get(cell.id)
        if cores is not None:
            self._apply(cell.id, cores, gateway, target)
        return super()._telemetry(cell, target, gateway, listener)

    def _apply(self, cell_id: str, cores: float, gateway: Any, target: Any = None) -> None:
        role = self.cap.role
        pids = []
        for r in role.split("+"):  # "gateway+client": both roles in one group (a shared quota)
            if r == "gateway":
                pids += list(gateway.pids)
            elif r == "client":
                pids += [os.getpid()]  # every thread: the campaign's clients, telemetry
            elif r == "mount":  # the gateway's ceph-fuse, where the cell has one
                info = getattr(target, "info", None) or {}
                if info.get("mount") == "fuse" and info.get("mountpoint"):
                    pids += fuse_pids(info["mountpoint"], getattr(self.cluster, "state_dir", None))()
            else:  # osd
                pids += (self.cap.cluster_pids() if self.cap.cluster_pids else {}).get(r, [])
        if not pids:
            raise XcbError(f"selftest: no {role} process to cap in cell {cell_id}")
        if self.cap.io:  # the role's disk writes, throttled on its device
            kw = {"write_bps": int(cores)} if self.cap.io == "bps" else {"write_iops": max(1, int(cores))}
            io = self.cap.io_groups.create(f"{role}-{cell_id[:8]}", self.cap.dev, **kw)
            self.cap.applied[cell_id] = {"role": role, "io": self.cap.io, "limit": cores,
                                         "group": str(io.path), "pids": pids, "io_group": io}
            for pid in pids:
                io.add(pid)
            return
        g = self.cap.groups.create(f"{role.replace('+', '-')}-{cell_id[:8]}", cores)
        self.cap.applied[cell_id] = {"role": role, "cores": cores, "group": str(g.path), "pids": pids}
        for pid in pids:
            g.add(pid)

    def _device_counter(self, cell):
        """The OSDs' blkio group's writes to their device: exact (only the OSDs are in it)."""
        io = self.cap.applied.get(cell.id, {}).get("io_group")
        return io.written if io is not None else None

    def _campaign(self, cell, gateway, level, repeat):
        """A throttled device's writes/s over the level (blkio counters before and after)."""
        io = self.cap.applied.get(cell.id, {}).get("io_group")
        if io is None:
            return super()._campaign(cell, gateway, level, repeat)
        t0, (n0, b0) = time.monotonic(), io.written()
        try:
            return super()._campaign(cell, gateway, level, repeat)
        finally:
            dt = max(1e-3, time.monotonic() - t0)
            n1, b1 = io.written()
            self.cap.device.setdefault(cell.id, {})[level] = {
                "iops": (n1 - n0) / dt, "Bps": (b1 - b0) / dt, "seconds": round(dt, 1)}

    def _cell(self, cell) -> None:
        try:
            super()._cell(cell)
        finally:
            if self.cap.io_groups is not None:
                self.cap.io_groups.close()
            left = self.cap.groups.close()  # the role's processes go back; the group goes
            if left:
                self.run.warn(f"selftest: cgroups not removed: {', '.join(left)}")


def capping_runner(cap: Cap) -> type[CappingRunner]:
    return type("SelftestRunner", (CappingRunner,), {"cap": cap})


def _run(matrix_doc: dict, name: str, cluster: Cluster | None, out: Path, workdir: Path,
         runner: Callable[..., Runner] | None = None) -> Any:
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(matrix_doc, sort_keys=False))
    matrix = load_matrix(path, cluster)
    # as `xcbench run` has it: the fio probe of each cell and the iperf3 baseline (a few points)
    opts = RunOptions(store=out, name=name, baseline=True, probes=True, report=False,
                      progress=False, telemetry=TELEMETRY, extra={"baseline": dict(BASELINE)})
    return run_matrix(matrix, cluster, opts, view=None, runner=runner), matrix


def _verdicts(run: Any) -> dict[tuple[str, int], dict[str, Any]]:
    df = run.table("verdicts")
    out = {}
    for r in df.to_dict("records"):
        ev = json.loads(r.get("evidence") or "{}")
        out[(r["cell_id"], int(r["concurrency"]))] = {"verdict": r["verdict"], "reason": r["reason"],
                                                      "evidence": ev}
    return out


def _cell_ids(matrix: Any) -> dict[str, str]:
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


def _failed(run: Any) -> dict[str, str]:
    return {cid: (c.error or c.status) for cid, c in run.cells.items() if c.status not in ("complete", "degraded")}


def _roles_short(ev: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for r, x in (ev.get("roles") or {}).items():
        out[r] = {k: x.get(k) for k in ("cpu", "limit", "source", "use", "throttled", "saturated")}
    return out


def _judge(s: Scenario, key: str, cell_id: str, levels: tuple[int, ...], verdicts: dict,
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
                            note=note, cap=cap, roles=_roles_short(ev), evidence=ev, cause=cause))
    return checks


def _uncapped(verdicts: dict, cell_id: str, levels: tuple[int, ...]) -> dict[int, dict[str, Any]]:
    return {lv: verdicts[(cell_id, lv)]["evidence"] for lv in levels if (cell_id, lv) in verdicts}


def _most_use(verdicts: dict, cell_id: str, role: str, levels: tuple[int, ...]) -> float | None:
    """The most mean CPU (cores) ``role`` used over the levels of the uncapped cell."""
    vals = []
    for level in levels:
        got = verdicts.get((cell_id, level))
        x = ((got or {}).get("evidence", {}).get("roles") or {}).get(role) or {}
        if isinstance(x.get("cpu"), (int, float)) and math.isfinite(x["cpu"]):
            vals.append(float(x["cpu"]))
    return max(vals) if vals else None


def _least_use(verdicts: dict, cell_id: str, role: str, levels: tuple[int, ...]) -> float | None:
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
    if not runnable:
        result["ok"] = verdict_ok(result)
        return result
    if any(s.cap == "osd" for s in runnable):
        _mini_pids(cluster)  # the OSDs must be this host's: say so before any run
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
    run, matrix = _run(matrix_yaml([CELLS[k] for k in keys], sizes, f"selftest-{stamp}-uncapped"),
                       f"selftest-{stamp}-uncapped", cluster, out, workdir)
    result["runs"]["uncapped"] = str(run.path)
    result["seconds"]["uncapped"] = round(time.monotonic() - t0, 1)
    base = _verdicts(run)
    ids, failed = _cell_ids(matrix), _failed(run)
    for s in runnable:
        if s.cap is None:
            for key in cells_of(s, quick):
                result["checks"] += _judge(s, key, ids[key], sizes.levels, base, failed)
    twins = [s for s in runnable if s.intervene == "ec-twin"]
    if twins:
        t0 = time.monotonic()
        result["runs"]["ec-twin"] = _ec_twin(twins, result["checks"], base, ids, sizes, quick, cluster,
                                             out, workdir, f"selftest-{stamp}-ec-twin", log)
        result["seconds"]["ec-twin"] = round(time.monotonic() - t0, 1)
    half = [s for s in runnable if s.intervene == "half-host"]
    if half:
        t0 = time.monotonic()
        result["runs"]["half-host"] = _half_host(half, result["checks"], base, ids, sizes, quick, cluster,
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
                lim = storage_io.limit_of(s, list(_uncapped(base, ids[key], sizes.levels).values()), fraction)
                if lim is None:
                    result["checks"] += [Check(s.name, key, ids[key], lv, s.expected, "not run",
                                               "the uncapped run measured no steady rate or pool op/s "
                                               f"to derive a throttle from ({failed.get(ids[key], 'no figures')})",
                                               False) for lv in sizes.levels]
                else:
                    cores[key] = lim
                continue
            use = _least_use(base, ids[key], s.cap, sizes.levels)
            if use is None or use <= 0:
                result["checks"] += [Check(s.name, key, ids[key], lv, s.expected, "not run",
                                           f"the uncapped run measured no {s.cap} CPU to cap "
                                           f"({failed.get(ids[key], 'no role telemetry')})", False)
                                     for lv in sizes.levels]
                continue
            if s.decoy:  # generous: DECOY x the most it used at any level
                use = _most_use(base, ids[key], s.cap, sizes.levels) or use
                cores[key] = round(DECOY * use, 3)
            else:
                cores[key] = max(0.01, round(fraction * use, 3))
        if s.io and cores:  # one device, one throttle: the least over the scenario's cells
            cores = dict.fromkeys(cores, min(cores.values()))
        if not cores:
            continue
        for attempt in (1, 2):
            name = f"selftest-{stamp}-{s.name}" + ("" if attempt == 1 else "-again")
            unit = {"bps": " B/s of device writes", "iops": " device write IO/s"}.get(s.io or "", " cores")
            log(f"selftest: {s.name}: {s.cap} capped at "
                + ", ".join(f"{k} {c:g}{unit}" for k, c in cores.items()))
            t0 = time.monotonic()
            checks, path = _capped_run(s, cores, name, ids, base, sizes, fraction, cluster, out, workdir,
                                       also=also)
            for x in (s, *(r for r, _ in also)):
                result["runs"][x.name if attempt == 1 else f"{x.name}-again"] = path
            result["seconds"][s.name if attempt == 1 else f"{s.name}-again"] = \
                round(time.monotonic() - t0, 1)
            if also:
                result.setdefault("shared_runs", {}).update({r.name: s.name for r, _ in also})
            unbound = [] if s.decoy else [c for c in checks if not c.ok and _unbound(c)]
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


def verdict_ok(result: dict[str, Any]) -> bool:
    """Every check right, and nothing "not run" that ``allow_missing`` does not name (a
    scenario that could not run, or a level it could not make)."""
    allow = set(result.get("allow_missing") or ())
    missing = [n["scenario"] for n in result.get("not_run", []) if n["scenario"] not in allow]
    bad = [c for c in result["checks"] if not c.ok
           and not (c.verdict == "not run" and c.scenario in allow)]
    return not missing and not bad and bool(result["checks"] or result.get("not_run"))


UNBOUND = 0.05  # throttled in fewer CFS periods than this: the kernel says the quota never bound


def _unbound(c: Check) -> bool:
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


def _capped_run(s: Scenario, cores: dict[str, float], name: str, ids: dict[str, str], base: dict,
                sizes: Any, fraction: float, cluster: Cluster | None, out: Path, workdir: Path,
                also: Sequence[tuple[Scenario, tuple[str, ...]]] = ()) -> tuple[list[Check], str]:
    """One run of the scenario's cells with its role capped, judged level by level; ``also``:
    other scenarios (and their cells, a part of these) judged on the same run."""
    assert s.cap is not None
    doc = matrix_yaml([CELLS[k] for k in cores], sizes, name)
    mtx_path = workdir / f"{name}.yaml"
    mtx_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cap_ids = _cell_ids(load_matrix(mtx_path, cluster))
    mini_pids = _mini_pids(cluster) if s.cap == "osd" else None
    with CpuGroups(None, run=f"selftest{os.getpid()}-{s.name}") as groups, \
            IoGroups(None, run=f"selftest{os.getpid()}-{s.name}") as io_groups:
        capped = Cap(s.cap, {cap_ids[k]: c for k, c in cores.items()}, groups, mini_pids,
                     io=s.io, dev=storage_io.device(cluster) if s.io else None, io_groups=io_groups)
        run, _ = _run(doc, name, cluster, out, workdir, runner=capping_runner(capped))
    got, failed = _verdicts(run), _failed(run)
    checks: list[Check] = []
    for key, c in cores.items():
        if s.io:  # what the device did against its throttle, level by level (the expectation)
            for (cid, lv), v in got.items():
                if cid == cap_ids[key]:
                    storage_io.add_device(v["evidence"], s, c, capped.device.get(cid, {}).get(lv))
    if s.io:
        storage_io.add_twins(got)
    for sc, key in [(s, k) for k in cores] + [(r, k) for r, keys in also for k in keys if k in cores]:
        c = cores[key]
        use = _least_use(base, ids[key], s.cap, sizes.levels)
        cap = {"role": s.cap, "cores": c, "fraction": fraction, "uncapped_least_cores": use,
               **{k: v for k, v in capped.applied.get(cap_ids[key], {}).items() if k == "group"}}
        if s.io:
            cap.update(io=s.io, limit=c, uncapped_least=storage_io.least_of(
                s, list(_uncapped(base, ids[key], sizes.levels).values())))
        if s.decoy:
            cap.update(fraction=DECOY, uncapped_most_cores=_most_use(base, ids[key], s.cap, sizes.levels))
        checks += _judge(sc, key, cap_ids[key], sizes.levels, got, failed, cap,
                         _uncapped(base, ids[key], sizes.levels))
    return checks, str(run.path)


def _half_host(scenarios: list[Scenario], checks: list[Check], base: dict, ids: dict[str, str],
               sizes: Any, quick: bool,
               cluster: Cluster | None, out: Path, workdir: Path, name: str, log: Log) -> str:
    """The scenarios' cells run again with every role under one quota at half the host; each
    of their checks then holds only with the rate fallen in proportion (intervene.apply)."""
    keys = sorted({k for s in scenarios for k in cells_of(s, quick)}, key=list(CELLS).index)
    doc = matrix_yaml([CELLS[k] for k in keys], sizes, name)
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cap_ids = _cell_ids(load_matrix(path, cluster))
    embedded = bool(getattr(cluster, "embedded", False))
    names, host = intervene.roles(embedded), float(host_cores())
    by_key = {k: intervene.quota(host, intervene.used([(base.get((ids[k], lv)) or {}).get("evidence")
                                                      for lv in sizes.levels], names)) for k in keys}
    log(f"selftest: host-cpu by intervention: {names} under one quota of "
        + ", ".join(f"{k} {c:g}" for k, c in by_key.items()) + " cores")
    with CpuGroups(None, run=f"selftest{os.getpid()}-half-host") as groups:
        cap = Cap(names, {cap_ids[k]: c for k, c in by_key.items()}, groups,
                  _mini_pids(cluster) if embedded else None)
        run, _ = _run(doc, name, cluster, out, workdir, runner=capping_runner(cap))
    got = _verdicts(run)
    scen = {s.name for s in scenarios}
    for c in checks:
        if c.scenario in scen and c.cell in cap_ids:
            capped = (got.get((cap_ids[c.cell], c.level)) or {}).get("evidence")
            intervene.apply(c, capped, (base.get((c.cell_id, c.level)) or {}).get("evidence"),
                            by_key[c.cell], host)
    return str(run.path)


def _ec_twin(scenarios: list[Scenario], checks: list[Check], base: dict, ids: dict[str, str], sizes: Any,
             quick: bool, cluster: Cluster | None, out: Path, workdir: Path, name: str, log: Log) -> str:
    """The EC cells and their twins run again, EC first (the uncapped run had the twin first):
    A-B-B-A; each EC check's right verdicts then come from that experiment (intervene.ec_expect),
    not from the rule's own EC ratio."""
    keys = [k for s in scenarios for k in cells_of(s, quick)]
    order = list(dict.fromkeys([*keys, *(w for k in keys for w in CELLS[k].with_)]))
    log(f"selftest: EC by intervention: {', '.join(order)} again, EC first")
    run, matrix = _run(matrix_yaml([CELLS[k] for k in order], sizes, name), name, cluster, out, workdir)
    again, now = _verdicts(run), _cell_ids(matrix)
    names = {s.name: s for s in scenarios}
    for c in checks:
        s = names.get(c.scenario)
        if s is None or not CELLS[c.cell].with_:
            continue
        twin = CELLS[c.cell].with_[0]
        ev = (base.get((c.cell_id, c.level)) or {}).get("evidence") or {}
        pairs = intervene.ec_pairs(base, {(ids[k], lv): v for (cid, lv), v in again.items()
                                          for k in (c.cell, twin) if now.get(k) == cid},
                                   c.cell_id, ids[twin], c.level)
        pred = intervene.ec_prediction(ev, (base.get((ids[twin], c.level)) or {}).get("evidence"))
        res: dict[str, Any] = judge("tighten", pred, pairs) if pred else \
            {"outcome": "inconclusive", "why": "no EC cost predicted", "ratio": None, "high": None}
        c.expected, note = intervene.ec_expect(res, ev)
        extra_ok, extra_note = s.extra(ev) if s.extra else (True, "")
        c.ok = c.verdict in c.expected and extra_ok
        c.note = "; ".join(x for x in (note, extra_note) if x)
        c.cause = {"role": "pool", "intervention": "EC against its twin, interleaved", "predicted": pred,
                   "ratio": res.get("ratio"), "outcome": res["outcome"], "ok": c.ok, "note": c.note,
                   "slowdown": 1 / res["ratio"] if res.get("ratio") else None,
                   "slowdown_low": 1 / res["high"] if res.get("high") else None, "at_quota": True}
    return str(run.path)


def _mini_pids(cluster: Cluster | None) -> Callable[[], dict[str, list[int]]]:
    if cluster is not None and cluster.embedded and cluster.state_dir is not None:
        return MiniCluster(cluster.state_dir).role_pids
    raise XcbError("selftest: the OSD scenario caps the embedded mini cluster's OSDs "
                   "(a cluster given by --ceph-conf runs its OSDs elsewhere)")
