"""Gateway CPU per GB, measured, and the cores a gateway needs for it.

A run records, per cell and transfer mode, the CPU seconds its gateway processes used per 1e9
bytes moved (``campaigns.gateway_cpu_s_per_gb``); benchmarks/bench_campaign.py prints the same
figure ("gateway CPU x s/GB"), which ``--gateway-cpu CHECKSUM/MODE=S`` takes. The checksum kind
matters most (adler32 while the data passes, or a read-back after the write) and TPC runs the
transfer client inside the gateway, so the figures are kept apart by (checksum, mode):

    cores per gateway = per-gateway rate (GB/s) x CPU s/GB / --cpu-utilisation

The checksum kind comes from ``campaigns.gateway_checksum`` if the run wrote it, else from the
cell: none when the campaign asks no target checksum, on-the-fly where the gateway's tunables
(the backend's defaults under the cell's) keep cksio on (XrdCeph sums while the data passes: the
rados backend), read-back otherwise (xrootd reads the file again).
The US-CMS study is printed beside as the reference (USCMS_REFERENCE).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from xcbench.backends.base import backend_class
from xcbench.cell import Cell
from xcbench.errors import XcbError
from xcbench.plan.storage import ceil_count

CHECKSUM_KINDS = ("none", "on-the-fly", "read-back")
MODES = ("push", "tpc")
USCMS_SOURCE = ("A. Arora et al., 'Benchmarking XRootD-HTTPS on 400Gbps Links with Variable Latencies', "
                "CHEP 2024, EPJ Web Conf. (2025), arXiv:2508.00228")
USCMS_REFERENCE = {
    "source": USCMS_SOURCE,
    "figures": "~4 origins / 64 cores for 100 Gb/s at long RTT; one server capped near 260 Gb/s "
               "(as quoted to xcbench; not re-read from the paper by xcbench)",
    "derived": "64 cores / 12.5 GB/s = at most 5.1 core-s/GB (if every core was busy); 100 Gb/s / 4 "
               "origins = ~25 Gb/s per origin",
    "core_s_per_gb_max": 64 / 12.5, "per_origin": 100e9 / 8 / 4, "server_cap": 260e9 / 8,
}


def cell_checksum(cell: Cell | None, row_value: Any = None) -> str:
    """none | on-the-fly | read-back: how the gateway of a cell computed the target checksum
    (``cell`` None: a cell stored without its settings, with the defaults)."""
    if isinstance(row_value, str) and row_value in CHECKSUM_KINDS:
        return row_value
    if cell is not None and str(cell.campaign.get("checksum", "both")) in ("none", "source"):
        return "none"
    if cell is None:
        return "read-back"
    # cksio: the OSS plugin sums as the data passes (XrdCeph's +cksio), where the backend has one
    defaults = backend_class(cell.backend).target_defaults["gateway_defaults"]
    on = "cksio" in defaults and {**defaults, **cell.gateway_settings}["cksio"]
    return "on-the-fly" if on else "read-back"


def plan_mode(mode: str) -> str:
    """A run's transfer mode (push, tpc-root, tpc-http) as the planner's push | tpc."""
    return "push" if str(mode) == "push" else "tpc"


CAPPED_BY = ("host-cpu", "client")  # verdicts that say the rate was held outside the gateway


def _security(g, cell: Cell | None) -> str:
    if "security" in g:
        vals = [str(v) for v in g["security"].dropna().unique()]
        if vals:
            return vals[0]
    return cell.security if cell is not None else "none"


def gateway_cpu_rows(run_name: str, df, cells: Mapping[str, Cell], verdicts=None) -> list[dict]:
    """Median CPU/GB per (cell, mode, security) of a run's ``campaigns`` table (``cells``: the
    run's, RunData.cell_objects); ``verdicts`` (the run's table) marks the cells whose rate was
    capped by something else than the gateway."""
    out = []
    import pandas as pd
    df = df.assign(gateway_cpu_s_per_gb=pd.to_numeric(df["gateway_cpu_s_per_gb"], errors="coerce"))
    df = df[df["gateway_cpu_s_per_gb"] > 0]
    capped: dict[str, list[str]] = {}
    if verdicts is not None and len(verdicts):
        v = verdicts[verdicts["verdict"].isin(CAPPED_BY) & verdicts["direction"].ne("read")]
        for r in v.to_dict("records"):
            capped.setdefault(str(r["cell_id"]), []).append(f"c={int(r['concurrency'])} {r['verdict']}")
    for (cid, mode), g in df.groupby(["cell_id", "mode"]):
        cell = cells.get(cid)
        kind = cell_checksum(cell, g["gateway_checksum"].iloc[0] if "gateway_checksum" in g else None)
        levels = sorted({int(c) for c in g["concurrency"]}) if "concurrency" in g else []
        label = cell.label if cell else cid
        out.append({
            "checksum": kind, "mode": plan_mode(mode), "security": _security(g, cell),
            "s_per_gb": float(g["gateway_cpu_s_per_gb"].astype(float).median()),
            "cell": f"{run_name} cell {cid} ({label})", "capped": capped.get(str(cid), []),
            "from": f"{run_name} cell {cid} ({label}, {mode}, c={','.join(map(str, levels))}), "
                    f"median of {len(g)} campaign(s)"})
    return out


def pick_gateway_cpu(entries: list[dict], checksum: str, mode: str, security: str = "none") -> dict | None:
    """The measured CPU/GB for exactly this checksum kind, mode and security mode (the highest
    if several)."""
    same = [e for e in entries if e["checksum"] == checksum and e["mode"] == mode
            and e.get("security", "none") == security]
    return max(same, key=lambda e: e["s_per_gb"]) if same else None


def parse_gateway_cpu(items: list[str]) -> list[dict]:
    """``--gateway-cpu CHECKSUM/MODE=S`` (e.g. on-the-fly/push=1.59) -> entries; XcbError names it."""
    out = []
    for item in items or ():
        key, eq, val = item.partition("=")
        kind, slash, mode = key.partition("/")
        try:
            v = float(val.strip().split()[0]) if eq else -1.0
        except (ValueError, IndexError):
            v = -1.0
        if not eq or not slash or kind not in CHECKSUM_KINDS or mode not in ("push", "tpc") \
                or not (math.isfinite(v) and v > 0):
            raise XcbError(f"--gateway-cpu {item!r}: write CHECKSUM/MODE=SECONDS_PER_GB with CHECKSUM "
                           f"one of {', '.join(CHECKSUM_KINDS)} and MODE push or tpc, e.g. "
                           "on-the-fly/push=1.59")
        out.append({"checksum": kind, "mode": mode, "s_per_gb": v, "from": "--gateway-cpu"})
    return out


def cores_rows(entries: list[dict], per_gateway: float, cpu_utilisation: float) -> list[dict]:
    """Cores per gateway at the planned per-gateway rate and at 100 Gb/s, per (checksum, mode):
    every pair for security none (measured or not), and the measured pairs of the other modes."""
    rows: list[dict[str, Any]] = []
    secs = ["none"] + sorted({e.get("security", "none") for e in entries} - {"none"})
    for sec in secs:
        for kind in CHECKSUM_KINDS:
            for mode in MODES:
                e = pick_gateway_cpu(entries, kind, mode, sec)
                if e is None:
                    if sec == "none":
                        rows.append({"checksum": kind, "mode": mode, "security": sec, "s_per_gb": None,
                                     "s_per_gb_text": "not measured", "cores": None, "cores_text": "–",
                                     "cores_100g_text": "–", "from": ""})
                    continue
                c = per_gateway / 1e9 * e["s_per_gb"] / cpu_utilisation
                c100 = 12.5 * e["s_per_gb"] / cpu_utilisation
                rows.append({"checksum": kind, "mode": mode, "security": sec, "s_per_gb": e["s_per_gb"],
                             "s_per_gb_text": f"{e['s_per_gb']:.3g}", "cores": ceil_count(c),
                             "cores_text": f"{ceil_count(c)} ({c:.3g})", "cores_100g_text": f"{ceil_count(c100)}",
                             "from": e["from"]})
    return rows


def sizing(entries: list[dict], rate: float, cores_per_gateway: int, cpu_utilisation: float,
           datasheet_s_per_gb: float) -> dict[str, Any]:
    """Gateways and cores for ``rate`` (B/s) from each measured CPU/GB, beside the datasheet
    figure and the US-CMS reference; warnings for cells whose rate something else capped.

        cores    = rate (GB/s) x s/GB / cpu_utilisation
        gateways = ceil(cores / cores per gateway of the spec)   (CPU only: NICs may need more)
    """
    def row(what: str, s: float, src: str, **extra: Any) -> dict[str, Any]:
        cores = rate / 1e9 * s / cpu_utilisation
        return {"what": what, "s_per_gb": s, "s_per_gb_text": f"{s:.3g}", "cores": ceil_count(cores),
                "gateways": max(1, ceil_count(cores / cores_per_gateway)), "from": src, **extra}
    rows = []
    for e in sorted(entries, key=lambda e: (e.get("security", "none") != "none", e.get("security", "none"),
                                            e["checksum"], e["mode"])):
        rows.append(row(f"measured {e['checksum']}/{e['mode']}/{e.get('security', 'none')}", e["s_per_gb"],
                        e["from"], measured=True))
    rows.append(row("datasheet (core_rate, checksum_rate of the gateway spec)", datasheet_s_per_gb,
                    "the gateway spec", measured=False))
    ref = USCMS_REFERENCE
    ref_cores = 64 * rate / 12.5e9
    warnings = [f"{e['cell']}: rate capped by {', '.join(e['capped'])}: its CPU per GB holds, its rate "
                "does not (it is no per-gateway ceiling)" for e in entries if e.get("capped")]
    return {"rate": rate, "rate_gbps": rate * 8 / 1e9, "cores_per_gateway": cores_per_gateway,
            "cpu_utilisation": cpu_utilisation, "rows": rows, "warnings": warnings,
            "reference": f"US-CMS: ~4 origins / 64 cores for 100 Gb/s at long RTT (<= {ref['core_s_per_gb_max']:.2g} "
                         f"core-s/GB); scaled to this rate: {ceil_count(ref_cores)} cores; one origin could not "
                         "reach 100 Gb/s; one server capped near 260 Gb/s",
            "cells": sorted({e["cell"] for e in entries if e.get("cell")})}


def measured(rows: list[dict[str, Any]]) -> bool:
    return any(r["s_per_gb"] is not None for r in rows)
