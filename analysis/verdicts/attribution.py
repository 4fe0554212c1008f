"""Bottleneck attribution: for each cell, concurrency level and direction, which layer capped the chain.

Figures (all from the same run unless other runs are passed as references):

  R      the chain's steady rate (figures.steady RULE; mean over repeats)          B/s
  G      tmpfs-gateway ceiling: the steady rate of a tmpfs cell with the same mode and origins
         at the same concurrency (same file size preferred)                           B/s
  F      fio bandwidth ceiling of the same cell (same layout and pool), in the
         point's direction: the write jobs for writes, the read jobs for reads; a write
         point of a run with level probes: its own level's probe on the gateway's path,
         with that probe's error (analysis.verdicts.probes.apply_level)                       B/s
  I      fio IOPS capacity of the same cell (best job of the point's direction)      op/s
  ops    the pool's client op/s of the point's direction, mean over the steady window op/s
  N      network baseline: best iperf3 result of the run in the point's direction
         (reads: iperf3 -R, gateway -> client, if measured; else the best of all) / 8 B/s
  cpu    gateway cores busy over the steady window / usable cores of the host        0..1
  E      R / R_rep: the same layout on the replicated pool, same level and direction (EC cells)
  A      reads: bytes the OSDs read / bytes the campaign read (analysis.verdicts.amplification), next
         to the replicated twin's; "not measured" without the OSD counters
  rho    measured raw/logical bytes of the pool over the cell (positive increments of
         pool.bytes_used / pool.stored), quoted against the expected (k+m)/k or size
  roles  per role (client = the xcbench driver, gateway = xrootd+cmsd, mount = ceph-fuse, osd,
         mds, probe = fio): cores busy, its CPU limit (cgroup quota, cpuset or host cores; an
         unreadable limit is *unknown*, never the host) and the limit's source (analysis.verdicts.roles)

A point is (cell, level, direction): a read campaign gives read points, a mixed one a write and
a read point (analysis.verdicts.directions); each is held against the ceilings of its own direction, G
being the tmpfs cell's rate in that direction. The gateway's and the client's CPU limits count
as for writes. Runs from before reads have write points only, attributed as before.

Utilisations: u_net = R/N, u_iops = ops/I, u_gw = max(R/G, cpu), u_bw = R/F. A layer is
*at its limit* when its utilisation is >= NEAR (0.85); a role is *saturated* when its cores
busy are >= NEAR of its own CPU limit, or its CFS quota group was throttled in >= half of the
periods it ran (a busy host can keep a capped role's average below NEAR of its quota), or its
busiest thread runs >= NEAR of one core, or under a quota of its own it waits on the run queue
longer than it runs (analysis.verdicts.roles). Rules,
first match wins:

  1. network            a client host's shaped link moves >= NEAR of its shaped rate
                        (analysis.links: link bytes over the steady window vs link.limit_bytes;
                        evidence "links", "link_use"), or u_net >= NEAR
  2. role-limit         the saturated role with the highest cores/limit decides: gateway or
                        ceph-fuse -> gateway (tmpfs cells too); client -> client ("client
                        (xcbench driver)", its CPU, and the advice: more client hosts, or FTS);
                        OSDs or MDS -> storage-iops or storage-bandwidth (the higher of the
                        probe utilisations; without probes, client ops < 1 MiB -> IOPS)
  3. storage-iops       u_iops >= NEAR (u_iops counts only while the chain's mean op,
                        R / ops, is below 1 MiB: a 4 KiB-op IOPS ceiling does not hold large ops).
                        Where the runner counted the storage device's write IOs during the IOPS
                        probe (I_dev) and the level (D), u_iops = D / I_dev: like with like, as a
                        chain op (XrdCeph lock/xattr ops, a 256 KiB write) costs the device
                        another number of IOs than fio's 4 KiB write, so op counts do not compare;
                        and only where the device's bytes/s are farther from the most any write
                        job made it do (D_B / B_dev < u_iops): else the device is held by bytes
  4. ec-overhead        EC cell, replicated twin measured, E <= NEAR (EC costs >= 15 %),
                        and the gateway is not at its limit
  4b. storage-bandwidth u_bw >= NEAR and u_bw >= u_gw: a storage ceiling measured on this
                        host and reached names the cap more closely than a busy host CPU,
                        which other processes may fill (rule 7 checked before rule 5)
  5. host-cpu           role telemetry present, host CPU busy >= NEAR of its cores and no role at
                        its own limit: the roles share one host and its CPU runs out; the reason
                        names each role's share of the busy cores (separate them). Where waiting
                        was sampled (analysis.verdicts.saturation: CPU pressure, the roles' run-queue
                        wait), runnable tasks must also wait; and below NEAR busy the rule holds
                        when the chain's own threads wait and the scaling efficiency between
                        this level and its neighbour is surely below 0.5
  6. gateway            u_gw >= NEAR and u_gw >= u_bw (the nearer ceiling is the gateway's);
                        R/G counts only when the tmpfs cell itself stopped scaling (its best
                        higher level is < 1.25 x G): matching an unsaturated tmpfs rate only
                        says both are limited by the concurrency, see rule 8; nor when the
                        tmpfs cell's gateway ran under another CPU limit than this cell's
  7. storage-bandwidth  u_bw >= NEAR
  8. client             the driver's host at its limit: the client left transfer slots idle
                        while files were queued in >= 25 % of the buckets (steady.starved_frac),
                        or the tmpfs twin did (a driver at its CPU quota is rule 2)
  8b. concurrency       the same cell surely ran >= 1.25x faster at a higher concurrency level:
                        more transfers in flight would go faster (FTS's concurrency is the knob;
                        not the client host's size). "Surely": the one-sided 95 % lower bound of
                        the rates' ratio is >= 1.25, each rate's relative standard error being
                        the larger of its repeats' spread (cv/sqrt(repeats)) and its steady
                        window's spread (cv/sqrt(seconds x repeats), figures.stats). A growth
                        that reaches 1.25x only within that noise is named in the inconclusive
                        reason, not called: two runs of the same matrix would flip on it; it is
                        a borderline candidate (below)
  A storage probe the chain beats by more than 15 % (u > OVER) is no ceiling of the chain's
  path (e.g. a direct-I/O fio probe vs the gateway's buffered writes through ceph-fuse): it is
  left out of rules 3, 6 and 7 and the reason of the verdict says so.

  Borderline (analysis.verdicts.borderline): each figure compared with a threshold (u_net, u_iops, E,
  host CPU busy, u_gw, u_bw, the growth) has an interval from its own measured noise (one-sided
  95 %: a rate's error, both rates' for R/G and E, the window samples' for CPU busy and op/s).
  The rules decide as above; a rule the cascade looked at (up to the verdict's) whose interval
  straddles its threshold is a borderline candidate: evidence "borderline" true and
  "borderline_candidates" (rule, figure, value, threshold, interval), and the reason ends
  "borderline: <figure> ... within its noise of <threshold> (...: <rule>?)". When the figure
  that decided is the borderline one, the verdict the rest of the cascade reaches is a
  candidate too ("on its other side the verdict would be <rule>"). Two runs whose figures fall
  on either side of a threshold name the same cause, one as its verdict and the other as its
  candidate. A run with a between-run term (analysis.verdicts.between_run) adds it to the rates', host
  CPU's and fio ceilings' errors. No threshold moves; an unknown noise counts as 0.

  Co-limits: every other rule that holds for the point is named after the verdict, in the
  rules' order (the cascade run again without the verdict's rule, and so on: evidence
  "co_limits", the reason's "co-limits" clause, shown as "host-cpu + ec-overhead"), so two runs
  that both see two causes name both, whichever comes first.

  9. inconclusive       nothing within 15 % of a ceiling, or no ceiling measured; the reason
                        says which ceilings were not measured and how busy the host CPU was
                        (client, gateway and OSDs share it on a one-box test).

Storage hosts (analysis.verdicts.storagehosts, from the prometheus device; after rule 1, before the
others, never over a saturated client link or gateway/client role): storage-network (an OSD
host's NIC >= NEAR of its link speed), storage-disk (an OSD disk busy >= NEAR), storage-host-cpu
(an OSD host of its own at >= NEAR of its cores); evidence "storage_hosts" and the EC fan-out.

Each verdict row: cell_id, concurrency, direction, verdict, reason (one sentence quoting the figures),
evidence (JSON: every figure, the utilisations, the thresholds, each role's cpu/limit/source
under "roles" ({} and "roles_note" for runs without role telemetry) and the source of each
figure). Rules 2 and 5 need role telemetry; older runs get rules 1, 3, 4 and 6-9 as before.
"""

