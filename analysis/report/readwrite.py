"""The report's reads-and-writes section: per cell, each level's write and read rate side by
side with the verdict of each direction, EC read amplification, and RAL's published gateway
figures (xcbench.figures.reference.RAL_GATEWAY) as a reference.

Only cells with read points get rows; a write-only run has no such section (``section``
returns None).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from xcbench.analysis.report.render import fig_to_data_uri, new_figure
from xcbench.analysis.report.table_cells import load_evidence, num_cell, rate_cell, table_cell, verdict_cell
from xcbench.analysis.verdicts.amplification import describe
from xcbench.figures.reference import RAL_GATEWAY, ral_gateway_rows
from xcbench.figures.units import fmt_num, gbps_num

NOT_MEASURED = "not measured"

COLUMNS: dict[str, list[tuple[Any, ...]]] = {
    "rw": [("cell", "cell"), ("access", "read access"), ("conc", "concurrency", True), ("write", "write (Gb/s)", True),
           ("read", "read (Gb/s)", True), ("ratio", "read / write", True),
           ("wv", "write verdict"), ("rv", "read verdict")],
    "amp": [("cell", "cell"), ("conc", "concurrency", True), ("pool", "pool"),
            ("shards", "shards per read", True), ("amp", "OSD bytes read / bytes read", True),
            ("rep_amp", "replicated twin", True), ("pool_amp", "pool client reads / bytes read", True),
            ("ec_ratio", "EC / replicated read rate", True)],
    "ral": [("files", "parallel files", True), ("write", "write (Gb/s)", True),
            ("read", "read (Gb/s)", True), ("ratio", "read / write", True)],
}


def columns() -> dict[str, list[dict[str, Any]]]:
    return {k: [{"key": c[0], "label": c[1], "num": len(c) > 2} for c in v] for k, v in COLUMNS.items()}


def _measured(v: Any) -> dict[str, Any]:
    n = num_cell(v)
    return table_cell(describe(n) if n is not None else NOT_MEASURED, n)


def section(points: pd.DataFrame, vmap: dict, labels: dict[str, str], cells: pd.DataFrame,
            src: Any, access: dict[str, str] | None = None, images: bool = True) -> dict[str, Any] | None:
    """Rows of the side-by-side table, the EC read amplification rows, RAL's reference rows and
    a plot (not drawn without ``images``); None when the run read nothing."""
    if points.empty or not (points["direction"] == "read").any():
        return None
    read_cells = list(dict.fromkeys(points.loc[points["direction"] == "read", "cell_id"]))
    rows, amp_rows = [], []
    for cid in read_cells:
        mine = points[points["cell_id"] == cid]
        for conc in sorted(set(mine["concurrency"])):
            at = mine[mine["concurrency"] == conc].set_index("direction")
            w = at.loc["write"] if "write" in at.index else None
            r = at.loc["read"] if "read" in at.index else None
            wr, rr = (w["rate"] if w is not None else math.nan), (r["rate"] if r is not None else math.nan)
            wv, rv = vmap.get((cid, conc, "write")), vmap.get((cid, conc, "read"))
            figs = {}
            if w is not None:
                figs["write_rate"] = (w["source"], wr, gbps_num(wr))
            if r is not None:
                figs["read_rate"] = (r["source"], rr, gbps_num(rr))
            n = src.add(f"reads and writes: cell {cid} at concurrency {conc}", figs)
            ratio = rr / wr if num_cell(rr) is not None and num_cell(wr) else math.nan
            rows.append({"cell": table_cell(labels.get(cid, cid), title=f"cell id {cid}"),
                         "access": (access or {}).get(cid) or "–",
                         "conc": table_cell(str(int(conc)), conc), "write": rate_cell(wr), "read": rate_cell(rr),
                         "ratio": table_cell(fmt_num(ratio), num_cell(ratio)),
                         "wv": verdict_cell(wv.verdict) if wv is not None else "–",
                         "rv": verdict_cell(rv.verdict) if rv is not None else "–", "_src": n})
            if rv is not None and cid in cells.index and cells.loc[cid, "backend"] != "tmpfs":
                amp_rows.append(_amp_row(cid, conc, cells.loc[cid], load_evidence(rv.evidence),
                                         labels, src))
    return {"rows": rows, "amp_rows": amp_rows, "ral_rows": _ral_rows(), "ral": RAL_GATEWAY,
            "uri": _plot(points[points["cell_id"].isin(read_cells)], labels) if images else None}


def _amp_row(cid: str, conc: float, cell, ev: dict[str, Any], labels: dict[str, str],
             src: Any) -> dict[str, Any]:
    sources = ev.get("sources") or {}
    figs = {}
    if sources.get("read_amplification"):
        figs["read_amplification"] = (sources["read_amplification"], ev.get("read_amplification"),
                                      fmt_num(ev.get("read_amplification")))
    if sources.get("rep_read_amplification"):
        figs["rep_read_amplification"] = (sources["rep_read_amplification"],
                                          ev.get("rep_read_amplification"),
                                          fmt_num(ev.get("rep_read_amplification")))
    n = src.add(f"read amplification: cell {cid} at concurrency {conc}", figs)
    ec = cell["pool_kind"] == "erasure"
    return {"cell": table_cell(labels.get(cid, cid), title=f"cell id {cid}"),
            "conc": table_cell(str(int(conc)), conc), "pool": cell["pool_label"] or "–",
            "shards": table_cell(fmt_num(ev.get("read_shards_expected")), num_cell(ev.get("read_shards_expected"))),
            "amp": _measured(ev.get("read_amplification")),
            "rep_amp": _measured(ev.get("rep_read_amplification")) if ec else table_cell("–"),
            "pool_amp": _measured(ev.get("pool_read_per_logical")),
            "ec_ratio": table_cell(fmt_num(ev.get("ec_ratio")), num_cell(ev.get("ec_ratio"))) if ec else table_cell("–"),
            "_src": n}


def _ral_rows() -> list[dict[str, Any]]:
    return [{"files": table_cell(str(r["files"]), r["files"]),
             "write": table_cell(fmt_num(r["write_gbps"]), r["write_gbps"]),
             "read": table_cell(fmt_num(r["read_gbps"]), r["read_gbps"]),
             "ratio": table_cell(fmt_num(r["read_over_write"]), r["read_over_write"])}
            for r in ral_gateway_rows()]


def _plot(points: pd.DataFrame, labels: dict[str, str]) -> str | None:
    """Rate vs concurrency per cell, writes solid and reads dashed (Gb/s), with RAL's one-gateway
    XrdBlackhole figures (grey, right axis in Gb/s) for reference."""
    if points.empty:
        return None
    import seaborn as sns
    fig, ax = new_figure(8.0, 4.0)
    cids = list(dict.fromkeys(points["cell_id"]))
    for cid, color in zip(cids, sns.color_palette("tab10", max(len(cids), 1)), strict=False):
        for d, ls in (("write", "-"), ("read", "--")):
            s = points[(points["cell_id"] == cid) & (points["direction"] == d)].sort_values("concurrency")
            if s.empty:
                continue
            ax.plot(s["concurrency"], s["rate"].to_numpy(dtype=float) * 8 / 1e9, ls=ls, marker="o", ms=4,
                    color=color, label=f"{labels.get(cid, cid)} {d}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrency (transfers / parallel files in flight)")
    ax.set_ylabel("steady rate (Gb/s)")
    ax.set_ylim(bottom=0)
    ref = ax.twinx()
    for d, ls in (("write", "-"), ("read", "--")):
        r = RAL_GATEWAY[d]
        ref.plot(r["files"], r["gbps"], ls=ls, color="0.6", lw=1, marker="s", ms=3,
                 label=f"RAL XrdBlackhole {d} (1 gateway)")
    ref.set_ylabel("RAL published (Gb/s)", color="0.4")
    ref.set_ylim(bottom=0)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ref.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left", bbox_to_anchor=(1.12, 1.0), frameon=False)
    levels = sorted(set(points["concurrency"]) | set(RAL_GATEWAY["read"]["files"]))
    ax.set_xticks(levels, [str(int(c)) for c in levels])
    return fig_to_data_uri(fig)

