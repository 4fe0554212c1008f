"""The run report: verdicts first, then the evidence, every figure with its source.

``render_report(runs, fmt, out)`` writes a self-contained HTML file (plots inline as base64
PNG, tiny inline JS for sortable tables, no network) or its Markdown twin (plots next to it).

Each table row ends with §N; the *Sources* section lists, for §N, the run, the table, the
pandas query and the aggregation of every figure in that row; the same list is embedded as
JSON (``<script type="application/json" id="xcb-sources">``) so a test or a person can
recompute any figure from the Parquet files.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
from markupsafe import Markup

from xcbench import __version__
from xcbench.analysis.report import (
    gateway_cpu_table,
    glance,
    grafana,
    markdown,
    network_baseline,
    overlay,
    overview,
    plots,
    readwrite,
    scaling,
)
from xcbench.analysis.report.dimensions import section as dims_section
from xcbench.analysis.report.render import render, write_report
from xcbench.analysis.report.storageplots import timeline_panels
from xcbench.analysis.report.table_cells import (
    Sources,
    level_end_of,
    load_evidence,
    matrix_name,
    num_cell,
    rate_cell,
    replicated_size,
    size_cell,
    table_cell,
    verdict_cell,
)
from xcbench.analysis.verdicts.attribution import NEAR, SCALING, STARVED, verdicts_of
from xcbench.analysis.verdicts.compare import compare_data
from xcbench.analysis.verdicts.directions import access_of
from xcbench.analysis.verdicts.roles import role_series
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.errors import XcbError
from xcbench.figures.steady import RULE
from xcbench.figures.units import fmt_gbps, fmt_num, fmt_pct, gbps_num


def _run_section(rd: RunData, src: Sources, others: tuple[RunData, ...]) -> dict[str, Any]:
    # cells in reading order: tmpfs, cephfs, rados, then by label (not by id hash)
    rank = {b: i for i, b in enumerate(plots.BACKENDS)}
    cells = rd.cells.assign(_r=rd.cells["backend"].map(rank).fillna(len(rank))) \
        .sort_values(["_r", "label"], kind="stable").drop(columns="_r")
    order = {cid: i for i, cid in enumerate(cells.index)}

    def ordered(df: pd.DataFrame) -> pd.DataFrame:
        if df.empty:
            return df
        return df.assign(_o=df["cell_id"].map(order).fillna(len(order))) \
            .sort_values(["_o", "concurrency"] if "concurrency" in df else ["_o"], kind="stable") \
            .drop(columns="_o")
    points = ordered(rd.points)
    labels = cells["label"].to_dict()
    verdicts = verdicts_of(rd, others).copy()
    verdict_table = "verdicts" if len(rd.stored_verdicts) and not others else None
    verdicts["concurrency"] = pd.to_numeric(verdicts["concurrency"], errors="coerce")
    verdicts["direction"] = verdicts["direction"].astype(object).where(verdicts["direction"].notna(), "write")
    vmap = {(r.cell_id, r.concurrency, r.direction): r for r in verdicts.itertuples()}
    closing = glance.rows(rd, others, verdicts)
    beats = overview.beaten_by_cell(closing)
    job_beats = {**overview.beaten_by_cell(closing, ceilings=("storage-bandwidth", "storage-iops")),
                 **overview.beaten_by_cell(closing, "read", ("storage-bandwidth", "storage-iops"))}
    reads = bool((points["direction"] == "read").any()) if len(points) else False
    pc = rd.probe_ceilings

    def vsrc(cid, conc, d):
        dq = f" & direction == {json.dumps(d)}" if d != "write" else ""
        if verdict_table:
            return {"run": rd.run_id, "table": "verdicts",
                    "query": f"cell_id == {json.dumps(cid)} & concurrency == {conc!r}{dq}",
                    "column": "verdict", "agg": "first"}
        return {"run": rd.run_id, "table": "(computed)", "column": "verdict", "agg": "first",
                "query": f"xcbench.analysis.verdicts.attribution.attribute(run) where cell_id == {json.dumps(cid)} "
                         f"& concurrency == {conc!r}{dq}"}

    # verdict summary: each cell at its highest measured concurrency level
    summary: list[dict[str, Any]] = []
    top = ordered(points.sort_values("concurrency", kind="stable")
                  .groupby(["cell_id", "direction"], sort=False).tail(1))
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
    counts = pd.Series([r["verdict"]["text"] for r in summary]).value_counts().to_dict() if summary else {}

    # RAL-style layout table: chain cells; best level; fio ceilings
    layout_rows = []
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
        layout_rows.append({
            "backend": c["backend"], "su": table_cell(size_cell(c["stripe_unit"]), num_cell(c["stripe_unit"])),
            "sc": table_cell(fmt_num(c["stripe_count"]), num_cell(c["stripe_count"])),
            "os": table_cell(size_cell(c["object_size"]), num_cell(c["object_size"])), "pool": c["pool_label"] or "–",
            "mode": c["mode"], "conc": table_cell(fmt_num(best["concurrency"]) if best is not None else "–",
                                             num_cell(best["concurrency"]) if best is not None else None),
            "rate": rate_cell(best["rate"] if best is not None else math.nan),
            "ci": table_cell(f"{gbps_num(best['ci_low'])}–{gbps_num(best['ci_high'])}" if best is not None
                        and num_cell(best["ci_low"]) is not None else "–"),
            "fio_bw": _beaten(rate_cell(prow["write_bw"] if prow is not None else math.nan), beats.get(cid)),
            "fio_iops": table_cell(fmt_num(prow["write_iops"]) if prow is not None else "–",
                              num_cell(prow["write_iops"]) if prow is not None else None),
            "ops": table_cell(fmt_num(ops), num_cell(ops)),
            "verdict": verdict_cell(verdict) if verdict != "–" else "–", "_src": n})

    # all points
    point_rows = []
    for p in points.itertuples():
        v = vmap.get((p.cell_id, p.concurrency, p.direction))
        n = src.add(f"steady rate: cell {p.cell_id} at concurrency {p.concurrency}"
                    f"{'' if p.direction == 'write' else ', ' + p.direction + 's'}",
                    {"rate": (p.source, p.rate, gbps_num(p.rate))})
        point_rows.append({
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

    # per-transfer distributions
    q = ordered(rd.transfer_quantiles)
    dist_rows = []
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
        dist_rows.append({"cell": labels.get(r.cell_id, r.cell_id)
                          + ("" if r.direction == "write" else f" ({r.direction}s)"),
                          "conc": table_cell(str(int(r.concurrency)), r.concurrency),
                          "n": table_cell(str(int(r.n)), int(r.n)),
                          **{k: table_cell(gbps_num(getattr(r, k)), getattr(r, k))
                             for k in ("q05", "q25", "q50", "q75", "q95", "mean")}, "_src": n})

    # fio probes, one row per cell, job and direction
    fio_rows = []
    for r in ordered(rd.probe_jobs).itertuples():
        spec = {"run": rd.run_id, "table": "probes", "query": r.query, "agg": "sum"}
        n = src.add(f"fio: cell {r.cell_id} job {r.job} {r.rw}", {
            "iops": ({**spec, "column": "iops"}, r.iops, fmt_num(r.iops)),
            "bw": ({**spec, "column": "bw"}, r.bw, gbps_num(r.bw))})
        fio_rows.append({"cell": labels.get(r.cell_id, r.cell_id), "job": r.job, "rw": r.rw,
                         "bs": str(r.bs), "iodepth": table_cell(fmt_num(r.iodepth), num_cell(r.iodepth)),
                         "hosts": table_cell(str(r.hosts), r.hosts), "iops": table_cell(fmt_num(r.iops), num_cell(r.iops)),
                         "bw": _beaten(rate_cell(r.bw), job_beats.get((r.cell_id, str(r.job)))), "lat": table_cell(fmt_num(r.lat_mean_us), num_cell(r.lat_mean_us)),
                         "p99": table_cell(fmt_num(r.lat_p99_us), num_cell(r.lat_p99_us)), "_src": n})

    # EC vs replicated pairs, from the verdict evidence
    ec_rows = []
    for v in verdicts.itertuples():
        ev = load_evidence(v.evidence)
        if ev.get("rep_rate") is None or v.direction != "write":  # reads: readwrite's table
            continue
        n = src.add(f"EC vs replicated: cell {v.cell_id} vs {ev.get('rep_cell')} at concurrency {v.concurrency}", {
            "ec_rate": (ev["sources"].get("rate"), ev.get("rate"), gbps_num(ev.get("rate"))),
            "rep_rate": (ev["sources"].get("rep_rate"), ev.get("rep_rate"), gbps_num(ev.get("rep_rate"))),
            "raw_per_logical": (ev["sources"].get("raw_per_logical"), ev.get("raw_per_logical"),
                                fmt_num(ev.get("raw_per_logical")))})
        ec_rows.append({"cell": labels.get(v.cell_id, v.cell_id), "conc": table_cell(str(int(v.concurrency)), v.concurrency),
                        "ec": rate_cell(ev.get("rate")), "rep": rate_cell(ev.get("rep_rate")),
                        "rep_pool": replicated_size(ev.get("rep_pool")),
                        "ratio": table_cell(fmt_pct((ev.get("ec_ratio") or math.nan) * 100), num_cell(ev.get("ec_ratio"))),
                        "rho": table_cell(fmt_num(ev.get("raw_per_logical")), num_cell(ev.get("raw_per_logical"))),
                        "rho0": table_cell(fmt_num(ev.get("raw_expected")), num_cell(ev.get("raw_expected"))), "_src": n})

    # plots
    figures = []
    ceil = scaling.ceilings(verdicts)
    uri = scaling.plot(points, cells, ceil, overview.TARGET_BPS)
    if uri:
        one = not (points["repeats"].fillna(1) > 1).any() if "repeats" in points and len(points) else True
        figures.append({"id": "fig-scaling", "title": "Steady rate vs concurrency, with every measured ceiling",
                        "uri": uri, "caption": "Per cell: the chain's mean over repeats of the steady "
                        "rate, bytes over the steady window (" + ("one repeat: no CI bars" if one else "bars: 95 % bootstrap CI "
                        "over repeats") + "; each point is a row of the table below, § there), coloured "
                        "and labelled by its verdict, with a hollow diamond on the ceiling that decided "
                        "it; and the ceilings its verdicts compared it with: the fio probe of its layout "
                        "and pool (bandwidth; IOPS at the chain's bytes per op where that counts), the "
                        "tmpfs gateway at each level, the iperf3 baseline, the rate a role's CPU quota "
                        "and the host's cores allow at the CPU per byte used, an EC cell's replicated "
                        "twin, and the target. A chain above a probe line: that probe is no ceiling of "
                        "its path."})
    timelines = []
    tl, st = rd.timeline, rd.steady
    for cid in cells.index:
        g = tl[tl["cell_id"] == cid]
        if g.empty:
            continue
        pool = cells.loc[cid, "pool"] if cells.loc[cid, "backend"] != "tmpfs" else None
        tel = {"gateway cores": rd.samples.series(cid, "gateway_cores"),
               "host busy": rd.samples.series(cid, "host_busy"),
               "pool write op/s": rd.samples.series(cid, "pool_write_ops", pool) if pool else None}
        storage, storage_caption = timeline_panels(rd.samples, cid, verdicts, float(g["rate"].max()))
        uri = plots.cell_timeline(g, st[st["cell_id"] == cid], tel, f"{labels.get(cid, cid)}  [{cid}]",
                                  cores=rd.cores, roles=role_series(rd.samples, cid), extra=storage)
        if uri:
            timelines.append({"id": f"tl-{cid}", "title": labels.get(cid, cid), "uri": uri,
                              "caption": f"run {rd.run_id}, cell {cid}: timeline.query('cell_id == "
                              f"\"{cid}\"') rate per 1-s bucket; shaded: steady windows; telemetry: "
                              f"samples of the cell (gateway proc.cpu_seconds.rate summed over pids, "
                              f"host cpu.busy{', pool.client_write_ops_per_s of ' + pool if pool else ''}; "
                              f"per role: role_cpu_cores, and each distinct role_cpu_limit_cores once, "
                              f"dashed). Rate in Gb/s (10^9 bit/s); a level's line ends with its last "
                              f"transfer." + storage_caption})
    dist_uri = plots.transfer_distributions(q, labels)
    fio_uri = plots.fio_iops(ordered(rd.probe_jobs), labels)

    m = rd.manifest
    status_counts = pd.Series([c.get("status", "unknown") for c in m.get("cells", {}).values()]).value_counts().to_dict()
    failed = [{"cell": c.get("label", cid), "id": cid, "status": c.get("status"), "error": c.get("error") or ""}
              for cid, c in m.get("cells", {}).items() if c.get("status") != "complete"]
    fp = m.get("fingerprint") or {}
    versions = fp.get("versions") or {}
    cell_fp = []
    for cid, c in m.get("cells", {}).items():
        f = c.get("fingerprint") or {}
        cell_fp.append({"cell": c.get("label", cid), "id": cid, "digest": (f.get("digest") or "–")[:16],
                        "layout": json.dumps(f.get("layout"), sort_keys=True) if f.get("layout") else "–",
                        "pool": json.dumps((f.get("pool") or {}).get("settings") or (f.get("pool") or {}).get("name"),
                                           sort_keys=True) if f.get("pool") else "–",
                        "ec_profile": json.dumps((f.get("pool") or {}).get("ec_profile"), sort_keys=True)
                        if (f.get("pool") or {}).get("ec_profile") else "–",
                        "configs": ", ".join(f"{k} {str(v)[:12]}" for k, v in (f.get("configs") or {}).items()) or "–"})
    net_bps, _ = rd.network
    layout_ref = network_baseline.reference_layout(m, layout_rows, _columns()["layout"])
    return {
        "id": rd.run_id, "path": str(rd.run.path), "status": m.get("status"), "start": m.get("start"),
        "end": m.get("end"), "matrix": matrix_name(m.get("matrix")), "schema": m.get("schema_version"),
        "upgraded_from": m.get("upgraded_from"), "status_counts": status_counts,
        "summary": summary, "verdict_counts": counts, "layout_rows": layout_rows,
        "point_rows": point_rows, "dist_rows": dist_rows, "fio_rows": fio_rows, "ec_rows": ec_rows,
        "level_rules": sorted({lv.get("text", "") for lv in rd.levels.values()} - {""}),
        "figures": figures, "timelines": timelines, "dist_uri": dist_uri, "fio_uri": fio_uri,
        "findings": rd.findings.fillna("").to_dict("records"),
        "finding_kinds": markdown.findings(rd.findings.fillna("").to_dict("records"), labels),
        "gaps": rd.gaps.fillna("").to_dict("records"), "failed": failed,
        "lost_rows": [{"table": t, **v, "first": markdown.short_time(v.get("first")),
                       "last": markdown.short_time(v.get("last"))}
                      for t, v in sorted((m.get("lost_rows") or {}).items())],
        "versions": {k: v for k, v in versions.items() if not isinstance(v, dict)},
        "packages": versions.get("packages") or {}, "host": fp.get("host") or {},
        "versions_digest": fp.get("versions_digest", ""), "cell_fp": cell_fp,
        "network": fmt_gbps(net_bps, gib=True) if num_cell(net_bps) else "not measured",
        "timeline_derived": rd.timeline_derived,
        "dims": dims_section(rd.points, m, rd.campaigns),  # streams, size classes, origins x cores
        "netbase": network_baseline.network_section(rd.run_id, rd.baseline, src), "layout_ref": layout_ref,
        "readwrite": readwrite.section(points, vmap, labels, cells, src,
                                       {c: access_of(rd.campaigns, c) for c in cells.index}),
        "reads": reads,
        "glance": {"context": {**overview.context(rd), **({} if glance.fit_for_sizing(rd, closing)
                                                          else {"calibrate": None})},
                   "grid": overview.grid(closing), "settle": glance.settle(rd, closing)},
        "gateway_cpu": gateway_cpu_table.section(rd.campaigns),  # core-s/GB per mode and security
        "confirmations": confirmations(rd.run.path, labels),  # xcbench confirm RUN
        "scaling_input": (rd.run_id, points, ceil),  # the overlay of `report A B`
    }


def _beaten(cell: dict[str, Any], said: list[str] | None) -> dict[str, Any]:
    """A probe figure the chain beat: marked ▲ where it appears, with what the chain did."""
    if not said or cell.get("text") in (None, "–"):
        return cell
    title = "; ".join(said) + ": this probe is no ceiling of the chain's path"
    return {**cell, "text": f"{cell['text']} ▲", "title": title, "cls": "beaten"}


def confirmations(path: Path, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The rows of <run>/confirmations.json (``xcbench confirm``): per verdict, the outcome,
    the experiment and both rates with their noise; [] when the run was never confirmed."""
    f = Path(path) / "confirmations.json"
    if not f.is_file():
        return []
    try:
        rows = json.loads(f.read_text()).get("confirmations") or []
    except (OSError, ValueError, AttributeError):
        return []

    def rate(b: Any, se: Any) -> str:
        if not num_cell(b):
            return "–"
        return f"{gbps_num(b)} ± {se * 100:.1f} %" if num_cell(se) else gbps_num(b)
    return [{"cell": labels.get(str(x.get("cell_id")), x.get("cell_id")), "conc": x.get("concurrency"),
             "verdict": x.get("verdict"), "outcome": x.get("outcome"),
             "what": x.get("what") or x.get("why") or "",
             "control": rate(x.get("control_Bps"), x.get("control_rel_se")),
             "changed": rate(x.get("changed_Bps"), x.get("changed_rel_se")),
             "why": x.get("why") if x.get("what") else ""} for x in rows if isinstance(x, dict)]


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


