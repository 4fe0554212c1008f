"""Bottleneck attribution: for each cell, concurrency level and direction, which layer capped the chain.

The rules, their figures and thresholds are specified in verdicts.md beside this module
(docs/verdicts.md): what each figure is, the rules in their order (first match wins), the
borderline and co-limit semantics and what each verdict row holds. This module computes the
figures per point and applies analysis.verdicts.rules to them.
"""

from __future__ import annotations

import json
import math
from typing import Any, cast

import numpy as np

from xcbench.analysis.verdicts import amplification as _amp
from xcbench.analysis.verdicts import between_run as _between
from xcbench.analysis.verdicts import borderline as _bl
from xcbench.analysis.verdicts import link_use, node_use, storagehosts
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
    decide,
    gbps,
    opposed,
    pct,
    with_co_limits,
    with_conflicting,
)
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.figures import stats as _stats
from xcbench.figures.numbers import is_finite
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
            if p is None or not is_finite(p["rate"]):
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
        if p is not None and is_finite(p["rate"]):
            return t, p
    return None


def _ceilings(rd: RunData, cid: str, direction: str, ev: dict[str, Any], src: dict[str, Any]) -> None:
    """fio bandwidth/IOPS ceilings of the point's direction into ``ev`` (F, I)."""
    pc = rd.probe_ceilings
    if cid not in pc.index:
        return
    row = pc.loc[cid]
    if direction == "read":
        if not (is_finite(row["read_bw"]) or is_finite(row["read_iops"])):
            ev["fio_note"] = "no fio read probe for this cell"
            return
        ev.update(fio_bw=row["read_bw"], fio_bw_job=row["read_bw_job"],
                  fio_iops=row["read_iops"], fio_iops_job=row["read_iops_job"],
                  fio_iops_bs=row.get("read_iops_bs"))
        src["fio_bw"], src["fio_iops"] = row["read_bw_source"], row["read_iops_source"]
        return
    ev.update(fio_bw=row["write_bw"], fio_bw_job=row["write_bw_job"],
              fio_iops=row["write_iops"], fio_iops_job=row["write_iops_job"],
              fio_iops_bs=row.get("write_iops_bs"))
    src["fio_bw"], src["fio_iops"] = row["bw_source"], row["iops_source"]
    if is_finite(row.get("write_device_iops")):  # the IOPS ceiling in device IOs (analysis.verdicts.rules)
        ev["fio_device_iops"] = row["write_device_iops"]
        src["fio_device_iops"] = row["device_iops_source"]
    if is_finite(row.get("write_device_bytes_per_s")):  # and the device's bytes ceiling as the probe reached it
        ev["fio_device_bytes_per_s"] = row["write_device_bytes_per_s"]
        src["fio_device_bytes_per_s"] = row["device_bytes_per_s_source"]


