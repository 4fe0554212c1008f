"""A test Slurm cluster's start-up and a job step's cost: what the Slurm tests and a run pay.

    /work/main/.venv/bin/python benchmarks/bench_slurm.py [--rounds 3] [--steps 20] [--nodes 3]

Each round brings up emulated hosts (xcbench.hosts.emulate) and the tests' Slurm cluster on them
(tests/support/slurm.py: munged with its own key and socket, slurmctld, one slurmd per host in its
network namespace), then times:
- munged until its socket exists, slurmctld until `scontrol ping` says UP, the slurmds until
  every node is idle (what the test fixture waits for);
- an allocation xcbench asks for (`salloc` until granted, xcbench.hosts.slurm.make) and one step
  through the transport (`srun ... true`), ``--steps`` times on each node, one after the other;
- a clock check through a step (xcbench.hosts.checks.host_clock): offset and RTT per node;
- the run's end (xcbench.hosts.slurm.release): steps cancelled, ``node-clean`` as a step on
  every node (what a run pays to leave nothing in the nodes' scratch), the allocation given back;
- confinement (the cluster runs task/cgroup with ConstrainCores, as a site would): the cores two
  busy processes use in a step on one node, in a whole node (``--exclusive``) and under
  ``cpus_per_task: 1``, over ``--busy`` s;
and takes it all down. Printed per round and the median over the rounds. Timings depend on
what else runs on this 2-core machine (root; needs slurm-wlm and munge: `make setup`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.slurm import slurm_cluster, why_no_slurm  # noqa: E402
from xcbench.hosts import load_inventory, parse_inventory, transport_for  # noqa: E402
from xcbench.hosts.checks import host_clock  # noqa: E402
from xcbench.hosts.emulate import down, free_network, up  # noqa: E402
from xcbench.hosts.slurm import Record, make, release, with_nodes  # noqa: E402
from xcbench.system import proc  # noqa: E402

# two busy processes for S s in a step: the cores they used (their CPU ticks over the wall time)
BUSY = ('a=$(date +%s%N); yes >/dev/null & p=$!; yes >/dev/null & q=$!; sleep "$0"; '
        't=$(( $(cut -d" " -f14,15 /proc/$p/stat | tr " " +) + $(cut -d" " -f14,15 /proc/$q/stat | tr " " +) )); '
        'kill $p $q; b=$(date +%s%N); echo "$t $(getconf CLK_TCK) $((b - a))"')


def busy_cores(host, seconds: float) -> float:
    """Cores two busy processes used in one step on ``host``."""
    ticks, hz, ns = transport_for(host).run(["sh", "-c", BUSY, str(seconds)], timeout=120).stdout.split()
    return int(ticks) / int(hz) / (int(ns) / 1e9)


def node_hosts(alloc) -> list:
    return [h for h in with_nodes(parse_inventory({"slurm": {}}, "bench"), alloc).hosts
            if h.transport == "slurm"]


def one_round(nodes: int, steps: int, busy: float) -> dict:
    base = Path(tempfile.mkdtemp(prefix="xcb-bench-slurm-"))
    tag = f"{os.getpid() % 10000}"
    net = list(free_network().hosts())
    data = {"bridge": {"name": f"xcbb{tag}", "address": f"{net[0]}/24"},
            "hosts": {f"b{tag}{i}": {"roles": ["client"], "transport": "netns",
                                     "address": str(net[10 + i])} for i in range(nodes)}}
    (base / "hosts.yaml").write_text(yaml.safe_dump(data))
    inv = load_inventory(base / "hosts.yaml")
    up(inv, base / "state")
    try:
        with slurm_cluster(base / "slurm", inv) as sc:
            os.environ.update(sc.env)
            out = dict(sc.start_s)
            req = parse_inventory({"slurm": {"nodes": nodes, "time": "10"}}, "bench").slurm
            procs = proc.ProcessSet(record=False)
            t0 = time.monotonic()
            alloc = make(req, Record(base), procs)
            out["salloc"] = time.monotonic() - t0
            try:
                hosts = node_hosts(alloc)
                times = []
                for h in hosts:
                    t = transport_for(h)
                    for _ in range(steps):
                        t1 = time.monotonic()
                        t.run(["true"], timeout=60)
                        times.append(time.monotonic() - t1)
                out["step"] = statistics.median(times)
                out["step_max"] = max(times)
                clocks = [host_clock(h) for h in hosts]
                out["clock_rtt"] = max(c["rtt_s"] for c in clocks)
                out["clock_offset"] = max(abs(c["offset_s"]) for c in clocks)
                out["busy_whole"] = busy_cores(hosts[0], busy) if busy else float("nan")
            finally:
                t0 = time.monotonic()
                release(alloc, procs)
                out["release"] = time.monotonic() - t0
                procs.stop_all()
            if busy:  # the same step under cpus_per_task 1
                one = parse_inventory({"slurm": {"nodes": 1, "time": "10", "cpus_per_task": 1}},
                                      "bench").slurm
                alloc = make(one, Record(base), procs)
                try:
                    out["busy_one"] = busy_cores(node_hosts(alloc)[0], busy)
                finally:
                    release(alloc, procs)
                    procs.stop_all()
            return out
    finally:
        down(base / "state", inv)
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20, help="steps timed on each node")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--busy", type=float, default=3.0,
                    help="s two busy processes run in a step (0: no confinement check)")
    args = ap.parse_args()
    why = why_no_slurm()
    if why:
        print(f"bench_slurm: {why}", file=sys.stderr)
        return 2
    rows = []
    for r in range(args.rounds):
        x = one_round(args.nodes, args.steps, args.busy)
        rows.append(x)
        print(f"round {r + 1}: munged {x['munged']:.2f} s, slurmctld {x['slurmctld']:.2f} s, "
              f"{args.nodes} slurmd {x['slurmd']:.2f} s, salloc {x['salloc']:.2f} s, step "
              f"{x['step'] * 1e3:.0f} ms (max {x['step_max'] * 1e3:.0f}), clock check: offset "
              f"<= {x['clock_offset'] * 1e6:.0f} us, rtt <= {x['clock_rtt'] * 1e6:.0f} us, run's end "
              f"(node-clean on every node) {x['release']:.2f} s; two busy processes in a step: "
              f"{x['busy_whole']:.2f} cores in a whole node, {x.get('busy_one', float('nan')):.2f} "
              f"under cpus_per_task 1", flush=True)
    med = {k: statistics.median(x[k] for x in rows) for k in rows[0]}
    print(f"median of {len(rows)}: munged {med['munged']:.2f} s, slurmctld {med['slurmctld']:.2f} s, "
          f"slurmd {med['slurmd']:.2f} s, salloc {med['salloc']:.2f} s, step {med['step'] * 1e3:.0f} ms, "
          f"run's end {med['release']:.2f} s, busy step {med['busy_whole']:.2f} cores whole / "
          f"{med.get('busy_one', float('nan')):.2f} under cpus_per_task 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
