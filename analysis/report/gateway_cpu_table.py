"""The gateway's CPU seconds per GB, per transfer mode, security mode and direction: the
figure that sizes a gateway (campaigns.gateway_cpu_s_per_gb, xcbench.telemetry.gateway_cpu_meter).

One row per (mode, security, direction): the median over the campaigns of those cells, its
range, how many campaigns, and the ratio to security none of the same mode and direction
(what TLS or a token costs per byte, measured in the same run); for TPC modes also the source
gateway's core-s/GB (it serves the pulls: the TPC push side).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xcbench.figures.units import fmt_num


def section(campaigns: pd.DataFrame | None) -> list[dict[str, Any]]:
    if campaigns is None or not len(campaigns) or "gateway_cpu_s_per_gb" not in campaigns:
        return []
    df = campaigns.assign(s=pd.to_numeric(campaigns["gateway_cpu_s_per_gb"], errors="coerce"))
    df = df[df["s"] > 0]
    if not len(df):
        return []
    med = {k: float(g["s"].median()) for k, g in df.groupby(["mode", "security", "direction"])}
    rows = []
    for (mode, sec, d), s in sorted(med.items()):
        sel = df[(df["mode"] == mode) & (df["security"] == sec) & (df["direction"] == d)]
        g = sel["s"]
        src = pd.to_numeric(sel["source_cpu_s_per_gb"], errors="coerce").dropna() \
            if "source_cpu_s_per_gb" in sel else pd.Series(dtype=float)
        base = med.get((mode, "none", d))
        rows.append({"mode": mode, "security": sec, "direction": d, "s_per_gb": fmt_num(s),
                     "range": f"{fmt_num(float(g.min()))}–{fmt_num(float(g.max()))}", "n": len(g),
                     "vs_none": f"{s / base:.2f}×" if base and sec != "none" else "–",
                     "source": fmt_num(float(src.median())) if len(src) else "–"})
    return rows