def _figures(rd: RunData, cell, p: dict, others: tuple[RunData, ...]) -> dict[str, Any]:
    cid, conc = cell["cell_id"], p["concurrency"]
    d = p["direction"]
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
    ev["cpu"] = cores_busy / rd.cores if is_finite(cores_busy) and is_finite(rd.cores) else math.nan
    if is_finite(cores_busy):
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
    ev["network_bytes_per_s"], src["network"] = rd.network_for(d)
    if cell["backend"] != "tmpfs":
        # views are RunData in one direction (analysis.verdicts.directions.DirectionView)
        tw = _twin_gateway(cell, conc, [cast(RunData, v) for v in (view, *(o.view(d) for o in others))])
        if tw:
            trd, t, tp = tw
            higher = [r for c, r in trd.levels_rate(t["cell_id"]) if c > conc and is_finite(r)]
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
        if is_finite(ev[ops]):
            src[ops] = {"run": rd.run_id, "table": "samples", "agg": "mean",
                        "query": s.query(cid, ops, pool, win)}
        if d == "read":
            _read_amplification(rd, cell, conc, ev, src)
        else:
            dev, dev_b, dsrc = _probes.level_device(rd.campaigns, rd.run_id, cid, conc)
            if is_finite(dev):  # the level's ops counted at the device, as the probe's were
                ev["device_write_iops"], src["device_write_iops"] = dev, dsrc
            if is_finite(dev_b):
                ev["device_write_bytes_per_s"], src["device_write_bytes_per_s"] = dev_b, dsrc
            raw, stored = s.positive_increase(cid, "pool_raw", pool), s.positive_increase(cid, "pool_stored", pool)
            ev["raw_per_logical"] = raw / stored if is_finite(raw) and is_finite(stored) and stored > 0 else math.nan
            if is_finite(ev["raw_per_logical"]):
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
                # the twin's raw bytes per logical byte, as its pool counted them: EC's cost
                # predicted from data a replay does not measure again (experiment_choice)
                traw = s.positive_increase(t["cell_id"], "pool_raw", t["pool"])
                tst = s.positive_increase(t["cell_id"], "pool_stored", t["pool"])
                if is_finite(traw) and is_finite(tst) and tst > 0:
                    ev["rep_raw_per_logical"] = traw / tst
                if d == "read":
                    rep = _amp.read_amplification(rd, t["cell_id"], conc, t["pool"])
                    ev.update(rep_read_amplification=rep["amplification"],
                              rep_pool_read_per_logical=rep["pool_per_logical"])
                    if rep.get("source") and is_finite(rep["amplification"]):
                        src["rep_read_amplification"] = rep["source"]
    _growth(view, cid, conc, p, ev)
    _sat.add_evidence(view, s, cid, conc, win, ev, lambda q: _rel_se(q, ev))  # host-cpu's waits
    ev["sources"] = src
    return ev


def _rel_se(p: dict[str, Any], ev: dict[str, Any]) -> float:
    """A level's relative rate error: its own, and the run's between-run term if it has one."""
    own = _stats.point_rel_se(p)
    extra = (ev.get("between_run") or {}).get("rate")
    return _bl.combined(own, extra) if extra is not None else own


def _growth(view, cid: str, conc: float, p: dict[str, Any], ev: dict[str, Any]) -> None:
    """The higher level whose rate is surely the most above this one's: the largest lower
    confidence bound of rate(higher) / rate(here), from each level's own noise (stats)."""
    se = _rel_se(p, ev)
    bounds = [(c, r, _stats.ratio_lower_bound(p["rate"], se, r, _rel_se(view.point(cid, c) or {}, ev)))
              for c, r in view.levels_rate(cid) if c > conc and is_finite(r)]
    ev["rate_rel_se"] = se
    ev["rate_rel_se_own"] = _stats.point_rel_se(p)  # without the between-run term (experiment.judge adds it)
    # one repeat: only the window's spread is known, not the drift between levels (see repeats)
    ev["rate_noise"] = ("repeats and steady window" if float(p.get("repeats") or 1) >= 2
                        else "steady window, one repeat")
    if (ev.get("between_run") or {}).get("rate") is not None:
        ev["rate_noise"] += f", between runs {ev['between_run']['rate'] * 100:.1f} %"
    if bounds:  # no bound (this rate is 0): the fastest higher level
        c, r, low = max(bounds, key=lambda b: (b[2] if is_finite(b[2]) else -math.inf, b[1]))
        ev.update(best_higher_level=c, best_higher_rate=r, best_higher_growth_low=low)