def _columns() -> dict[str, list[dict[str, Any]]]:
    cols = {k: [{"key": c[0], "label": c[1], "num": len(c) > 2} for c in v] for k, v in COLUMNS.items()}
    return {**cols, **readwrite.columns()}


def _rules() -> tuple[str, list[tuple[str, str]]]:
    """(definitions, [(verdict, condition), ...]) from analysis/verdicts/verdicts.md: one text, no drift."""
    doc = resources.files("xcbench.analysis.verdicts").joinpath("verdicts.md").read_text()
    doc = doc.split("```text\n", 1)[-1].rsplit("```", 1)[0]
    head, _, rest = doc.partition("first match wins:")
    definitions = head.split("\n", 2)[-1].rsplit("Rules", 1)[0].strip()
    block = rest.split("Each verdict row", 1)[0]
    rules, cur = [], ""
    for line in block.splitlines():
        s = line.strip()
        head_num, dot, body = s.partition(". ")
        if dot and re.fullmatch(r"\d+[a-z]?", head_num):  # 4b, 8b: rules of their own
            if cur:
                rules.append(cur)
            cur = body
        elif s and cur:
            cur += " " + s
    if cur:
        rules.append(cur)
    pairs = [" ".join(r.split()).split(" ", 1) for r in rules]
    return definitions, [(p[0], p[1] if len(p) > 1 else "") for p in pairs]