from __future__ import annotations

import json
import math
from typing import Any, cast

import numpy as np

from xcbench.analysis.verdicts import amplification as _amp
from xcbench.analysis.verdicts import between_run as _between
from xcbench.analysis.verdicts import borderline as _bl
from xcbench.analysis.verdicts import link_use, storagehosts
from xcbench.analysis.verdicts import probes as _probes
from xcbench.analysis.verdicts import roles as _roles
from xcbench.analysis.verdicts import saturation as _sat
from xcbench.analysis.verdicts.rules import (  # noqa: F401 - the public names of the rules live here too
    GIB,
    NEAR,
    OVER,
    SCALING,
    STARVED,
    VERDICTS,
    _ok,
    decide,
    gbps,
    pct,
    with_co_limits,
)
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.figures import stats as _stats
from xcbench.store.rundir import RunDir
from xcbench.store.tables import VERDICT


def _twin_gateway(cell, conc, runs: list[RunData]):
    """(RunData, cell row, point) of the best-matching tmpfs cell at this level, or None."""
    best, score_best = None, -1
    for rd in runs:
        c = rd.cells
        cand = c[(c["backend"] == "tmpfs") & (c["mode"] == cell["mode"]) & (c["origins"] == cell["origins"])]
        for _, t in cand.iterrows():
            p = rd.point(t["cell_id"], conc)
            if p is None or not _ok(p["rate"]):
                continue
            score = (2 if t["file_size"] == cell["file_size"] else 0) + (t["gateway"] == cell["gateway"]) \
                + (2 if rd is runs[0] else 0)
            if score > score_best:
                best, score_best = (rd, t, p), score
    return best


