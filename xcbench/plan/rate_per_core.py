"""Rate per core from a run's ``cores`` sweep (each origin under a CPU quota of ``cores``).

A cell whose gateway used its whole quota moved ``rate`` with ``origins x cores`` cores: its
rate per core is what one core of gateway buys, and the planner sizes gateways with it as CPU
seconds per GB (``1e9 / rate per core``), beside the figures the campaigns measured without a
quota. A cell whose gateway stayed below its quota (measured ``gateway_cpu_s_per_gb`` x rate
< BOUND x quota) was held by something else: it gives no rate per core, and says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from xcbench.cell import Cell
from xcbench.plan.gateway_cores import cell_checksum, plan_mode

BOUND = 0.9  # a gateway using at least 90 % of its quota was held by it (CFS grants whole periods)


def rate_per_core_rows(run_name: str, cells: Mapping[str, Cell], rates: dict[tuple[str, int], float],
                       campaigns: Any = None, samples: Any = None) -> tuple[list[dict], list[str]]:
    """(rows for Calibration.gateway_cpu, notes): one row per quota-held cores cell, at its
    best level. ``cells``: the run's (RunData.cell_objects); ``rates``: (cell_id, concurrency)
    -> rate (B/s); ``campaigns``: the run's campaigns table (for the gateway CPU it measured),
    or None."""
    rows, notes = [], []
    for cid, cell in cells.items():
        cores = cell.cores
        if not cores:
            continue
        levels = {c: r for (k, c), r in rates.items() if k == cid and r > 0}
        if not levels:
            continue
        conc, rate = max(levels.items(), key=lambda kv: kv[1])
        quota = float(cores) * cell.origins
        used = _cores_used(campaigns, cid, conc, rate)
        busiest = _busiest_origin(samples, cid)
        label = cell.label
        if used is not None and used < BOUND * quota:
            notes.append(f"{run_name} cell {cid} ({label}): gateway used {used:.3g} of its {quota:g} "
                         "cores: not held by its quota, no rate per core from it")
            continue
        if used is None and busiest is not None and busiest < BOUND * float(cores):
            notes.append(f"{run_name} cell {cid} ({label}): its busiest origin used {busiest:.3g} of "
                         f"its {float(cores):g} cores (p90 of 1-s samples): not held by its quota, "
                         "no rate per core from it")
            continue
        per_core = rate / quota
        rows.append({"checksum": cell_checksum(cell), "mode": plan_mode(cell.mode),
                     "s_per_gb": 1e9 / per_core, "rate_per_core": per_core, "cores": quota,
                     "from": f"{run_name} cell {cid} ({label}): {rate / 1e9:.3g} GB/s with "
                             f"{quota:g} cores (cores sweep, c={conc})"})
    return rows, notes


def _busiest_origin(samples: Any, cid: str) -> float | None:
    """90th percentile of the busiest xrootd's CPU (cores) over the cell's 1-s gateway samples."""
    if samples is None or not len(samples) or "sampler" not in samples:
        return None
    x = samples[(samples["cell_id"] == cid) & (samples["sampler"] == "gateway")
                & (samples["metric"] == "proc.cpu_seconds.rate")]
    x = x[x["labels"].astype(str).str.contains('"xrootd')]
    if not len(x):
        return None
    return float(x.groupby("labels")["value"].quantile(0.9).max())


def _cores_used(campaigns: Any, cid: str, conc: int, rate: float) -> float | None:
    if campaigns is None or not len(campaigns) or "gateway_cpu_s_per_gb" not in campaigns:
        return None
    g = campaigns[(campaigns["cell_id"] == cid) & (campaigns["concurrency"] == conc)]
    import pandas as pd
    v = pd.to_numeric(g["gateway_cpu_s_per_gb"], errors="coerce")
    v = v[v > 0]
    if not len(v) or not math.isfinite(float(v.median())):
        return None
    return float(v.median()) * rate / 1e9


def add_rate_per_core(cal: Any, run: Any, cells: Mapping[str, Cell], campaigns: Any) -> None:
    """Calibration (xcbench.plan.calibrate) += this run's rate-per-core rows and notes."""
    run_name = run.path.name
    rates = {(c["cell_id"], c["concurrency"]): c["rate"] for c in cal.curve if c["run"] == run_name}
    samples = run.table("samples") if any(c.cores for c in cells.values()) else None
    rows, notes = rate_per_core_rows(run_name, cells, rates, campaigns, samples)
    cal.gateway_cpu += rows
    cal.rate_per_core += rows
    cal.notes += notes
