"""fio probe rows summarised per job, and the storage ceilings of each cell per direction.

- :func:`probe_jobs`: one row per (cell, fio job, rw): the 'all' row fio's client/server mode
  gives (xcbench.probe.fio.ALL), else the sum over hosts; ``query`` selects the rows it comes from.
- :func:`probe_ceilings`: per cell, the write ceilings (best write job by bandwidth, best by
  IOPS, and the storage device's write IO/s during that IOPS job where they were counted) and the read ceilings (the same over the read jobs: the sequential read of what the
  write probe laid out, and the random read of the access size), each with its source.
- :func:`level_table`, :func:`apply_level`: the level probes (xcbench.probe.levels), one write
  ceiling per cell, level and target (mount, pool) with its relative standard error; a probe
  during which the host's cores were full (CPU_FULL) is CPU-bound and no storage ceiling;
  :func:`chain_vs_probe` and :func:`doubted`: where the chain beats its probe beyond both
  noises, every probe made the same way in the run is in doubt, and the verdicts say so.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from xcbench.analysis.verdicts import borderline as _bl
from xcbench.analysis.verdicts.rules import NEAR, pct
from xcbench.analysis.verdicts.sources import source
from xcbench.backends.base import backend_class
from xcbench.cell import BACKENDS
from xcbench.figures import stats as _stats
from xcbench.figures.numbers import is_finite
from xcbench.figures.units import size_or_none

WRITE_RW = ("write", "randwrite", "trimwrite")
DEVICE_COLS = ("device_write_iops", "device_write_bytes_per_s")  # what a job made the storage device do  # fio rw, or the direction of "randrw.write"
READ_RW = ("read", "randread")
COLS = ["cell_id", "job", "rw", "write", "bs", "iodepth", "hosts", "iops", "bw",
        "lat_mean_us", "lat_p99_us", "device_write_iops", "device_write_bytes_per_s", "query"]


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
                device_write_bytes_per_s=("device_write_bytes_per_s", "max"),
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
        # the IOPS job's block size: an IOPS figure holds ops of that size only (analysis.verdicts.rules)
        f"{prefix}iops_bs": float(size_or_none(i["bs"]) or math.nan) if i is not None else math.nan,
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
    b = _best(w.assign(device_write_bytes_per_s=pd.to_numeric(w["device_write_bytes_per_s"], errors="coerce")),
              "device_write_bytes_per_s") if len(w) else None
    if b is None or not pd.notna(b["device_write_bytes_per_s"]):
        return {"write_device_bytes_per_s": math.nan, "device_bytes_per_s_source": None}
    return {"write_device_bytes_per_s": float(b["device_write_bytes_per_s"]),
            "device_bytes_per_s_source": source(
                run_id, "probes", b["query"], "device_write_bytes_per_s", "max",
                note=f"the storage device's write bytes/s during fio's {b['job']} job")}


CEILING_COLS = ["cell_id", "write_bw", "write_bw_job", "write_iops", "write_iops_job", "write_iops_bs",
                "read_iops_bs",
                "bw_source", "iops_source", "read_bw", "read_bw_job", "read_iops",
                "read_iops_job", "read_bw_source", "read_iops_source",
                "write_device_iops", "device_iops_source", "read_device_iops", "read_device_iops_source",
                "write_device_bytes_per_s", "device_bytes_per_s_source"]


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
    nb = pd.to_numeric(mine["device_write_bytes_per_s"], errors="coerce").dropna() \
        if "device_write_bytes_per_s" in mine else pd.Series(dtype=float)
    q = f"cell_id == {_q(cell_id)} & concurrency == {_q(concurrency)}"
    return (float(ios.mean()), float(nb.mean()) if len(nb) else math.nan,
            source(run_id, "campaigns", q, "device_write_iops", "mean",
                   note="the storage device's write IO/s (device_write_bytes_per_s: bytes/s) over the level"))


# --- level probes (xcbench.probe.levels): one ceiling per cell, level and target -------------

# a probe during which the host's cores were this busy measured the host, not the storage: the
# line the host-cpu rule draws (analysis.verdicts.rules.NEAR)
CPU_FULL = NEAR
LEVEL_COLS = ["cell_id", "concurrency", "target", "job", "bw", "bw_fio", "bw_rel_se", "bw_cv",
              "bw_n", "host_busy", "host_cores", "osd_cores", "cpu_bound", "settled", "settle_s",
              "wall_s", "engine", "direct", "method", "query"]


def _column(df: pd.DataFrame, col: str) -> pd.Series:
    return pd.to_numeric(df[col], errors="coerce") if col in df else pd.Series(math.nan, index=df.index)


def level_table(pr: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell, level, target) level probe: the ceiling (the steady mean of fio's
    interval samples, else fio's figure), its relative standard error, the CPU during it,
    whether it was CPU-bound, and the method (engine, direct, target) it was made with."""
    if pr.empty or "concurrency" not in pr or "target" not in pr:
        return pd.DataFrame(columns=LEVEL_COLS)
    lv = pr[pd.to_numeric(pr["concurrency"], errors="coerce").notna() & pr["target"].notna()]
    lv = lv[lv["rw"].astype(str) == "write"]
    if lv.empty:
        return pd.DataFrame(columns=LEVEL_COLS)
    steady = _column(lv, "bw_steady")
    fio_bw = _column(lv, "bw")
    busy = _column(lv, "host_busy")
    out = pd.DataFrame({
        "cell_id": lv["cell_id"].astype(str), "concurrency": _column(lv, "concurrency"),
        "target": lv["target"].astype(str), "job": lv["job"].astype(str),
        "bw": steady.where(steady.notna() & (steady > 0), fio_bw), "bw_fio": fio_bw,
        "bw_rel_se": _column(lv, "bw_rel_se"), "bw_cv": _column(lv, "bw_cv"), "bw_n": _column(lv, "bw_n"),
        "host_busy": busy, "host_cores": _column(lv, "host_cores"), "osd_cores": _column(lv, "osd_cores"),
        "cpu_bound": busy >= CPU_FULL,
        "settled": lv["settled"] if "settled" in lv else pd.Series(pd.NA, index=lv.index),
        "settle_s": _column(lv, "settle_s"), "wall_s": _column(lv, "wall_s"),
        "engine": lv["engine"].astype(str),
        "direct": lv["direct"].astype(str).str.lower().isin(("true", "1")),
    })
    out["method"] = [f"{t}: fio {e}{', direct I/O' if d else ''}"
                     for t, e, d in zip(out["target"], out["engine"], out["direct"], strict=True)]
    out["query"] = [f"cell_id == {_q(c)} & job == {_q(j)}" for c, j in zip(out["cell_id"], out["job"], strict=True)]
    return out[LEVEL_COLS].reset_index(drop=True)