REP_SIZE = 3  # what a site compares EC against: replicated, three copies


def _twin_replicated(cell, conc, rd: RunData):
    """(cell row, point) of the replicated cell with the same layout at this level: the size-3
    pool first (a site's replicated pool), then the other sizes by pool name."""
    c = rd.cells
    cand = c[(c["backend"] == cell["backend"]) & (c["pool_kind"] == "replicated")
             & (c["stripe_unit"] == cell["stripe_unit"]) & (c["stripe_count"] == cell["stripe_count"])
             & (c["object_size"] == cell["object_size"]) & (c["mode"] == cell["mode"])
             & (c["origins"] == cell["origins"])]
    cand = cand.assign(_not3=cand["raw_ratio_expected"] != REP_SIZE)
    for _, t in cand.sort_values(["_not3", "pool"], kind="stable").iterrows():
        p = rd.point(t["cell_id"], conc)
        if p is not None and _ok(p["rate"]):
            return t, p
    return None


def _ceilings(rd: RunData, cid: str, direction: str, ev: dict[str, Any], src: dict[str, Any]) -> None:
    """fio bandwidth/IOPS ceilings of the point's direction into ``ev`` (F, I)."""
    pc = rd.probe_ceilings
    if cid not in pc.index:
        return
    row = pc.loc[cid]
    if direction == "read":
        if not (_ok(row["read_bw"]) or _ok(row["read_iops"])):
            ev["fio_note"] = "no fio read probe for this cell"
            return
        ev.update(fio_bw=row["read_bw"], fio_bw_job=row["read_bw_job"],
                  fio_iops=row["read_iops"], fio_iops_job=row["read_iops_job"])
        src["fio_bw"], src["fio_iops"] = row["read_bw_source"], row["read_iops_source"]
        return
    ev.update(fio_bw=row["write_bw"], fio_bw_job=row["write_bw_job"],
              fio_iops=row["write_iops"], fio_iops_job=row["write_iops_job"])
    src["fio_bw"], src["fio_iops"] = row["bw_source"], row["iops_source"]
    if _ok(row.get("write_device_iops")):  # the IOPS ceiling in device IOs (analysis.verdicts.rules)
        ev["fio_device_iops"] = row["write_device_iops"]
        src["fio_device_iops"] = row["device_iops_source"]
    if _ok(row.get("write_device_Bps")):  # and the device's bytes ceiling as the probe reached it
        ev["fio_device_Bps"] = row["write_device_Bps"]
        src["fio_device_Bps"] = row["device_Bps_source"]


