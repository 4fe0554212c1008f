"""Report pieces of the network baseline and of a matrix's published reference.

- :func:`network_section`: RAL's network table and plot, streams -> ingress (write, client ->
  gateway) and egress (read, gateway -> client) Gb/s per client/gateway pair, from the run's
  ``baseline`` table.
- :func:`reference_layout`: the columns of the published table (``reference:`` of the matrix,
  kept in the manifest) beside the run's own in the layout table.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from xcbench.analysis.report.render import fig_to_data_uri, new_figure
from xcbench.cell import Layout
from xcbench.figures.numbers import as_float
from xcbench.figures.reference import lookup
from xcbench.figures.units import fmt_num, fmt_pct, gbps_num

GBIT = 1e9
DIRECTIONS = (("write", "ingress"), ("read", "egress"))


def baseline_points(baseline: pd.DataFrame) -> pd.DataFrame:
    """iperf3 rows with a rate: client, gateway, streams, direction, gbps."""
    cols = ["client", "gateway", "streams", "direction", "gbps", "retransmits", "cpu_host",
            "cpu_remote"]
    if baseline.empty:
        return pd.DataFrame(columns=cols)
    b = baseline.copy()
    b["client"] = b["client"].fillna(b["gateway"])
    b["gbps"] = pd.to_numeric(b["bits_per_second"], errors="coerce") / GBIT
    b["streams"] = pd.to_numeric(b["streams"], errors="coerce")
    b = b[b["gbps"].notna() & b["streams"].notna()]
    return b[cols].reset_index(drop=True)


def _query(client: str, gateway: str, streams: float, direction: str) -> str:
    return (f"kind == 'iperf3' & streams == {int(streams)} & client == {json.dumps(client)}"
            f" & gateway == {json.dumps(gateway)} & direction == {json.dumps(direction)}")


def network_section(run_id: str, baseline: pd.DataFrame, src: Any, images: bool = True) -> dict[str, Any]:
    """{"rows", "columns", "uri"} of the network baseline table (one row per pair and streams);
    no plot drawn (``uri`` None) without ``images``."""
    pts = baseline_points(baseline)
    rows = []
    for (client, gateway, n), g in pts.groupby(["client", "gateway", "streams"], sort=True):
        figs, row = {}, {"pair": f"{client} → {gateway}" if client != gateway else str(gateway),
                         "streams": {"text": str(int(n)), "sort": int(n)}}
        for direction, name in DIRECTIONS:
            d = g[g["direction"] == direction]
            v = float(d["gbps"].mean()) if len(d) else math.nan
            retr = pd.to_numeric(d["retransmits"], errors="coerce").sum() if len(d) else math.nan
            row[name] = {"text": fmt_num(v), "sort": v if math.isfinite(v) else ""}
            row[f"{name}_retr"] = {"text": fmt_num(retr) if len(d) and d["retransmits"].notna().any()
                                   else "–", "sort": retr if math.isfinite(retr) else ""}
            if len(d):
                figs[name] = ({"run": run_id, "table": "baseline", "column": "bits_per_second",
                               "agg": "mean", "note": "divided by 1e9 for Gb/s",
                               "query": _query(client, gateway, n, direction)}, v, fmt_num(v))
        row["_src"] = src.add(f"network baseline: {row['pair']} at {int(n)} streams", figs)
        rows.append(row)
    columns = [{"key": "pair", "label": "client → gateway", "num": False},
               {"key": "streams", "label": "parallel streams", "num": True},
               {"key": "ingress", "label": "ingress: write, client → gateway (Gb/s)", "num": True},
               {"key": "egress", "label": "egress: read, gateway → client (Gb/s)", "num": True},
               {"key": "ingress_retr", "label": "retransmits (write)", "num": True},
               {"key": "egress_retr", "label": "retransmits (read)", "num": True}]
    return {"rows": rows, "columns": columns, "uri": streams_plot(pts) if images else None}


def streams_plot(pts: pd.DataFrame) -> str | None:
    """RAL's plot: Gb/s vs parallel streams, ingress and egress, one pair of lines per host pair."""
    if pts.empty or pts["streams"].nunique() < 2:
        return None
    fig, ax = new_figure(6.5, 3.8)
    pairs = list(dict.fromkeys(zip(pts["client"], pts["gateway"], strict=True)))
    for client, gateway in pairs:
        sub = pts[(pts["client"] == client) & (pts["gateway"] == gateway)]
        tag = "" if len(pairs) == 1 else f" {client}→{gateway}"
        for (direction, name), style in zip(DIRECTIONS, ("-o", "--s"), strict=True):
            d = sub[sub["direction"] == direction].groupby("streams")["gbps"].mean()
            if len(d):
                ax.plot(d.index.to_numpy(dtype=float), d.to_numpy(dtype=float), style, ms=4,
                        label=f"{name} ({direction}){tag}")
    levels = sorted(pts["streams"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(levels, [str(int(s)) for s in levels])
    ax.set_xlabel("parallel TCP streams (iperf3 -P)")
    ax.set_ylabel("rate (Gb/s)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return fig_to_data_uri(fig)


def reference_layout(manifest: dict[str, Any], layout_rows: list[dict[str, Any]],
                     columns: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Add the published figures to the layout rows (keys ref_rate, ref_iops, ref_ratio) and
    return {"columns", "source", "conditions", "note", "url", "missing"}; None when the run's
    matrix names no reference."""
    ref = (manifest.get("matrix") or {}).get("reference") if isinstance(manifest.get("matrix"), dict) else None
    if not ref or not ref.get("rows"):
        return None
    matched = set()
    for row in layout_rows:
        su, sc, os_ = (row.get(k, {}).get("sort") if isinstance(row.get(k), dict) else None
                       for k in ("su", "sc", "os"))
        r = lookup(ref, su, sc, os_) if None not in (su, sc, os_) else None
        rate = as_float(r.get("io_rate")) if r else math.nan
        iops = as_float(r.get("iops")) if r else math.nan
        run_rate = as_float(row.get("rate", {}).get("sort")) if isinstance(row.get("rate"), dict) else math.nan
        ratio = run_rate / rate * 100 if math.isfinite(rate) and math.isfinite(run_rate) and rate else math.nan
        if r:
            matched.add((r["stripe_unit"], r["stripe_count"], r["object_size"]))
        row["ref_rate"] = {"text": gbps_num(rate) if r else "–",
                           "sort": rate if math.isfinite(rate) else ""}
        row["ref_iops"] = {"text": fmt_num(iops), "sort": iops if math.isfinite(iops) else ""}
        row["ref_ratio"] = {"text": fmt_pct(ratio, 0), "sort": ratio if math.isfinite(ratio) else ""}
    out_cols: list[dict[str, Any]] = []
    for c in columns:
        out_cols.append(c)
        if c["key"] == "rate":
            out_cols += [{"key": "ref_rate", "label": "published IO rate (Gb/s)", "num": True},
                         {"key": "ref_ratio", "label": "run / published", "num": True}]
        if c["key"] == "ops":
            out_cols.append({"key": "ref_iops", "label": "published IOPS", "num": True})
    missing = [Layout(r["stripe_unit"], r["stripe_count"], r["object_size"]).label
               for r in ref["rows"] if (r["stripe_unit"], r["stripe_count"], r["object_size"]) not in matched]
    cond = ref.get("conditions") or {}
    return {"columns": out_cols, "source": ref.get("source", ""), "url": ref.get("url"),
            "note": ref.get("note"), "missing": missing,
            "conditions": ", ".join(f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}"
                                    for k, v in cond.items())}

