"""Probes as ceilings: does the chain through the gateway stay below the fio probe of its level?

    .venv/bin/python benchmarks/bench_probes.py [--store DIR] [--matrix FILE]
    .venv/bin/python benchmarks/bench_probes.py --from-run RUN

Runs the demo matrix (layouts/quick.yaml) as `xcbench run` does on an embedded mini cluster
(started for it and taken down after), then prints, per storage cell and level: the level probe on the
gateway's path (the mount for CephFS, the pool for XrdCeph) with its relative standard error
from fio's interval samples, the pool's ceiling measured apart (CephFS), the chain's steady
rate with its error, the chain's share of the probe with its one-sided 95 % interval, whether
the chain beats the probe beyond their noise (the interval's low end above 1), the host's and
the OSDs' CPU during the probe (CPU-bound: host >= 85 % busy, no storage ceiling) and the
settle step. Then the count of levels the chain beats (target 0) and the probes' total time
(fio's runs and the settle steps), beside the run's length. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path

import pandas as pd

from xcbench.analysis.verdicts import probes as _probes
from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.run_data import RunData


def gbps(v: float) -> str:
    return f"{v * 8 / 1e9:6.3f}" if isinstance(v, (int, float)) and math.isfinite(v) else "     -"


def pm(se: float) -> str:
    return f"±{se * 100:4.1f}%" if isinstance(se, (int, float)) and math.isfinite(se) else "   ±? "


def run_demo(store: Path, matrix: str | None) -> Path:
    """The matrix run as `xcbench run` runs it (xcbench.run.runner.run_matrix: baseline, probes,
    campaigns; then xcbench.analysis.conclude: verdicts) on an embedded mini cluster started for it and taken down after; the
    run's directory."""
    from xcbench.analysis.conclude import conclude
    from xcbench.analysis.verdicts import between_run
    from xcbench.ceph.mini import MiniCluster
    from xcbench.matrix import load_matrix
    from xcbench.run.runner import RunOptions, run_matrix
    path = Path(matrix) if matrix else Path(str(files("xcbench.layouts") / "quick.yaml"))
    mini = MiniCluster(store / "cluster")
    cluster, _ = mini.up()
    t0 = time.monotonic()
    try:
        run = run_matrix(load_matrix(path, cluster), cluster,
                         RunOptions(store=store / "results", name=f"bench-probes-{int(time.time())}",
                                    report=False, progress=False, between_run=between_run.load()))
        conclude(run)
    finally:
        cluster.close()
        mini.down()
    print(f"run of {path.name}: {time.monotonic() - t0:.0f} s", flush=True)
    return run.path


def probe_seconds(rd: RunData) -> tuple[float, float, float]:
    """(fio's own seconds of the cell jobs, level jobs' wall seconds, settle seconds)."""
    pr = rd.probes
    lv = pr[pd.to_numeric(pr["concurrency"], errors="coerce").notna()] if "concurrency" in pr else pr.iloc[0:0]
    cell_jobs = pr.drop(lv.index)
    return (float(pd.to_numeric(cell_jobs["runtime_s"], errors="coerce").sum()),
            float(pd.to_numeric(lv.get("wall_s", pd.Series(dtype=float)), errors="coerce").sum()),
            float(pd.to_numeric(lv.get("settle_s", pd.Series(dtype=float)), errors="coerce").sum()))


def report(rd: RunData) -> int:
    levels = _probes.level_table(rd.probes)
    table = _probes.chain_vs_probe(levels, rd.points, rd.cells)
    verdicts = verdicts_of(rd)
    cells = rd.cells
    print(f"run {rd.run.path}")
    print(f"{'cell':<36} {'c':>2} {'probe Gb/s':>16} {'pool Gb/s':>16} {'chain Gb/s':>16} "
          f"{'share [95 %]':>18} {'beats':>5} {'host':>5} {'OSD':>5} {'settle':>7}  verdict")
    for r in table.sort_values(["cell_id", "concurrency"]).to_dict("records"):
        lab = str(cells.loc[r["cell_id"], "label"])[:36]
        mine = levels[(levels["cell_id"] == r["cell_id"]) & (levels["concurrency"] == float(r["concurrency"]))]
        pool = mine[mine["target"] == "pool"]
        path = mine[mine["target"] == _probes.path_target(str(cells.loc[r["cell_id"], "backend"]))].iloc[0]
        pool_txt = (f"{gbps(pool.iloc[0]['bw'])} {pm(pool.iloc[0]['bw_rel_se'])}"
                    if len(pool) and path["target"] != "pool" else f"{'(same)':>16}" if len(pool) else f"{'-':>16}")
        v = verdicts[(verdicts["cell_id"] == r["cell_id"])
                     & (pd.to_numeric(verdicts["concurrency"]) == float(r["concurrency"]))]
        settle = f"{path['settle_s']:.1f}s" + ("" if path["settled"] in (True, "True") else "!")
        print(f"{lab:<36} {int(r['concurrency']):>2} {gbps(r['bw'])} {pm(r['bw_rel_se'])} {pool_txt} "
              f"{gbps(r['rate'])} {pm(r['rate_rel_se'])} "
              f"{r['share'] * 100:5.0f}% [{r['share_low'] * 100:3.0f}-{r['share_high'] * 100:3.0f}] "
              f"{'YES' if r['beats'] else 'no':>5} {r['host_busy'] * 100:4.0f}%"
              f"{'*' if r['cpu_bound'] else ' '}{path['osd_cores']:5.2f} {settle:>7}  "
              f"{v.iloc[0]['verdict'] if len(v) else '-'}")
    beats = int(table["beats"].sum()) if len(table) else 0
    print(f"levels where the chain beats its probe beyond their noise: {beats} of {len(table)} (target 0)")
    print(f"CPU-bound probes (host >= {_probes.CPU_FULL * 100:.0f} % busy, marked *; no storage "
          f"ceiling): {int(table['cpu_bound'].sum()) if len(table) else 0} of {len(table)}")
    doubt = _probes.doubted(table) if len(table) else {}
    for why in doubt.values():
        print(f"doubt: {why}")
    cell_s, level_s, settle_s = probe_seconds(rd)
    started = [c.get("started") for c in rd.manifest.get("cells", {}).values() if c.get("started")]
    finished = [c.get("finished") for c in rd.manifest.get("cells", {}).values() if c.get("finished")]
    span = (max(finished) - min(started)) if started and finished else math.nan
    print(f"probe time: cell jobs {cell_s:.0f} s (fio), level jobs {level_s:.0f} s (fio wall), "
          f"settle {settle_s:.0f} s; total {cell_s + level_s + settle_s:.0f} s of the cells' "
          f"{span:.0f} s")
    return beats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", help="result store (default: a temp dir)")
    ap.add_argument("--matrix", help="another matrix (default: layouts/quick.yaml)")
    ap.add_argument("--from-run", help="report on a run already made (no cluster started)")
    args = ap.parse_args(argv)
    if args.from_run:
        run = Path(args.from_run)
    else:
        store = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="xcb-bench-probes-"))
        load = os.getloadavg()
        run = run_demo(store, args.matrix)
        print(f"host load average before {'/'.join(f'{x:.1f}' for x in load)}, after "
              f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    if not (run / "manifest.json").exists():
        print(f"no run made in {run}", file=sys.stderr)
        return 1
    report(RunData(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