def _figures(rd: RunData, cell, p: dict, others: tuple[RunData, ...]) -> dict[str, Any]:
    cid, conc = cell["cell_id"], p["concurrency"]
    d = p.get("direction") or "write"
    view = rd.view(d)
    ev: dict[str, Any] = {"rate": p["rate"], "concurrency": conc, "mode": cell["mode"],
                          "backend": cell["backend"], "direction": d,
                          "repeats": p["repeats"], "steady_method": p["method"],
                          "starved_frac": p["starved_frac"], "cores": rd.cores}
    src: dict[str, Any] = {"rate": p["source"]}
    win = p["windows"]
    s = rd.samples
    between = _between.of(rd.manifest)  # measured between fresh clusters (analysis.verdicts.between_run)
    if between:
        ev["between_run"] = between
    cores_busy = s.window_mean(cid, "gateway_cores", win)
    ev["gateway_cores"] = cores_busy
    ev["cpu"] = cores_busy / rd.cores if _ok(cores_busy) and _ok(rd.cores) else math.nan
    if _ok(cores_busy):
        src["gateway_cores"] = {"run": rd.run_id, "table": "samples",
                                "query": s.query(cid, "gateway_cores", None, win),
                                "agg": "sum per wall, then mean"}
    ev["host_busy"] = s.window_mean(cid, "host_busy", win)
    # the noise of the window's figures (analysis.verdicts.borderline)
    ev["host_busy_rel_se"] = s.window_rel_se(cid, "host_busy", win)
    ev["gateway_cores_rel_se"] = s.window_rel_se(cid, "gateway_cores", win)
    ev["roles"] = _roles.role_usage(s, cid, win, NEAR)
    if ev["roles"]:
        src["roles"] = _roles.source_note(rd.run_id, cid, win)
    else:
        ev["roles_note"] = "no role telemetry in this run (role_cpu_cores)"
    ev["network_bps"], src["network"] = rd.network_for(d)
    if cell["backend"] != "tmpfs":
        # views are RunData in one direction (analysis.verdicts.directions.DirectionView)
        tw = _twin_gateway(cell, conc, [cast(RunData, v) for v in (view, *(o.view(d) for o in others))])
        if tw:
            trd, t, tp = tw
            higher = [r for c, r in trd.levels_rate(t["cell_id"]) if c > conc and _ok(r)]
            ev.update(gateway_ceiling=tp["rate"], gateway_ceiling_rel_se=_rel_se(tp, ev),
                      gateway_cell=t["cell_id"], gateway_run=trd.run_id,
                      gateway_starved=tp["starved_frac"],
                      gateway_growth=max(higher) / tp["rate"] if higher and tp["rate"] else math.nan)
            tgw = _roles.role_usage(trd.samples, t["cell_id"], tp["windows"], NEAR).get("gateway")
            if tgw:
                ev.update(gateway_twin_limit=tgw["limit"], gateway_twin_limit_source=tgw["source"])
            src["gateway_ceiling"] = tp["source"]
        _ceilings(rd, cid, d, ev, src)
        if d != "read":  # this level's own probe, where the run has one (analysis.verdicts.probes)
            _probes.apply_level(rd, cid, conc, ev, src)
        pool = cell["pool"]
        ev["pool"] = pool
        ops = f"pool_{'read' if d == 'read' else 'write'}_ops"
        ev[ops] = s.window_mean(cid, ops, win, pool)
        ev[ops + "_rel_se"] = s.window_rel_se(cid, ops, win, pool)
        if _ok(ev[ops]):
            src[ops] = {"run": rd.run_id, "table": "samples", "agg": "mean",
                        "query": s.query(cid, ops, pool, win)}
        if d == "read":
            _read_amplification(rd, cell, conc, ev, src)
        else:
            dev, dev_b, dsrc = _probes.level_device(rd.campaigns, rd.run_id, cid, conc)
            if _ok(dev):  # the level's ops counted at the device, as the probe's were
                ev["device_write_iops"], src["device_write_iops"] = dev, dsrc
            if _ok(dev_b):
                ev["device_write_Bps"], src["device_write_Bps"] = dev_b, dsrc
            raw, stored = s.positive_increase(cid, "pool_raw", pool), s.positive_increase(cid, "pool_stored", pool)
            ev["raw_per_logical"] = raw / stored if _ok(raw) and _ok(stored) and stored > 0 else math.nan
            if _ok(ev["raw_per_logical"]):
                src["raw_per_logical"] = {"run": rd.run_id, "table": "samples", "column": "value",
                                          "query": s.query(cid, "pool_raw", pool),
                                          "query_stored": s.query(cid, "pool_stored", pool),
                                          "agg": "sum of positive steps (per wall) of query / of query_stored"}
            ev["raw_expected"] = cell["raw_ratio_expected"]
        if cell["pool_kind"] == "erasure":
            tw = _twin_replicated(cell, conc, cast(RunData, view))
            if tw:
                t, tp = tw
                ev.update(rep_cell=t["cell_id"], rep_pool=t["pool_label"], rep_rate=tp["rate"],
                          rep_rate_rel_se=_rel_se(tp, ev),
                          ec_ratio=p["rate"] / tp["rate"] if tp["rate"] else math.nan)
                src["rep_rate"] = tp["source"]
                if d == "read":
                    rep = _amp.read_amplification(rd, t["cell_id"], conc, t["pool"])
                    ev.update(rep_read_amplification=rep["amplification"],
                              rep_pool_read_per_logical=rep["pool_per_logical"])
                    if rep.get("source") and _ok(rep["amplification"]):
                        src["rep_read_amplification"] = rep["source"]
    _growth(view, cid, conc, p, ev)
    _sat.add_evidence(view, s, cid, conc, win, ev, lambda q: _rel_se(q, ev))  # host-cpu's waits
    ev["sources"] = src
    return ev


