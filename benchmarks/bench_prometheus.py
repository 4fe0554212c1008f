"""What the prometheus device costs: the embedded Prometheus's and the exporters' CPU at a 1 s
scrape, and xcbench's query time per level.

    .venv/bin/python benchmarks/bench_prometheus.py [--state-dir DIR] [--seconds 30]

With --state-dir, the running embedded cluster there is measured; without, one is started in a
temporary dir (and removed). Over --seconds, the CPU time of prometheus, node_exporter and the
ceph-mgr (which renders the module's /metrics) is read from /proc before and after, as cores
(and as a share of this machine's cores). The mgr is measured with its module on; its cost
without the module is not separated (the mgr does other work every second too). Then the
device's level_end() runs over windows of 10, 60 and 300 s (the window of one campaign level)
and its wall time per level is printed, with the rows it returns. Last, the live query (one per
telemetry tick, for the progress view) runs 50 times: its wall time and this process's CPU
time per tick, and the share of a 5 s tick (the device's pace) that is.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import psutil

from xcbench.ceph.cluster import Cluster
from xcbench.ceph.mini import MiniCluster
from xcbench.telemetry.promapi import PromClient
from xcbench.telemetry.prometheus import PrometheusSampler


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, pid in pids.items():
        try:
            t = psutil.Process(pid).cpu_times()
            out[name] = t.user + t.system
        except psutil.Error:
            out[name] = float("nan")
    return out


def measure(state: Path, seconds: float) -> None:
    mc = MiniCluster(state)
    daemons = mc.daemons()
    pids = {n: daemons[n] for n in ("prometheus", "node-exporter", "mgr.x") if n in daemons}
    if len(pids) < 3:
        sys.exit(f"{state}: no embedded Prometheus running here (daemons: {sorted(daemons)})")
    cores = os.cpu_count() or 1
    a, t0 = cpu_seconds(pids), time.monotonic()
    time.sleep(seconds)
    b, dt = cpu_seconds(pids), time.monotonic() - t0
    print(f"CPU at a 1 s scrape over {dt:.0f} s ({cores} cores here):")
    total = 0.0
    for n in pids:
        c = (b[n] - a[n]) / dt
        total += c if n != "mgr.x" else 0.0
        print(f"  {n:<14} {c:.4f} cores ({c / cores * 100:.2f} % of the machine)"
              + ("  (all of the mgr's work, module included)" if n == "mgr.x" else ""))
    print(f"  prometheus + node_exporter: {total:.4f} cores ({total / cores * 100:.2f} % of the machine)")
    cluster = Cluster.from_conf(state / "ceph.conf")
    s = PrometheusSampler(PromClient(cluster.info["prometheus"]["url"]), cluster=cluster,
                          step=cluster.info["prometheus"]["scrape_interval"])
    s.start()
    print("query time per level (every query of the device, range over the level's window):")
    for window in (10, 60, 300):
        end = time.time()
        t = time.monotonic()
        rows = s.level_end(end - window, end, {})
        print(f"  {window:>4} s window: {time.monotonic() - t:.2f} s, {len(rows)} rows")
    n, c0, t0 = 50, time.process_time(), time.monotonic()
    rows = []
    for _ in range(n):
        rows = s.sample(time.time(), time.monotonic())
    wall, cpu = (time.monotonic() - t0) / n, (time.process_time() - c0) / n
    walls = sorted(s.live_seconds)
    print(f"live query per tick ({n} ticks): {wall * 1000:.1f} ms wall (median "
          f"{walls[len(walls) // 2] * 1000:.1f} ms, max {walls[-1] * 1000:.1f} ms), {cpu * 1000:.1f} ms "
          f"CPU of xcbench ({cpu / s.min_interval * 100:.2f} % of a core at one tick per "
          f"{s.min_interval:g} s); {len(rows)} rows: {[r['metric'] for r in rows]}")
    s.stop()
    cluster.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state-dir", type=Path, help="a running embedded cluster (default: start one)")
    ap.add_argument("--seconds", type=float, default=30)
    args = ap.parse_args()
    if args.state_dir:
        measure(args.state_dir.absolute(), args.seconds)
        return
    with tempfile.TemporaryDirectory(prefix="xcb-bench-prom-") as tmp:
        mc = MiniCluster(Path(tmp) / "cluster")
        try:
            mc.up()
            time.sleep(5)  # settle: the first scrapes and the mgr's start-up work are not the cost
            measure(mc.state, args.seconds)
        finally:
            mc.down()


if __name__ == "__main__":
    main()