def build_context(runs: list[RunData], grafana_base: str | None = None,
                  annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """``grafana_base``: Grafana's URL for each run's dashboard link; ``annotations``: {run id:
    file of its levels as Grafana annotations} where written."""
    src = Sources()
    sections = []
    for i, rd in enumerate(runs):
        others = tuple(r for j, r in enumerate(runs) if j != i)
        sections.append(_run_section(rd, src, others))
        sections[-1]["grafana"] = grafana.link(rd, grafana_base)
        if sections[-1]["grafana"]:
            sections[-1]["grafana"]["annotations"] = (annotations or {}).get(rd.run_id)
    comparisons = []
    over = overlay.section(runs, [s["scaling_input"] for s in sections])
    if len(runs) > 1:
        for rd in runs[1:]:
            comparisons.append({"base": runs[0].run_id, "contender": rd.run_id,
                                "rows": compare_data(runs[0], rd)})
    return {
        "title": "xcbench report — " + ", ".join(r.run_id for r in runs),
        "generated": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "xcbench_version": __version__, "runs": sections, "columns": _columns(),
        "comparisons": comparisons, "overlay": over, "steady_rule": RULE, "rules": _rules()[1],
        "rule_definitions": _rules()[0],
        "thresholds": {"near": NEAR, "starved": STARVED, "scaling": SCALING},
        "sources": src.items,
        "sources_json": Markup(json.dumps(src.items, default=str).replace("</", "<\\/")),
    }


def render_report(runs: list[Path | str | RunData], fmt: str = "html", out: Path | str | None = None,
                  grafana_url: str | None = None) -> Path:
    """Render the report of ``runs`` to ``out`` (default: <first run>/report.<fmt>). With a
    Grafana URL (``grafana_url`` or $XCBENCH_GRAFANA_URL) each run links to the dashboard on
    its time range, and its levels are written beside the report as Grafana annotations."""
    if not runs:
        raise XcbError("report: no run given")
    base = grafana.base_url(grafana_url)
    data = [r if isinstance(r, RunData) else RunData(r) for r in runs]
    out = Path(out) if out else data[0].run.path / f"report.{fmt}"
    notes = grafana.write_all(data, out) if base else {}
    text = render("report", build_context(data, base, notes), fmt)
    if fmt == "md":
        text = markdown.wrap(text)
    return write_report(text, out, fmt)


def render_run_report(run: Any, fmt: str = "html") -> None:
    """A finished run's report (and its Markdown beside the HTML), its paths in the manifest;
    best effort: a failure is a warning of the run, never a lost record."""
    if not run.has_room():
        run.warn("report: not rendered, the result store is full "
                 "(render it later with `xcbench report` once there is room)")
        return
    try:
        run.state.report = str(render_report([run.path], fmt=fmt))
        if fmt == "html":
            run.state.report_md = str(render_report([run.path], fmt="md"))
    except Exception as e:  # noqa: BLE001 - the measurements are safe; say why there is no report
        run.warn(f"report: {type(e).__name__}: {e}")
    run.save_manifest()