def _rel_se(p: dict[str, Any], ev: dict[str, Any]) -> float:
    """A level's relative rate error: its own, and the run's between-run term if it has one."""
    own = _stats.rate_rel_se(*(float(p.get(k, math.nan)) for k in
                               ("repeats", "rate_cv_repeats", "window_cv", "window_n")))
    extra = (ev.get("between_run") or {}).get("rate")
    return _bl.combined(own, extra) if extra is not None else own


def _growth(view, cid: str, conc: float, p: dict[str, Any], ev: dict[str, Any]) -> None:
    """The higher level whose rate is surely the most above this one's: the largest lower
    confidence bound of rate(higher) / rate(here), from each level's own noise (stats)."""
    se = _rel_se(p, ev)
    bounds = [(c, r, _stats.ratio_lower_bound(p["rate"], se, r, _rel_se(view.point(cid, c) or {}, ev)))
              for c, r in view.levels_rate(cid) if c > conc and _ok(r)]
    ev["rate_rel_se"] = se
    # one repeat: only the window's spread is known, not the drift between levels (see repeats)
    ev["rate_noise"] = ("repeats and steady window" if float(p.get("repeats") or 1) >= 2
                        else "steady window, one repeat")
    if (ev.get("between_run") or {}).get("rate") is not None:
        ev["rate_noise"] += f", between runs {ev['between_run']['rate'] * 100:.1f} %"
    if bounds:  # no bound (this rate is 0): the fastest higher level
        c, r, low = max(bounds, key=lambda b: (b[2] if _ok(b[2]) else -math.inf, b[1]))
        ev.update(best_higher_level=c, best_higher_rate=r, best_higher_growth_low=low)


def _read_amplification(rd: RunData, cell, conc, ev: dict[str, Any], src: dict[str, Any]) -> None:
    """A: OSD bytes read / logical bytes read (and the pool's client read bytes / logical)."""
    a = _amp.read_amplification(rd, cell["cell_id"], conc, cell["pool"])
    ev.update(read_logical=a["logical"], read_osd_bytes=a["osd_bytes"], read_osds=a["osds"],
              read_amplification=a["amplification"], pool_read_per_logical=a["pool_per_logical"],
              read_shards_expected=_shards(cell))
    if a.get("source") and (_ok(a["amplification"]) or _ok(a["pool_per_logical"])):
        src["read_amplification"] = a["source"]


