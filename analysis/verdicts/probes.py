"""fio probe rows summarised per job, and the storage ceilings of each cell per direction.

- :func:`probe_jobs`: one row per (cell, fio job, rw): the 'all' row fio's client/server mode
  gives (xcbench.probe.fio.ALL), else the sum over hosts; ``query`` selects the rows it comes from.
- :func:`probe_ceilings`: per cell, the write ceilings (best write job by bandwidth, best by
  IOPS, and the storage device's write IO/s during that IOPS job where they were counted) and the read ceilings (the same over the read jobs: the sequential read of what the
  write probe laid out, and the random read of the access size), each with its source.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from xcbench.analysis.verdicts.sources import source

WRITE_RW = ("write", "randwrite", "trimwrite")
DEVICE_COLS = ("device_write_iops", "device_write_Bps")  # what a job made the storage device do  # fio rw, or the direction of "randrw.write"
READ_RW = ("read", "randread")
COLS = ["cell_id", "job", "rw", "write", "bs", "iodepth", "hosts", "iops", "bw",
        "lat_mean_us", "lat_p99_us", "device_write_iops", "device_write_Bps", "query"]


def _q(v: Any) -> str:
    return json.dumps(v) if isinstance(v, str) else repr(v)


def _ddir(rw: pd.Series) -> pd.Series:
    return rw.astype(str).str.rsplit(".", n=1).str[-1]


def probe_jobs(pr: pd.DataFrame) -> pd.DataFrame:
    if pr.empty:
        return pd.DataFrame(columns=COLS)
    pr = pr.assign(rw=pr["rw"].astype(str), job=pr["job"].astype(str),
                   _all=pr["host"].astype(str).eq("all"),
                   **{c: pd.to_numeric(pr[c], errors="coerce") if c in pr else math.nan
                      for c in DEVICE_COLS})
    keys = ["cell_id", "job", "rw"]
    has_all = pr.groupby(keys, sort=False)["_all"].transform("any")
    use = pr[pr["_all"] | ~has_all]
    g = use.groupby(keys, sort=False)
    out = g.agg(bs=("bs", "first"), iodepth=("iodepth", "first"), iops=("iops", "sum"),
                bw=("bw", "sum"), lat_mean_us=("lat_mean_us", "mean"),
                lat_p99_us=("lat_p99_us", "max"), device_write_iops=("device_write_iops", "max"),
                device_write_Bps=("device_write_Bps", "max"),
                _all=("_all", "any")).reset_index()
    out["hosts"] = pr[~pr["_all"]].groupby(keys, sort=False)["host"].nunique().reindex(
        pd.MultiIndex.from_frame(out[keys])).fillna(0).astype(int).to_numpy()
    out["write"] = _ddir(out["rw"]).isin(WRITE_RW)
    out["query"] = [f"cell_id == {_q(c)} & job == {_q(j)} & rw == {_q(r)}"
                    + (" & host == 'all'" if a else "")
                    for c, j, r, a in zip(out["cell_id"], out["job"], out["rw"], out["_all"], strict=True)]
    return out[COLS]


def _best(g: pd.DataFrame, col: str) -> pd.Series | None:
    return g.loc[g[col].idxmax()] if len(g) and g[col].notna().any() else None


def _figures(run_id: str, g: pd.DataFrame, io: str, prefix: str, src_prefix: str) -> dict[str, Any]:
    b, i = _best(g, "bw"), _best(g, "iops")
    return {
        f"{prefix}bw": float(b["bw"]) if b is not None else math.nan,
        f"{prefix}bw_job": b["job"] if b is not None else None,
        f"{prefix}iops": float(i["iops"]) if i is not None else math.nan,
        f"{prefix}iops_job": i["job"] if i is not None else None,
        f"{src_prefix}bw_source": source(run_id, "probes", b["query"], "bw", "sum",
                                         note=f"fio {io} bandwidth (all hosts); B/s") if b is not None else None,
        f"{src_prefix}iops_source": source(run_id, "probes", i["query"], "iops", "sum",
                                           note=f"fio {io} IOPS (all hosts)") if i is not None else None,
        # the storage device's write IO/s while that IOPS job ran (where the runner counted them)
        f"{prefix}device_iops": float(i["device_write_iops"]) if i is not None
        and pd.notna(i["device_write_iops"]) else math.nan,
        f"{src_prefix}device_iops_source": source(
            run_id, "probes", i["query"], "device_write_iops", "max",
            note="the storage device's write IO/s during the IOPS job") if i is not None
        and pd.notna(i["device_write_iops"]) else None,
    }


def _device_bytes(run_id: str, w: pd.DataFrame) -> dict[str, Any]:
    """The most write bytes/s any write job made the storage device do (its bytes ceiling as
    the probe reached it), where counted."""
    b = _best(w.assign(device_write_Bps=pd.to_numeric(w["device_write_Bps"], errors="coerce")),
              "device_write_Bps") if len(w) else None
    if b is None or not pd.notna(b["device_write_Bps"]):
        return {"write_device_Bps": math.nan, "device_Bps_source": None}
    return {"write_device_Bps": float(b["device_write_Bps"]),
            "device_Bps_source": source(run_id, "probes", b["query"], "device_write_Bps", "max",
                                        note=f"the storage device's write bytes/s during fio's {b['job']} job")}


CEILING_COLS = ["cell_id", "write_bw", "write_bw_job", "write_iops", "write_iops_job",
                "bw_source", "iops_source", "read_bw", "read_bw_job", "read_iops",
                "read_iops_job", "read_bw_source", "read_iops_source",
                "write_device_iops", "device_iops_source", "read_device_iops", "read_device_iops_source",
                "write_device_Bps", "device_Bps_source"]


def probe_ceilings(jobs: pd.DataFrame, run_id: str) -> pd.DataFrame:
    """Per cell (index cell_id): write_* and read_* bandwidth/IOPS ceilings, jobs and sources
    (write sources keep their old names ``bw_source``/``iops_source``). A cell probed in one
    direction only has NaN/None in the other."""
    if jobs.empty:
        return pd.DataFrame(columns=CEILING_COLS).set_index("cell_id", drop=False)
    ddir = _ddir(jobs["rw"])
    rows = []
    for cid in dict.fromkeys(jobs["cell_id"]):
        mine = jobs["cell_id"] == cid
        w, r = jobs[mine & ddir.isin(WRITE_RW)], jobs[mine & ddir.isin(READ_RW)]
        if w.empty and r.empty:
            continue
        rows.append({"cell_id": cid, **_figures(run_id, w, "write", "write_", ""),
                     **_figures(run_id, r, "read", "read_", "read_"), **_device_bytes(run_id, w)})
    return pd.DataFrame(rows, columns=CEILING_COLS).set_index("cell_id", drop=False)


def level_device(campaigns: pd.DataFrame, run_id: str, cell_id: str,
                 concurrency: Any) -> tuple[float, float, dict[str, Any] | None]:
    """(the storage device's write IO/s and bytes/s over a level, means over its repeats; their
    source), or NaNs and None where the runner did not count them (campaigns.device_write_*)."""
    if campaigns.empty or "device_write_iops" not in campaigns:
        return math.nan, math.nan, None
    mine = campaigns[(campaigns["cell_id"] == cell_id)
                     & (pd.to_numeric(campaigns["concurrency"], errors="coerce") == float(concurrency))]
    ios = pd.to_numeric(mine["device_write_iops"], errors="coerce").dropna()
    if ios.empty:
        return math.nan, math.nan, None
    nb = pd.to_numeric(mine["device_write_Bps"], errors="coerce").dropna() \
        if "device_write_Bps" in mine else pd.Series(dtype=float)
    q = f"cell_id == {_q(cell_id)} & concurrency == {_q(concurrency)}"
    return (float(ios.mean()), float(nb.mean()) if len(nb) else math.nan,
            source(run_id, "campaigns", q, "device_write_iops", "mean",
                   note="the storage device's write IO/s (device_write_Bps: bytes/s) over the level"))
