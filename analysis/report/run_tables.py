"""The tables of a run's section of the report: the rows of each, every figure registered in
``Sources`` (its §N), and the tables' columns.

The row builders are called in the order the section shows them, so the §N numbers run down
the page.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from xcbench.analysis.report import readwrite
from xcbench.analysis.report.table_cells import (
    Sources,
    level_end_of,
    load_evidence,
    num_cell,
    rate_cell,
    replicated_size,
    size_cell,
    table_cell,
    verdict_cell,
)
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.figures.units import fmt_num, fmt_pct, gbps_num

COLUMNS = {
    "summary": [("cell", "cell"), ("direction", "direction"), ("backend", "backend"), ("conc", "concurrency", True),
                ("rate", "steady rate (Gb/s)", True), ("verdict", "verdict"), ("reason", "why")],
    "layout": [("backend", "backend"), ("su", "stripe unit", True), ("sc", "stripe count", True),
               ("os", "object size", True), ("pool", "pool"), ("mode", "mode"),
               ("conc", "best at concurrency", True), ("rate", "IO rate (Gb/s)", True),
               ("ci", "95 % CI (Gb/s)", True), ("fio_bw", "fio write (Gb/s)", True),
               ("fio_iops", "fio write IOPS", True), ("ops", "pool write op/s in run", True),
               ("verdict", "verdict")],
    "points": [("cell", "cell"), ("direction", "direction"), ("conc", "concurrency", True), ("n", "repeats", True),
               ("rate", "steady mean (Gb/s)", True), ("ci", "95 % CI (Gb/s)", True),
               ("median", "steady median (Gb/s)", True), ("cv", "steady CV", True),
               ("run_rate", "whole-run mean (Gb/s)", True), ("run_cv", "whole-run CV", True),
               ("method", "window rule"), ("failed", "failed transfers", True), ("verdict", "verdict")],
    "dist": [("cell", "cell"), ("conc", "concurrency", True), ("n", "transfers", True),
             ("q05", "p5 (Gb/s)", True), ("q25", "p25 (Gb/s)", True), ("q50", "median (Gb/s)", True),
             ("q75", "p75 (Gb/s)", True), ("q95", "p95 (Gb/s)", True), ("mean", "mean (Gb/s)", True)],
    "fio": [("cell", "cell"), ("job", "job"), ("rw", "rw"), ("bs", "bs"), ("iodepth", "iodepth", True),
            ("hosts", "hosts", True), ("iops", "IOPS", True), ("bw", "bandwidth (Gb/s)", True),
            ("lat", "mean latency (µs)", True), ("p99", "p99 latency (µs)", True)],
    "ec": [("cell", "EC cell"), ("conc", "concurrency", True), ("ec", "EC rate (Gb/s)", True),
           ("rep", "replicated rate (Gb/s)", True), ("rep_pool", "replicated pool (copies)"),
           ("ratio", "EC / replicated", True), ("rho", "raw/logical measured", True),
           ("rho0", "raw/logical expected", True)],
}


def columns() -> dict[str, list[dict[str, Any]]]:
    cols = {k: [{"key": c[0], "label": c[1], "num": len(c) > 2} for c in v] for k, v in COLUMNS.items()}
    return {**cols, **readwrite.columns()}


def beaten(cell: dict[str, Any], said: list[str] | None) -> dict[str, Any]:
    """A probe figure the chain beat: marked ▲ where it appears, with what the chain did."""
    if not said or cell.get("text") in (None, "–"):
        return cell
    title = "; ".join(said) + ": this probe is no ceiling of the chain's path"
    return {**cell, "text": f"{cell['text']} ▲", "title": title, "cls": "beaten"}


def summary_rows(rd: RunData, src: Sources, top: pd.DataFrame, cells: pd.DataFrame,
                 labels: dict[str, str], vmap: dict, verdict_table: str | None) -> list[dict[str, Any]]:
    """The verdict summary: each cell at its highest measured level (``top``)."""

    def vsrc(cid, conc, d):
        dq = f" & direction == {json.dumps(d)}" if d != "write" else ""
        if verdict_table:
            return {"run": rd.run_id, "table": "verdicts",
                    "query": f"cell_id == {json.dumps(cid)} & concurrency == {conc!r}{dq}",
                    "column": "verdict", "agg": "first"}
        return {"run": rd.run_id, "table": "(computed)", "column": "verdict", "agg": "first",
                "query": f"xcbench.analysis.verdicts.attribution.attribute(run) where cell_id == {json.dumps(cid)} "
                         f"& concurrency == {conc!r}{dq}"}

    summary: list[dict[str, Any]] = []
    for p in top.itertuples():
        c: Any = cells.loc[p.cell_id] if p.cell_id in cells.index else None
        v = vmap.get((p.cell_id, p.concurrency, p.direction))
        verdict = v.verdict if v is not None else "inconclusive"
        n = src.add(f"verdict summary: cell {p.cell_id} ({labels.get(p.cell_id, '')}) at concurrency "
                    f"{p.concurrency}{'' if p.direction == 'write' else ', ' + p.direction + 's'}",
                    {"rate": (p.source, p.rate, gbps_num(p.rate)),
                     "verdict": (vsrc(p.cell_id, p.concurrency, p.direction), math.nan, verdict)})
        summary.append({"cell": table_cell(labels.get(p.cell_id, p.cell_id), title=f"cell id {p.cell_id}"),
                        "direction": p.direction,
                        "backend": c["backend"] if c is not None else "", "conc": table_cell(str(int(p.concurrency)), p.concurrency),
                        "rate": rate_cell(p.rate), "verdict": verdict_cell(verdict),
                        "reason": v.reason if v is not None else "", "_src": n})
    return summary


def layout_rows(src: Sources, points: pd.DataFrame, cells: pd.DataFrame, pc: pd.DataFrame,
                vmap: dict, beats: dict) -> list[dict[str, Any]]:
    """RAL-style layout table: chain cells; best level; fio ceilings (``pc``)."""
    rows = []
    for cid, c in cells[cells["backend"] != "tmpfs"].iterrows():
        ps = points[points["cell_id"] == cid]
        if (ps["direction"] == "write").any():  # the layout table is RAL's write table
            ps = ps[ps["direction"] == "write"]
        if ps.empty and cid not in pc.index:
            continue
        best = ps.loc[ps["rate"].idxmax()] if len(ps) and ps["rate"].notna().any() else None
        prow = pc.loc[cid] if cid in pc.index else None
        vkey = (cid, best["concurrency"], best["direction"]) if best is not None else None
        ev = load_evidence(vmap[vkey].evidence) if vkey in vmap else {}
        figs = {}
        if best is not None:
            figs["rate"] = (best["source"], best["rate"], gbps_num(best["rate"]))
        if prow is not None:
            figs["fio_bw"] = (prow["bw_source"], prow["write_bw"], gbps_num(prow["write_bw"]))
            figs["fio_iops"] = (prow["iops_source"], prow["write_iops"], fmt_num(prow["write_iops"]))
        ops = ev.get("pool_write_ops")
        if ops is not None and (ev.get("sources") or {}).get("pool_write_ops"):
            figs["pool_write_ops"] = (ev["sources"]["pool_write_ops"], ops, fmt_num(ops))
        n = src.add(f"layout table: cell {cid} ({c['label']})", figs)
        verdict = vmap[vkey].verdict if vkey in vmap else "–"
        rows.append({
            "backend": c["backend"], "su": table_cell(size_cell(c["stripe_unit"]), num_cell(c["stripe_unit"])),
            "sc": table_cell(fmt_num(c["stripe_count"]), num_cell(c["stripe_count"])),
            "os": table_cell(size_cell(c["object_size"]), num_cell(c["object_size"])), "pool": c["pool_label"] or "–",
            "mode": c["mode"], "conc": table_cell(fmt_num(best["concurrency"]) if best is not None else "–",
                                             num_cell(best["concurrency"]) if best is not None else None),
            "rate": rate_cell(best["rate"] if best is not None else math.nan),
            "ci": table_cell(f"{gbps_num(best['ci_low'])}–{gbps_num(best['ci_high'])}" if best is not None
                        and num_cell(best["ci_low"]) is not None else "–"),
            "fio_bw": beaten(rate_cell(prow["write_bw"] if prow is not None else math.nan), beats.get(cid)),
            "fio_iops": table_cell(fmt_num(prow["write_iops"]) if prow is not None else "–",
                              num_cell(prow["write_iops"]) if prow is not None else None),
            "ops": table_cell(fmt_num(ops), num_cell(ops)),
            "verdict": verdict_cell(verdict) if verdict != "–" else "–", "_src": n})
    return rows


def point_rows(src: Sources, points: pd.DataFrame, labels: dict[str, str], vmap: dict) -> list[dict[str, Any]]:
    """Every measured level."""
    rows = []
    for p in points.itertuples():
        v = vmap.get((p.cell_id, p.concurrency, p.direction))
        n = src.add(f"steady rate: cell {p.cell_id} at concurrency {p.concurrency}"
                    f"{'' if p.direction == 'write' else ', ' + p.direction + 's'}",
                    {"rate": (p.source, p.rate, gbps_num(p.rate))})
        rows.append({
            "cell": table_cell(labels.get(p.cell_id, p.cell_id), title=f"cell id {p.cell_id}"),
            "direction": p.direction,
            "conc": table_cell(str(int(p.concurrency)), p.concurrency), "n": table_cell(str(p.repeats), p.repeats),
            "rate": rate_cell(p.rate),
            "ci": table_cell(f"{gbps_num(p.ci_low)}–{gbps_num(p.ci_high)}" if num_cell(p.ci_low) is not None else "–",
                        num_cell(p.ci_low)),
            "median": rate_cell(p.window_median), "cv": table_cell(fmt_pct(p.window_cv * 100), num_cell(p.window_cv)),
            "run_rate": rate_cell(p.run_rate), "run_cv": table_cell(fmt_pct(p.run_cv * 100), num_cell(p.run_cv)),
            "method": level_end_of(p), "failed": table_cell(fmt_num(p.failed), num_cell(p.failed)),
            "verdict": verdict_cell(v.verdict) if v is not None else "–", "_src": n})
    return rows


def dist_rows(rd: RunData, src: Sources, q: pd.DataFrame, labels: dict[str, str]) -> list[dict[str, Any]]:
    """Per-transfer distributions (``q``: the run's transfer quantiles, in reading order)."""
    rows = []
    both = q.groupby(["cell_id", "concurrency"])["direction"].transform("nunique") > 1 if len(q) else []
    for r, two in zip(q.itertuples(), both, strict=True):
        # a direction filter only where the level has both: a level of writes alone reads as before
        dq = f" & direction == {json.dumps(r.direction)}" if two or r.direction == "read" else ""
        spec = {"run": rd.run_id, "table": "transfers", "column": "throughput", "agg": "median",
                "query": f"cell_id == {json.dumps(r.cell_id)} & concurrency == {r.concurrency!r} & "
                         f"file_state == 'FINISHED'{dq}"}
        n = src.add(f"transfer throughput: cell {r.cell_id} at concurrency {r.concurrency}"
                    f"{'' if r.direction == 'write' else ', reads'}",
                    {"median": (spec, r.q50, gbps_num(r.q50))})
        rows.append({"cell": labels.get(r.cell_id, r.cell_id)
                     + ("" if r.direction == "write" else f" ({r.direction}s)"),
                     "conc": table_cell(str(int(r.concurrency)), r.concurrency),
                     "n": table_cell(str(int(r.n)), int(r.n)),
                     **{k: table_cell(gbps_num(getattr(r, k)), getattr(r, k))
                        for k in ("q05", "q25", "q50", "q75", "q95", "mean")}, "_src": n})
    return rows


def fio_rows(rd: RunData, src: Sources, jobs: pd.DataFrame, labels: dict[str, str],
             job_beats: dict) -> list[dict[str, Any]]:
    """fio probes, one row per cell, job and direction (``jobs`` in reading order)."""
    rows = []
    for r in jobs.itertuples():
        spec = {"run": rd.run_id, "table": "probes", "query": r.query, "agg": "sum"}
        n = src.add(f"fio: cell {r.cell_id} job {r.job} {r.rw}", {
            "iops": ({**spec, "column": "iops"}, r.iops, fmt_num(r.iops)),
            "bw": ({**spec, "column": "bw"}, r.bw, gbps_num(r.bw))})
        rows.append({"cell": labels.get(r.cell_id, r.cell_id), "job": r.job, "rw": r.rw,
                     "bs": str(r.bs), "iodepth": table_cell(fmt_num(r.iodepth), num_cell(r.iodepth)),
                     "hosts": table_cell(str(r.hosts), r.hosts), "iops": table_cell(fmt_num(r.iops), num_cell(r.iops)),
                     "bw": beaten(rate_cell(r.bw), job_beats.get((r.cell_id, str(r.job)))), "lat": table_cell(fmt_num(r.lat_mean_us), num_cell(r.lat_mean_us)),
                     "p99": table_cell(fmt_num(r.lat_p99_us), num_cell(r.lat_p99_us)), "_src": n})
    return rows


def ec_rows(src: Sources, verdicts: pd.DataFrame, labels: dict[str, str]) -> list[dict[str, Any]]:
    """EC vs replicated pairs, from the verdict evidence."""
    rows = []
    for v in verdicts.itertuples():
        ev = load_evidence(v.evidence)
        if ev.get("rep_rate") is None or v.direction != "write":  # reads: readwrite's table
            continue
        n = src.add(f"EC vs replicated: cell {v.cell_id} vs {ev.get('rep_cell')} at concurrency {v.concurrency}", {
            "ec_rate": (ev["sources"].get("rate"), ev.get("rate"), gbps_num(ev.get("rate"))),
            "rep_rate": (ev["sources"].get("rep_rate"), ev.get("rep_rate"), gbps_num(ev.get("rep_rate"))),
            "raw_per_logical": (ev["sources"].get("raw_per_logical"), ev.get("raw_per_logical"),
                                fmt_num(ev.get("raw_per_logical")))})
        rows.append({"cell": labels.get(v.cell_id, v.cell_id), "conc": table_cell(str(int(v.concurrency)), v.concurrency),
                     "ec": rate_cell(ev.get("rate")), "rep": rate_cell(ev.get("rep_rate")),
                     "rep_pool": replicated_size(ev.get("rep_pool")),
                     "ratio": table_cell(fmt_pct((ev.get("ec_ratio") or math.nan) * 100), num_cell(ev.get("ec_ratio"))),
                     "rho": table_cell(fmt_num(ev.get("raw_per_logical")), num_cell(ev.get("raw_per_logical"))),
                     "rho0": table_cell(fmt_num(ev.get("raw_expected")), num_cell(ev.get("raw_expected"))), "_src": n})
    return rows
