"""Mini cluster bring-up time and memory, against the targets (20 s, 4 GiB).

    /work/main/.venv/bin/python benchmarks/bench_cluster_up.py [--rounds 2] [--objectstore bluestore]
                                                              [--load 1G]

Each round starts the embedded cluster from nothing in a fresh state dir and times it until
HEALTH_OK with all PGs active+clean and the MDS active (what `xcbench cluster up` waits for),
then writes ``--load`` of 4 MiB objects into the replicated and the EC pool (so the OSDs grow
their caches as they do in a run) while sampling the daemons' RSS, and takes the cluster down.
Printed: seconds to up, idle RSS, peak RSS under load, teardown seconds, and the ratio of each to
its target (< 1 is good). Timings depend on what else runs on this 2-core machine.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from xcbench.ceph.mini import MiniCluster
from xcbench.figures.units import parse_size

TARGET_UP_S = 20.0
TARGET_RSS = 4 << 30
OBJ = 4 << 20


def _load(cluster, pool: str, nbytes: int) -> None:
    data = b"\xa5" * OBJ
    with cluster.ioctx(pool) as io:
        comps = [io.aio_write_full(f"bench-up-{i}", data) for i in range(nbytes // OBJ)]
        for c in comps:
            c.wait_for_complete()


def one_round(objectstore: str, load: int) -> dict:
    base = Path(tempfile.mkdtemp(prefix="xcb-bench-up-"))
    mc = MiniCluster(base / "cluster")
    try:
        t0 = time.monotonic()
        cluster, _ = mc.up(objectstore=objectstore)
        up_s = time.monotonic() - t0
        time.sleep(1)
        idle = sum(mc.rss().values())
        peak = idle
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, sum(mc.rss().values()))
                time.sleep(0.25)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t1 = time.monotonic()
        writers = [threading.Thread(target=_load, args=(cluster, cluster.pools[r], load // 2))
                   for r in ("replicated", "erasure")]
        for w in writers:
            w.start()
        for w in writers:
            w.join()
        load_s = time.monotonic() - t1
        time.sleep(1)
        done.set()
        sampler.join()
        cluster.close()
        t2 = time.monotonic()
        mc.down()
        down_s = time.monotonic() - t2
        return {"up_s": up_s, "idle_rss": idle, "peak_rss": peak, "load_mib_s": load / 2**20 / load_s,
                "down_s": down_s}
    finally:
        if mc.state.exists():
            mc.down()
        shutil.rmtree(base, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--objectstore", default="bluestore", choices=("bluestore", "memstore"))
    ap.add_argument("--load", default="1G", help="bytes written under load (split over 2 pools)")
    args = ap.parse_args(argv)
    load = parse_size(args.load)
    rows = []
    for i in range(args.rounds):
        r = one_round(args.objectstore, load)
        rows.append(r)
        print(f"round {i + 1}: up {r['up_s']:.1f} s, idle RSS {r['idle_rss'] / 2**20:.0f} MiB, "
              f"peak RSS {r['peak_rss'] / 2**20:.0f} MiB under {args.load} of writes "
              f"({r['load_mib_s']:.0f} MiB/s), down {r['down_s']:.1f} s", flush=True)
    up = statistics.median(r["up_s"] for r in rows)
    peak = max(r["peak_rss"] for r in rows)
    print(f"cluster up ({args.objectstore}, 3 OSDs): {up:.1f} s from nothing to HEALTH_OK + MDS active; "
          f"target {TARGET_UP_S:.0f} s; ratio {up / TARGET_UP_S:.2f}")
    print(f"daemon RSS: {peak / 2**30:.2f} GiB peak; target {TARGET_RSS / 2**30:.0f} GiB; "
          f"ratio {peak / TARGET_RSS:.2f}")
    return 0 if up < TARGET_UP_S and peak < TARGET_RSS else 1


if __name__ == "__main__":
    sys.exit(main())
