"""Several hosts on one machine: the guide's two-by-two worked example as a benchmark
(docs/guide.md#a-worked-example-two-client-hosts-two-gateway-hosts-on-one-machine). Each level's
transfers split over two client hosts, one origin on each of two gateway hosts, the hosts'
timelines merged into one.

    .venv/bin/python benchmarks/bench_hosts.py [--levels 1,3] [--file-size 2M] [--keep DIR]

Emulated hosts (network namespaces on a bridge, made by `xcbench hosts up`): c1 with 1 core, c2
with its link shaped to 2 Gbit/s, g1 (gateway and redirector) and g2 with 0.5 core each, on a free
10.2xx.y.0/24; a tmpfs matrix with 2 origins and short time-based levels runs with `xcbench run
--hosts`, then `xcbench hosts down` removes the hosts. Printed per level: each client host's slots
and MiB/s, the merged bytes beside the sum of the hosts' bytes (they must be equal); the hosts'
clock offsets and RTTs from the manifest; iperf3 between each client and gateway host. Needs
root, ip, tc, xrootd, cmsd, iperf3; no Ceph cluster. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]


def xcbench(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    cp = subprocess.run([sys.executable, "-m", "xcbench", *args], cwd=ROOT, capture_output=True, text=True)
    if check and cp.returncode != 0:
        sys.exit(f"xcbench {' '.join(args[:2])}: exit {cp.returncode}\n{cp.stderr[-3000:]}")
    return cp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--levels", default="1,3", help="concurrency levels, comma-separated")
    ap.add_argument("--file-size", default="2M")
    ap.add_argument("--keep", type=Path, help="the working dir (default: a temp dir, kept: its path is printed)")
    a = ap.parse_args()
    from xcbench.hosts.emulate import free_network
    work = a.keep or Path(tempfile.mkdtemp(prefix="xcb-bench-hosts-"))
    work.mkdir(parents=True, exist_ok=True)
    net = list(free_network().hosts())
    tag = f"{os.getpid() % 1000}"
    inv = {"bridge": {"name": f"xcbh{tag}", "address": f"{net[0]}/24"},
           "hosts": {f"c1h{tag}": {"roles": ["client"], "transport": "netns", "address": str(net[10]), "cores": 1.0},
                     f"c2h{tag}": {"roles": ["client"], "transport": "netns", "address": str(net[11]),
                                  "link": {"rate": "2gbit"}},
                     f"g1h{tag}": {"roles": ["gateway", "redirector"], "transport": "netns",
                                  "address": str(net[20]), "cores": 0.5},
                     f"g2h{tag}": {"roles": ["gateway"], "transport": "netns", "address": str(net[21]),
                                  "cores": 0.5}}}
    hosts = work / "two-by-two.yaml"
    hosts.write_text(yaml.safe_dump(inv))
    matrix = work / "hosts.yaml"
    matrix.write_text(yaml.safe_dump({
        "name": "bench-hosts",
        "defaults": {"origins": [2], "modes": ["push"], "concurrency": [int(x) for x in a.levels.split(",")],
                     "file_size": a.file_size, "files": 12, "repeats": 1,
                     "campaign": {"duration": {"min": "8s", "max": "14s"},
                                  "steady": {"rule": "autoterm", "window": "6s", "points": 3,
                                             "tolerance": "30%"}}},
        "backends": {"tmpfs": {"size": ["256M"]}}}))
    print(f"working dir: {work}")
    xcbench("hosts", "up", str(hosts))
    try:
        cp = xcbench("run", str(matrix), "--hosts", str(hosts), "--store", str(work / "results"),
                     "--run-name", "hosts", "--no-report", check=False)
    finally:
        xcbench("hosts", "down", str(hosts), check=False)
    if cp.returncode != 0:
        print(cp.stderr[-3000:])
        return 1
    run = work / "results" / "hosts"
    camp = pd.read_parquet(run / "campaigns.parquet")
    print(f"{'level':>5}  {'host':<8} {'slots':>5} {'MiB/s':>8}   merged bytes = sum of hosts")
    for _, r in camp.sort_values("concurrency").iterrows():
        s = json.loads(r["settings"]) if isinstance(r["settings"], str) else r["settings"]
        per = s.get("hosts") or {}
        tl = s.get("timeline") or {}
        for h, x in per.items():
            c = x.get("campaign") or {}
            print(f"{r['concurrency']:>5}  {h:<8} {x.get('slots', 0):>5} {float(c.get('rate') or 0) / 2**20:>8.1f}")
        print(f"{'':>5}  merged {tl.get('bytes')} = {tl.get('hosts_bytes')}")
    m = json.loads((run / "manifest.json").read_text())
    for h, c in ((m.get("hosts") or {}).get("clock") or {}).items():
        print(f"clock {h}: offset {c['offset_s'] * 1e6:+.0f} µs, rtt {c['rtt_s'] * 1e3:.2f} ms")
    base = pd.read_parquet(run / "baseline.parquet") if (run / "baseline.parquet").exists() else pd.DataFrame()
    if len(base):
        best = base.dropna(subset=["bits_per_second"]).groupby(["client", "gateway", "direction"])
        for (cl, gw, d), g in best:
            b = g.loc[g["bits_per_second"].idxmax()]
            print(f"iperf3 {cl} -> {gw} {d}: best {b['bits_per_second'] / 1e9:.2f} Gb/s "
                  f"({int(b['streams'])} streams; {g['bits_per_second'].min() / 1e9:.2f}-"
                  f"{g['bits_per_second'].max() / 1e9:.2f} over {len(g)} points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
