"""Bottleneck attribution: for each cell and concurrency level, which layer capped the chain.

Figures (all from the same run unless other runs are passed as references):

  R      the chain's steady rate (analysis.steady RULE; mean over repeats)          B/s
  G      tmpfs-gateway ceiling: the steady rate of a tmpfs cell with the same mode and origins
         at the same concurrency (same file size preferred)                           B/s
  F      fio write-bandwidth ceiling of the same cell (same layout and pool)         B/s
  I      fio write-IOPS capacity of the same cell (best write job)                   op/s
  ops    the pool's client write op/s, mean over the steady window (ceph sampler)    op/s
  N      network baseline: best iperf3 result of the run / 8                         B/s
  cpu    gateway cores busy over the steady window / usable cores of the host        0..1
  E      R / R_rep: the same layout on the replicated pool, same level (EC cells)
  rho    measured raw/logical bytes of the pool over the cell (positive increments of
         pool.bytes_used / pool.stored), quoted against the expected (k+m)/k or size
  roles  per role (client = the xcbench driver, gateway = xrootd+cmsd, mount = ceph-fuse, osd,
         mds, probe = fio): cores busy, its CPU limit (cgroup quota, cpuset or host cores; an
         unreadable limit is *unknown*, never the host) and the limit's source (analysis.roles)

Utilisations: u_net = R/N, u_iops = ops/I, u_gw = max(R/G, cpu), u_bw = R/F. A layer is
*at its limit* when its utilisation is >= NEAR (0.85); a role is *saturated* when its cores
busy are >= NEAR of its own CPU limit, or its CFS quota group was throttled in >= half of the
periods it ran (a busy host can keep a capped role's average below NEAR of its quota). Rules,
first match wins:

  1. network            u_net >= NEAR
  2. role-limit         the saturated role with the highest cores/limit decides: gateway or
                        ceph-fuse -> gateway (tmpfs cells too); client -> client ("client
                        (xcbench driver)", its CPU, and the advice: more client hosts, or FTS);
                        OSDs or MDS -> storage-iops or storage-bandwidth (the higher of the
                        probe utilisations; without probes, client ops < 1 MiB -> IOPS)
  3. storage-iops       u_iops >= NEAR
  4. ec-overhead        EC cell, replicated twin measured, E <= NEAR (EC costs >= 15 %),
                        and the gateway is not at its limit
  5. host-cpu           role telemetry present, host CPU busy >= NEAR of its cores and no role at
                        its own limit: the roles share one host and its CPU runs out; the reason
                        names each role's share of the busy cores (separate them)
  6. gateway            u_gw >= NEAR and u_gw >= u_bw (the nearer ceiling is the gateway's);
                        R/G counts only when the tmpfs cell itself stopped scaling (its best
                        higher level is < 1.25 x G): matching an unsaturated tmpfs rate only
                        says both are limited by the concurrency, see rule 8; nor when the
                        tmpfs cell's gateway ran under another CPU limit than this cell's
  7. storage-bandwidth  u_bw >= NEAR
  8. client             the client left transfer slots idle while files were queued in
                        >= 25 % of the buckets (steady.starved_frac), or the tmpfs twin did,
                        or the same cell ran >= 1.25x faster at a higher concurrency level
                        (more transfers in flight would go faster: FTS's concurrency is the knob)
  A storage probe the chain beats by more than 15 % (u > OVER) is no ceiling of the chain's
  path (e.g. a direct-I/O fio probe vs the gateway's buffered writes through ceph-fuse): it is
  left out of rules 3, 6 and 7 and the reason of the verdict says so.

  9. inconclusive       nothing within 15 % of a ceiling, or no ceiling measured; the reason
                        says which ceilings were not measured and how busy the host CPU was
                        (client, gateway and OSDs share it on a one-box test).

Each verdict row: cell_id, concurrency, verdict, reason (one sentence quoting the figures),
evidence (JSON: every figure, the utilisations, the thresholds, each role's cpu/limit/source
under "roles" ({} and "roles_note" for runs without role telemetry) and the source of each
figure). Rules 2 and 5 need role telemetry; older runs get rules 1, 3, 4 and 6-9 as before.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeGuard

import numpy as np

from xcbench.analysis import roles as _roles
from xcbench.analysis.dataset import RunData
from xcbench.analysis.render import fmt_num
from xcbench.store import RunDir

VERDICTS = ("gateway", "storage-bandwidth", "storage-iops", "ec-overhead", "client", "network",
            "host-cpu", "inconclusive")
NEAR = 0.85
OVER = 1.15  # the chain beats a storage probe by more than this: the probe is not its ceiling
STARVED = 0.25
SCALING = 1.25
GIB = float(1 << 30)


def _ok(v: Any) -> TypeGuard[float]:
    """A finite number (None, NaN and non-numbers are not)."""
    return v is not None and isinstance(v, (int, float, np.floating, np.integer)) and math.isfinite(v)


def gib(v: float) -> str:
    return f"{fmt_num(v / GIB)} GiB/s"


def pct(v: float) -> str:
    return f"{v * 100:.0f} %"


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


def _figures(rd: RunData, cell, p: dict, others: tuple[RunData, ...]) -> dict[str, Any]:
    cid, conc = cell["cell_id"], p["concurrency"]
    ev: dict[str, Any] = {"rate": p["rate"], "concurrency": conc, "mode": cell["mode"],
                          "backend": cell["backend"],
                          "repeats": p["repeats"], "steady_method": p["method"],
                          "starved_frac": p["starved_frac"], "cores": rd.cores}
    src: dict[str, Any] = {"rate": p["source"]}
    win = p["windows"]
    s = rd.samples
    cores_busy = s.window_mean(cid, "gateway_cores", win)
    ev["gateway_cores"] = cores_busy
    ev["cpu"] = cores_busy / rd.cores if _ok(cores_busy) and _ok(rd.cores) else math.nan
    if _ok(cores_busy):
        src["gateway_cores"] = {"run": rd.run_id, "table": "samples",
                                "query": s.query(cid, "gateway_cores", None, win),
                                "agg": "sum per wall, then mean"}
    ev["host_busy"] = s.window_mean(cid, "host_busy", win)
    ev["roles"] = _roles.role_usage(s, cid, win, NEAR)
    if ev["roles"]:
        src["roles"] = _roles.source_note(rd.run_id, cid, win)
    else:
        ev["roles_note"] = "no role telemetry in this run (role_cpu_cores)"
    ev["network_bps"], src["network"] = rd.network
    if cell["backend"] != "tmpfs":
        tw = _twin_gateway(cell, conc, [rd, *others])
        if tw:
            trd, t, tp = tw
            higher = [r for c, r in trd.levels_rate(t["cell_id"]) if c > conc and _ok(r)]
            ev.update(gateway_ceiling=tp["rate"], gateway_cell=t["cell_id"], gateway_run=trd.run_id,
                      gateway_starved=tp["starved_frac"],
                      gateway_growth=max(higher) / tp["rate"] if higher and tp["rate"] else math.nan)
            tgw = _roles.role_usage(trd.samples, t["cell_id"], tp["windows"], NEAR).get("gateway")
            if tgw:
                ev.update(gateway_twin_limit=tgw["limit"], gateway_twin_limit_source=tgw["source"])
            src["gateway_ceiling"] = tp["source"]
        pc = rd.probe_ceilings
        if cid in pc.index:
            row = pc.loc[cid]
            ev.update(fio_bw=row["write_bw"], fio_bw_job=row["write_bw_job"],
                      fio_iops=row["write_iops"], fio_iops_job=row["write_iops_job"])
            src["fio_bw"], src["fio_iops"] = row["bw_source"], row["iops_source"]
        pool = cell["pool"]
        ev["pool"] = pool
        ev["pool_write_ops"] = s.window_mean(cid, "pool_write_ops", win, pool)
        if _ok(ev["pool_write_ops"]):
            src["pool_write_ops"] = {"run": rd.run_id, "table": "samples", "agg": "mean",
                                     "query": s.query(cid, "pool_write_ops", pool, win)}
        raw, stored = s.positive_increase(cid, "pool_raw", pool), s.positive_increase(cid, "pool_stored", pool)
        ev["raw_per_logical"] = raw / stored if _ok(raw) and _ok(stored) and stored > 0 else math.nan
        if _ok(ev["raw_per_logical"]):
            src["raw_per_logical"] = {"run": rd.run_id, "table": "samples", "column": "value",
                                      "query": s.query(cid, "pool_raw", pool),
                                      "query_stored": s.query(cid, "pool_stored", pool),
                                      "agg": "sum of positive steps (per wall) of query / of query_stored"}
        ev["raw_expected"] = cell["raw_ratio_expected"]
        if cell["pool_kind"] == "erasure":
            tw = _twin_replicated(cell, conc, rd)
            if tw:
                t, tp = tw
                ev.update(rep_cell=t["cell_id"], rep_pool=t["pool_label"], rep_rate=tp["rate"],
                          ec_ratio=p["rate"] / tp["rate"] if tp["rate"] else math.nan)
                src["rep_rate"] = tp["source"]
    levels = rd.levels_rate(cid)
    above = [(c, r) for c, r in levels if c > conc and _ok(r)]
    if above:
        c_best, r_best = max(above, key=lambda x: x[1])
        ev.update(best_higher_level=c_best, best_higher_rate=r_best)
    ev["sources"] = src
    return ev


def _util(ev: dict[str, Any]) -> dict[str, float]:
    r = ev["rate"]
    u = {}
    if _ok(ev.get("network_bps")) and ev["network_bps"] > 0:
        u["network"] = r / ev["network_bps"]
    if _ok(ev.get("pool_write_ops")) and _ok(ev.get("fio_iops")) and ev["fio_iops"] > 0:
        u["storage-iops"] = ev["pool_write_ops"] / ev["fio_iops"]
    # the tmpfs rate is a gateway *ceiling* only if it stopped growing with concurrency
    ceiling = ev.get("gateway_ceiling") if not (ev.get("gateway_growth", 0) >= SCALING) else None
    own = (ev.get("roles") or {}).get("gateway", {}).get("limit")
    twin = ev.get("gateway_twin_limit")
    if _ok(own) and _ok(twin) and abs(own - twin) > 0.01 * max(own, twin):
        ceiling = None  # the tmpfs gateway ran under another CPU limit: not this gateway's ceiling
        ev["gateway_ceiling_note"] = (f"tmpfs gateway limit {fmt_num(twin)} cores "
                                      f"({ev.get('gateway_twin_limit_source')}) vs {fmt_num(own)} here")
    gw = [x for x in (r / ceiling if _ok(ceiling) and ceiling > 0 else None, ev.get("cpu")) if _ok(x)]
    if gw:
        u["gateway"] = max(gw)
    if _ok(ev.get("fio_bw")) and ev["fio_bw"] > 0:
        u["storage-bandwidth"] = r / ev["fio_bw"]
    return u


def decide(ev: dict[str, Any]) -> tuple[str, str]:
    """(verdict, reason) for one point's figures (the rules of the module docstring)."""
    r, conc, mode = ev["rate"], ev["concurrency"], ev["mode"]
    u = _util(ev)
    ev["utilisation"] = u
    beaten = {k: v for k, v in u.items() if k in ("storage-bandwidth", "storage-iops") and v > OVER}
    u = {k: v for k, v in u.items() if k not in beaten}
    ev["not_ceilings"] = sorted(beaten)
    ev["thresholds"] = {"near": NEAR, "starved": STARVED, "scaling": SCALING}
    at = f"at {fmt_num(conc)} transfers ({mode})"
    cpu_txt = (f"gateway CPU {fmt_num(ev['gateway_cores'])} of {fmt_num(ev['cores'])} cores "
               f"({pct(ev['cpu'])})") if _ok(ev.get("cpu")) else None
    host_txt = f"host CPU {pct(ev['host_busy'])} busy" if _ok(ev.get("host_busy")) else None

    if u.get("network", 0) >= NEAR:
        return "network", (f"The chain moves {gib(r)} ({fmt_num(r * 8 / 1e9)} Gb/s) {at}, "
                           f"{pct(u['network'])} of the iperf3 baseline "
                           f"({fmt_num(ev['network_bps'] * 8 / 1e9)} Gb/s).")
    limited = _roles.at_limit_verdict(ev, at, gib(r))
    if limited:
        return limited
    if u.get("storage-iops", 0) >= NEAR:
        return "storage-iops", (f"The pool {ev['pool']} sustains {fmt_num(ev['pool_write_ops'])} "
                                f"write op/s {at}, {pct(u['storage-iops'])} of the "
                                f"{fmt_num(ev['fio_iops'])} IOPS fio measured ({ev['fio_iops_job']}), "
                                f"while the chain moves only {gib(r)}.")
    ugw, ubw = u.get("gateway", 0), u.get("storage-bandwidth", 0)
    if _ok(ev.get("ec_ratio")) and ev["ec_ratio"] <= NEAR and ugw < NEAR:
        rho = (f"; measured raw/logical {fmt_num(ev['raw_per_logical'])} "
               f"(expected {fmt_num(ev['raw_expected'])})") if _ok(ev.get("raw_per_logical")) else ""
        tail = f"; {host_txt}" if host_txt and ev.get("roles") else ""
        return "ec-overhead", (f"On the EC pool the chain moves {gib(r)} {at}, "
                               f"{pct(ev['ec_ratio'])} of the same layout on {ev['rep_pool']} "
                               f"({gib(ev['rep_rate'])}){rho}{tail}.")
    host = _roles.host_cpu_verdict(ev, at, gib(r), NEAR)
    if host:
        return host
    if ugw >= NEAR and ugw >= ubw:
        parts = []
        if _ok(ev.get("gateway_ceiling")):
            parts.append(f"{pct(r / ev['gateway_ceiling'])} of the tmpfs-gateway ceiling "
                         f"({gib(ev['gateway_ceiling'])})")
        if cpu_txt:
            parts.append(cpu_txt)
        if _ok(ev.get("fio_bw")):
            parts.append(f"fio allows {gib(ev['fio_bw'])}")
        return "gateway", f"The chain moves {gib(r)} {at}: " + "; ".join(parts) + "."
    if ubw >= NEAR:
        g = (f", while the tmpfs gateway does {gib(ev['gateway_ceiling'])}"
             if _ok(ev.get("gateway_ceiling")) else "")
        return "storage-bandwidth", (f"The chain moves {gib(r)} {at}, {pct(ubw)} of the fio write "
                                     f"ceiling of this layout and pool ({gib(ev['fio_bw'])}){g}.")
    starved = ev.get("starved_frac")
    if _ok(starved) and starved >= STARVED:
        return "client", (f"The client left transfer slots idle while files were queued in "
                          f"{pct(starved)} of the seconds {at}; the chain moved {gib(r)}.")
    if _ok(ev.get("gateway_starved")) and ev["gateway_starved"] >= STARVED:
        return "client", (f"Even into tmpfs the client left slots idle {pct(ev['gateway_starved'])} "
                          f"of the time {at}; the chain moved {gib(r)}.")
    if _ok(ev.get("best_higher_rate")) and ev["best_higher_rate"] >= SCALING * r:
        return "client", (f"The rate still grows with concurrency: {gib(r)} {at} but "
                          f"{gib(ev['best_higher_rate'])} at {fmt_num(ev['best_higher_level'])}, "
                          f"so more transfers in flight would go faster.")
    names = {"network": "iperf3", "gateway": "gateway", "storage-bandwidth": "fio bandwidth",
             "storage-iops": "fio IOPS"}
    missing = [what for what, ok in (
        ("tmpfs-gateway ceiling at this level", _ok(ev.get("gateway_ceiling")) or ev.get("backend") == "tmpfs"),
        ("fio probe", _ok(ev.get("fio_bw")) or _ok(ev.get("fio_iops")) or ev.get("backend") == "tmpfs"),
        ("iperf3 baseline", _ok(ev.get("network_bps")))) if not ok]
    if u:
        ceil = ", ".join(f"{names[k]} {pct(v)}" for k, v in sorted(u.items(), key=lambda x: -x[1]))
        why = f"below every measured ceiling ({ceil}); none within {pct(1 - NEAR)}"
    else:
        why = "not comparable with any ceiling"
    if missing:
        why += "; not measured: " + ", ".join(missing)
    if beaten:
        why += "; the chain beats " + ", ".join(f"{names[k]} ({pct(v)})" for k, v in beaten.items()) \
            + ", so that probe is no ceiling of this path (direct I/O vs the gateway's buffered writes?)"
    if ev.get("gateway_ceiling_note"):
        why += f"; the tmpfs cell is no gateway ceiling here ({ev['gateway_ceiling_note']})"
    tail = f"; {host_txt}" if host_txt else ""
    if ev.get("roles") and _roles.summary(ev["roles"]):
        tail += f"; role CPU/limit in cores: {_roles.summary(ev['roles'])}"
    return "inconclusive", f"The chain moves {gib(r)} {at}, {why}{tail}."


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
        if not _ok(p["rate"]):
            rows.append({"cell_id": p["cell_id"], "concurrency": p["concurrency"],
                         "verdict": "inconclusive", "reason": "No steady rate was measured.",
                         "evidence": "{}"})
            continue
        ev = _figures(rd, cell, p, others)
        verdict, reason = decide(ev)
        rows.append({"cell_id": p["cell_id"], "concurrency": p["concurrency"], "verdict": verdict,
                     "reason": reason, "evidence": json.dumps(_jsonable(ev), sort_keys=True)})
    return rows


def attribute(run: RunDir | RunData, others: tuple = ()) -> list[dict[str, Any]]:
    """VERDICT rows (xcbench.records.VERDICT) of a run, one per cell and concurrency level.
    ``others``: runs whose tmpfs cells may serve as gateway ceilings when this run has none."""
    rd = run if isinstance(run, RunData) else RunData(run)
    return attribute_data(rd, tuple(o if isinstance(o, RunData) else RunData(o) for o in others))


def write_verdicts(run: RunDir, others: tuple = ()) -> list[dict[str, Any]]:
    """Attribute a run and store the rows as its ``verdicts`` table (Parquet if the run is
    finalized, else records/verdicts.jsonl for finalize() to convert). Verdicts already stored
    for the cells attributed now are replaced (a resumed run); those of other cells are kept."""
    import pandas as pd

    from xcbench.records import VERDICT
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
    return rows


def verdicts_of(rd: RunData, others: tuple[RunData, ...] = ()):
    """A run's verdicts: the stored table if the run wrote one, else attributed now."""
    import pandas as pd

    from xcbench.records import VERDICT
    if len(rd.stored_verdicts) and not others:
        return rd.stored_verdicts
    return pd.DataFrame(attribute_data(rd, others), columns=list(VERDICT))