def _read_amplification(rd: RunData, cell, conc, ev: dict[str, Any], src: dict[str, Any]) -> None:
    """A: OSD bytes read / logical bytes read (and the pool's client read bytes / logical)."""
    a = _amp.read_amplification(rd, cell["cell_id"], conc, cell["pool"])
    ev.update(read_logical=a["logical"], read_osd_bytes=a["osd_bytes"], read_osds=a["osds"],
              read_amplification=a["amplification"], pool_read_per_logical=a["pool_per_logical"],
              read_shards_expected=_shards(cell))
    if a.get("source") and (is_finite(a["amplification"]) or is_finite(a["pool_per_logical"])):
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
        d = p["direction"]
        if not is_finite(p["rate"]):
            rows.append({"cell_id": p["cell_id"], "concurrency": p["concurrency"],
                         "verdict": "inconclusive", "reason": "No steady rate was measured.",
                         "evidence": "{}", "direction": d})
            continue
        ev = _figures(rd, cell, p, others)
        link_use.add_evidence(rd, p["cell_id"], p["windows"], ev)  # shaped client links (rule 1)
        ruled = decide(ev)
        n0 = len(ev.get("borderline_candidates") or ())
        verdict, reason = link_use.decide_links(ev, *ruled, NEAR)
        node_use.add_evidence(rd, p["cell_id"], p["windows"], ev)  # client nodes' CPU
        verdict, reason = node_use.decide_nodes(ev, verdict, reason, NEAR)
        storagehosts.add_evidence(rd, cell, p["windows"], ev)  # OSD hosts via Prometheus
        verdict, reason = storagehosts.decide_storage(ev, verdict, reason, NEAR)
        ev.pop(_bl.PASSED, None)
        if verdict == ruled[0]:  # a storage host's figure within its noise of its line: said too
            verdict, reason = _bl.mark(ev, verdict, reason, since=n0)
        if verdict != ruled[0]:  # a saturated link, client node or storage host overrode the rules
            # what the rules named still holds: a co-limit of the overriding verdict, or a
            # conflict where it predicts the opposite (rules.OPPOSED)
            held = [v for v in (ruled[0], *(ev.get("co_limits") or ())) if v not in (verdict, "inconclusive")]
            ev["co_limits"] = [v for v in held if not opposed(v, verdict)]
            against = [v for v in held if opposed(v, verdict) and v not in (ev.get("conflicts") or ())]
            ev["conflicts"] = [*(ev.get("conflicts") or ()), *against]
            reason = with_conflicting(with_co_limits(reason, ev["co_limits"]), against)
            # the candidates stay (each figure is as near its line as it was), but for the
            # causes now named as co-limits; the overriding rule's own (a disk busy within its
            # noise of the line) is one
            ev["borderline_candidates"] = [c for c in ev.get("borderline_candidates") or ()
                                           if c.get("rule") not in ev["co_limits"]
                                           and not (c.get("figure") == "otherwise" and c.get("rule") == verdict)]
            verdict, reason = _bl.mark(ev, verdict, reason)
        rows.append({"cell_id": p["cell_id"], "concurrency": p["concurrency"], "verdict": verdict,
                     "reason": reason, "evidence": json.dumps(_jsonable(ev), sort_keys=True),
                     "direction": d})
    return rows


def attribute(run: RunDir | RunData, others: tuple = ()) -> list[dict[str, Any]]:
    """VERDICT rows (xcbench.store.tables.VERDICT) of a run, one per cell and concurrency level.
    ``others``: runs whose tmpfs cells may serve as gateway ceilings when this run has none."""
    rd = run if isinstance(run, RunData) else RunData(run)
    return attribute_data(rd, tuple(o if isinstance(o, RunData) else RunData(o) for o in others))


def write_verdicts(rd: RunData, others: tuple = ()) -> list[dict[str, Any]]:
    """Attribute a run and store the rows as its ``verdicts`` table (records/verdicts.jsonl, and
    verdicts.parquet once the run is finalized: RunDir.replace_table). Verdicts already stored
    for the cells attributed now are replaced (a resumed run); those of other cells are kept.
    ``rd`` then reads its verdicts and findings again (the report and the closing table use it)."""
    run = rd.run
    rows = attribute_data(rd, tuple(o if isinstance(o, RunData) else RunData(o) for o in others))
    done = {r["cell_id"] for r in rows}
    old = run.table("verdicts")
    keep: list[dict[str, Any]] = []
    if len(old):
        old = old[~old["cell_id"].isin(done)]
        keep = old.astype(object).where(old.notna(), None).to_dict("records")
    run.replace_table("verdicts", keep + rows)
    storagehosts.store_views_findings(run, rows)  # one box: the two CPU views disagree
    rd.reread("verdicts", "findings")
    return rows


def verdicts_of(rd: RunData, others: tuple[RunData, ...] = ()):
    """A run's verdicts: the stored table if the run wrote one, else attributed now."""
    import pandas as pd

    if len(rd.stored_verdicts) and not others:
        return rd.stored_verdicts.copy()
    return pd.DataFrame(attribute_data(rd, others), columns=list(VERDICT))