def path_target(backend: str) -> str:
    """The level probe that lies on the gateway's path: the pool for XrdCeph (rados), else
    the mount."""
    return backend_class(backend).gateway_writes_to if backend in BACKENDS else "mount"


def _point_rel_se(p: pd.Series) -> float:
    return _stats.point_rel_se(p)


def chain_vs_probe(levels: pd.DataFrame, points: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """Per write point with a level probe on its path: the chain's rate R, the probe's ceiling F,
    R / F and its one-sided CONFIDENCE interval from both errors, and whether the chain beats the
    probe beyond their noise (the interval's low end above 1)."""
    cols = ["cell_id", "concurrency", "rate", "rate_rel_se", "bw", "bw_rel_se", "share",
            "share_low", "share_high", "beats", "cpu_bound", "method", "host_busy"]
    if levels.empty or points.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for p in points.to_dict("records"):
        if (p.get("direction") or "write") != "write" or p["cell_id"] not in cells.index:
            continue
        want = path_target(str(cells.loc[p["cell_id"], "backend"]))
        m = levels[(levels["cell_id"] == p["cell_id"]) & (levels["concurrency"] == float(p["concurrency"]))
                   & (levels["target"] == want)]
        if m.empty or not (is_finite(p["rate"]) and is_finite(m.iloc[0]["bw"]) and m.iloc[0]["bw"] > 0):
            continue
        lv = m.iloc[0]
        se_r = _point_rel_se(pd.Series(p))
        se = _bl.combined(se_r, lv["bw_rel_se"])
        share = p["rate"] / lv["bw"]
        lo, hi = _bl.interval(share, se)
        rows.append({"cell_id": p["cell_id"], "concurrency": p["concurrency"], "rate": p["rate"],
                     "rate_rel_se": se_r, "bw": lv["bw"], "bw_rel_se": lv["bw_rel_se"],
                     "share": share, "share_low": lo, "share_high": hi, "beats": bool(lo > 1.0),
                     "cpu_bound": bool(lv["cpu_bound"]), "method": lv["method"],
                     "host_busy": lv["host_busy"]})
    return pd.DataFrame(rows, columns=cols)


def doubted(table: pd.DataFrame) -> dict[str, str]:
    """{method: why} for the probe methods the chain beat beyond noise somewhere in the run:
    every probe made that way in the run is in doubt."""
    out: dict[str, str] = {}
    if table.empty:
        return out
    for method, g in table[table["beats"].astype(bool)].groupby("method", sort=False):
        where = ", ".join(f"{c} c={int(n)} ({pct(s)})" for c, n, s
                          in zip(g["cell_id"], g["concurrency"], g["share"], strict=True))
        out[str(method)] = (f"the chain beat the level probes made the same way ({method}) beyond "
                            f"their noise at {where}: that method's ceilings are in doubt")
    return out


def apply_level(rd: Any, cid: str, conc: Any, ev: dict[str, Any], src: dict[str, Any]) -> None:
    """The write ceiling of this level's probe on the gateway's path into ``ev`` (replacing the
    cell's one probe where the run has level probes): fio_bw and its own fio_bw_rel_se, the
    pool's ceiling measured apart, the CPU during the probe. A CPU-bound probe is no storage
    ceiling (fio_bw left out, fio_note says why); a method the chain beat casts doubt
    (probe_doubt)."""
    cache = rd.__dict__.setdefault("_level_probes", {})
    if "levels" not in cache:
        cache["levels"] = level_table(rd.probes)
        cache["doubt"] = doubted(chain_vs_probe(cache["levels"], rd.points, rd.cells))
    lv = cache["levels"]
    mine = lv[(lv["cell_id"] == cid) & (lv["concurrency"] == float(conc))]
    if mine.empty:
        return
    by = {r["target"]: r for r in mine.to_dict("records")}
    if "pool" in by and is_finite(by["pool"]["bw"]):
        ev.update(fio_pool_bw=by["pool"]["bw"], fio_pool_bw_rel_se=by["pool"]["bw_rel_se"],
                  fio_pool_cpu_bound=bool(by["pool"]["cpu_bound"]))
        src["fio_pool_bw"] = source(rd.run_id, "probes", by["pool"]["query"], "bw_steady", "sum",
                                    note="fio rados engine on the pool at this level; B/s")
    path = by.get(path_target(str(ev.get("backend"))))
    if path is None:
        return
    ev.update(fio_level=True, fio_bw_job=path["job"], fio_bw_rel_se=path["bw_rel_se"],
              fio_host_busy=path["host_busy"], fio_osd_cores=path["osd_cores"],
              fio_cpu_bound=bool(path["cpu_bound"]), fio_method=path["method"])
    if path["cpu_bound"]:
        ev.pop("fio_bw", None)
        src.pop("fio_bw", None)
        ev["fio_note"] = (f"the level's fio probe was CPU-bound (host {pct(path['host_busy'])} busy"
                          + (f", OSDs {path['osd_cores']:.2f} cores" if is_finite(path["osd_cores"]) else "")
                          + "): no storage ceiling")
    else:
        ev["fio_bw"] = path["bw"]
        src["fio_bw"] = source(rd.run_id, "probes", path["query"], "bw_steady", "sum",
                               note="fio at this level, as the gateway writes: steady mean of its "
                                    "interval samples; B/s")
    why = cache["doubt"].get(path["method"])
    if why:
        ev["probe_doubt"] = why
