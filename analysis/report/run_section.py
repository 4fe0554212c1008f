"""One run's section of the report: its cells in reading order, its verdicts, tables
(run_tables), plots, fingerprints and the sections other modules build, as one template context.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from xcbench.analysis.report import (
    closing_text,
    gateway_cpu_table,
    glance,
    markdown,
    network_baseline,
    overview,
    plots,
    readwrite,
    run_tables,
    scaling,
)
from xcbench.analysis.report.dimensions import section as dims_section
from xcbench.analysis.report.storageplots import timeline_panels
from xcbench.analysis.report.table_cells import Sources, matrix_name, num_cell
from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.directions import access_of
from xcbench.analysis.verdicts.roles import role_series
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.cell import BACKENDS
from xcbench.figures.units import fmt_gbps, gbps_num
from xcbench.store.upgrade import update_confirmations


def run_section(rd: RunData, src: Sources, others: tuple[RunData, ...],
                images: bool = True) -> dict[str, Any]:
    """One run's section of the report; ``images`` False: no plot drawn (their keys empty)."""
    # cells in reading order: tmpfs, cephfs, rados, then by label (not by id hash)
    rank = {b: i for i, b in enumerate(BACKENDS)}
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

    # the tables, in the order the section shows them (§N numbers run down the page)
    top = ordered(points.sort_values("concurrency", kind="stable")
                  .groupby(["cell_id", "direction"], sort=False).tail(1))
    summary = run_tables.summary_rows(rd, src, top, cells, labels, vmap, verdict_table)
    counts = pd.Series([r["verdict"]["text"] for r in summary]).value_counts().to_dict() if summary else {}
    layout_rows = run_tables.layout_rows(src, points, cells, rd.probe_ceilings, vmap, beats)
    point_rows = run_tables.point_rows(src, points, labels, vmap)
    q = ordered(rd.transfer_quantiles)
    dist_rows = run_tables.dist_rows(rd, src, q, labels)
    jobs = ordered(rd.probe_jobs)
    fio_rows = run_tables.fio_rows(rd, src, jobs, labels, job_beats)
    ec_rows = run_tables.ec_rows(src, verdicts, labels)

    ceil = scaling.ceilings(verdicts)
    m = rd.manifest
    status_counts = pd.Series([c.get("status", "unknown") for c in m.get("cells", {}).values()]).value_counts().to_dict()
    failed = [{"cell": c.get("label", cid), "id": cid, "status": c.get("status"), "error": c.get("error") or ""}
              for cid, c in m.get("cells", {}).items() if c.get("status") != "complete"]
    fp = m.get("fingerprint") or {}
    versions = fp.get("versions") or {}
    net_bytes_per_s, _ = rd.network
    layout_ref = network_baseline.reference_layout(m, layout_rows, run_tables.columns()["layout"])
    netbase = network_baseline.network_section(rd.run_id, rd.baseline, src, images=images)
    return {
        "id": rd.run_id, "path": str(rd.run.path), "status": m.get("status"), "start": m.get("start"),
        "end": m.get("end"), "matrix": matrix_name(m.get("matrix")), "schema": m.get("schema_version"),
        "upgraded_from": m.get("upgraded_from"), "status_counts": status_counts,
        "summary": summary, "verdict_counts": counts, "layout_rows": layout_rows,
        "point_rows": point_rows, "dist_rows": dist_rows, "fio_rows": fio_rows, "ec_rows": ec_rows,
        "level_rules": sorted({lv.get("text", "") for lv in rd.levels.values()} - {""}),
        "figures": _scaling_figure(points, cells, ceil) if images else [],
        "timelines": _timelines(rd, cells, labels, verdicts) if images else [],
        "dist_uri": plots.transfer_distributions(q, labels) if images else None,
        "fio_uri": plots.fio_iops(jobs, labels) if images else None,
        "findings": rd.findings.fillna("").to_dict("records"),
        "finding_kinds": markdown.findings(rd.findings.fillna("").to_dict("records"), labels),
        "gaps": rd.gaps.fillna("").to_dict("records"), "failed": failed,
        "lost_rows": [{"table": t, **v, "first": markdown.short_time(v.get("first")),
                       "last": markdown.short_time(v.get("last"))}
                      for t, v in sorted((m.get("lost_rows") or {}).items())],
        "versions": {k: v for k, v in versions.items() if not isinstance(v, dict)},
        "packages": versions.get("packages") or {}, "host": fp.get("host") or {},
        "versions_digest": fp.get("versions_digest", ""), "cell_fp": _cell_fingerprints(m),
        "network": fmt_gbps(net_bytes_per_s, gib=True) if num_cell(net_bytes_per_s) else "not measured",
        "timeline_derived": rd.timeline_derived,
        # streams, size classes, origins x cores: plots only (the Markdown report has none)
        "dims": dims_section(rd.points, rd.cell_objects, rd.campaigns) if images else None,
        "netbase": netbase, "layout_ref": layout_ref,
        "readwrite": readwrite.section(points, vmap, labels, cells, src,
                                       {c: access_of(rd.campaigns, c) for c in cells.index}, images),
        "reads": reads,
        "glance": {"context": {**overview.context(rd), **({} if glance.fit_for_sizing(rd, closing)
                                                          else {"calibrate": None})},
                   "grid": overview.grid(closing),
                   # each level to settle: what it is, then each way (a command in its own span)
                   "settle": [(where, [closing_text.spans(x) for x in todo]) for where, todo in
                              (closing_text.split_settle(x) for x in glance.settle(rd, closing))]},
        "gateway_cpu": gateway_cpu_table.section(rd.campaigns),  # core-s/GB per mode and security
        "confirmations": confirmations(rd.run.path, labels),  # xcbench confirm RUN
        "scaling_input": (rd.run_id, points, ceil),  # the overlay of `report A B`
    }