def _shards(cell) -> float:
    """Shards (objects) a full read touches: k for an EC pool, 1 for a replicated one."""
    if cell["pool_kind"] != "erasure":
        return 1.0
    label = str(cell["pool_label"] or "")  # "ec<k>+<m>"
    try:
        return float(label[2:].split("+")[0])
    except ValueError:
        return math.nan


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(v) else None
    return v


def attribute_data(rd: RunData, others: tuple[RunData, ...] = ()) -> list[dict[str, Any]]:
    rows = []
    cells = rd.cells
    for p in rd.points.to_dict("records"):
        if p["cell_id"] not in cells.index:
            continue
        cell = cells.loc[p["cell_id"]]
        d = p.get("direction") or "write"
        if not _ok(p["rate"]):
            rows.append({"cell_id": p["cell_id"], "concurrency": p["concurrency"],
                         "verdict": "inconclusive", "reason": "No steady rate was measured.",
                         "evidence": "{}", "direction": d})
            continue
        ev = _figures(rd, cell, p, others)
        link_use.add_evidence(rd, p["cell_id"], p["windows"], ev)  # shaped client links (rule 1)
        ruled = decide(ev)
        verdict, reason = link_use.decide_links(ev, *ruled, NEAR)
        storagehosts.add_evidence(rd, cell, p["windows"], ev)  # OSD hosts via Prometheus
        verdict, reason = storagehosts.decide_storage(ev, verdict, reason, NEAR)
        if verdict != ruled[0]:
            ev["borderline"] = False  # a saturated link or storage host overrode the rules
            ev.pop("borderline_candidates", None)
            # what the rules named still holds: a co-limit of the overriding verdict
            ev["co_limits"] = [v for v in (ruled[0], *(ev.get("co_limits") or ()))
                               if v not in (verdict, "inconclusive")]
            reason = with_co_limits(reason, ev["co_limits"])
        rows.append({"cell_id": p["cell_id"], "concurrency": p["concurrency"], "verdict": verdict,
                     "reason": reason, "evidence": json.dumps(_jsonable(ev), sort_keys=True),
                     "direction": d})
    return rows


def attribute(run: RunDir | RunData, others: tuple = ()) -> list[dict[str, Any]]:
    """VERDICT rows (xcbench.store.tables.VERDICT) of a run, one per cell and concurrency level.
    ``others``: runs whose tmpfs cells may serve as gateway ceilings when this run has none."""
    rd = run if isinstance(run, RunData) else RunData(run)
    return attribute_data(rd, tuple(o if isinstance(o, RunData) else RunData(o) for o in others))


def write_verdicts(run: RunDir, others: tuple = ()) -> list[dict[str, Any]]:
    """Attribute a run and store the rows as its ``verdicts`` table (Parquet if the run is
    finalized, else records/verdicts.jsonl for finalize() to convert). Verdicts already stored
    for the cells attributed now are replaced (a resumed run); those of other cells are kept."""
    import pandas as pd

    rows = attribute(run, others)
    done = {r["cell_id"] for r in rows}
    old = run.table("verdicts")
    keep: list[dict[str, Any]] = []
    if len(old):
        old = old[~old["cell_id"].isin(done)]
        keep = old.astype(object).where(old.notna(), None).to_dict("records")
    if run.status != "running":  # finalized: the Parquet tables exist
        pd.DataFrame(keep + rows, columns=list(VERDICT)).to_parquet(run.path / "verdicts.parquet",
                                                                    index=False)
    else:
        run.replace_table("verdicts", keep + rows)
    storagehosts.store_views_findings(run, rows)  # one box: the two CPU views disagree
    return rows


def verdicts_of(rd: RunData, others: tuple[RunData, ...] = ()):
    """A run's verdicts: the stored table if the run wrote one, else attributed now."""
    import pandas as pd

    if len(rd.stored_verdicts) and not others:
        v = rd.stored_verdicts.copy()
        v["direction"] = v["direction"].astype(object).where(v["direction"].notna(), "write")
        return v  # verdicts stored before reads have no direction: writes
    return pd.DataFrame(attribute_data(rd, others), columns=list(VERDICT))