def _scaling_figure(points: pd.DataFrame, cells: pd.DataFrame, ceil: Any) -> list[dict[str, Any]]:
    """The throughput-vs-concurrency plot with every measured ceiling ([] when nothing to draw)."""
    uri = scaling.plot(points, cells, ceil, overview.TARGET_BYTES_PER_S)
    if not uri:
        return []
    one = not (points["repeats"].fillna(1) > 1).any() if "repeats" in points and len(points) else True
    return [{"id": "fig-scaling", "title": "Steady rate vs concurrency, with every measured ceiling",
             "uri": uri, "caption": "Per cell: the chain's mean over repeats of the steady "
             "rate, bytes over the steady window (" + ("one repeat: no CI bars" if one else "bars: 95 % bootstrap CI "
             "over repeats") + "; each point is a row of the table below, § there), coloured "
             "and labelled by its verdict, with a hollow diamond on the ceiling that decided "
             "it; and the ceilings its verdicts compared it with: the fio probe of its layout "
             "and pool (bandwidth; IOPS at the chain's bytes per op where that counts), the "
             "tmpfs gateway at each level, the iperf3 baseline, the rate a role's CPU quota "
             "and the host's cores allow at the CPU per byte used, an EC cell's replicated "
             "twin, and the target. A chain above a probe line: that probe is no ceiling of "
             "its path."}]


def _timelines(rd: RunData, cells: pd.DataFrame, labels: dict[str, str],
               verdicts: pd.DataFrame) -> list[dict[str, Any]]:
    """Per cell: its rate over time with the steady windows, its telemetry and storage hosts."""
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
        storage, storage_caption = timeline_panels(
            rd.samples, cid, verdicts, float(g["rate"].max()),
            storage=cells.loc[cid, "backend"] != "tmpfs")  # no storage in a tmpfs cell's path
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
    return timelines


def _cell_fingerprints(m: dict[str, Any]) -> list[dict[str, Any]]:
    """Per cell of the manifest: its fingerprint's digest, layout, pool, EC profile and configs."""
    cell_fp = []
    for cid, c in m.get("cells", {}).items():
        f = c.get("fingerprint") or {}
        pool = f.get("pool") or {}
        row = {"cell": c.get("label", cid), "id": cid, "digest": (f.get("digest") or "–")[:16],
               "layout": json.dumps(f.get("layout"), sort_keys=True) if f.get("layout") else "–",
               "pool": json.dumps(pool.get("settings") or pool.get("name"), sort_keys=True) if pool else "–",
               "ec_profile": json.dumps(pool.get("ec_profile"), sort_keys=True) if pool.get("ec_profile") else "–",
               "configs": ", ".join(f"{k} {str(v)[:12]}" for k, v in (f.get("configs") or {}).items()) or "–"}
        cell_fp.append({k: {"text": v, "cls": "mono"} if k != "cell" else v for k, v in row.items()})
    return cell_fp


def confirmations(path: Path, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The rows of <run>/confirmations.json (``xcbench confirm``): per verdict, the outcome,
    the experiment and both rates with their noise; [] when the run was never confirmed."""
    f = Path(path) / "confirmations.json"
    if not f.is_file():
        return []
    try:
        rows = update_confirmations(json.loads(f.read_text())).get("confirmations") or []
    except (OSError, ValueError, AttributeError):
        return []

    def rate(b: Any, se: Any) -> str:
        if not num_cell(b):
            return "–"
        return f"{gbps_num(b)} ± {se * 100:.1f} %" if num_cell(se) else gbps_num(b)
    return [{"cell": labels.get(str(x.get("cell_id")), x.get("cell_id")), "conc": x.get("concurrency"),
             "verdict": x.get("verdict"), "outcome": x.get("outcome"),
             "what": x.get("what") or x.get("why") or "",
             "control": rate(x.get("control_bytes_per_s"), x.get("control_rel_se")),
             "changed": rate(x.get("changed_bytes_per_s"), x.get("changed_rel_se")),
             "why": x.get("why") if x.get("what") else ""} for x in rows if isinstance(x, dict)]
