"""`xcbench confirm` on a demo run: how many verdicts are confirmed, proportion checked, not
testable here, refuted or inconclusive, and none confirmed by an experiment that cannot refute.

    .venv/bin/python benchmarks/bench_confirm_demo.py [--quick] [--state-dir DIR] [--pairs N]
    .venv/bin/python benchmarks/bench_confirm_demo.py --from-run RUN [-c CONF]

Starts the embedded mini cluster (or uses the one in --state-dir), runs the demo matrix
(layouts/quick.yaml) as `xcbench demo` does, then `xcbench confirm` on every verdict of it
(xcbench.selftest.confirm.confirm_run: each verdict's experiment, A-B-B-A, as many pairs as the
predicted effect needs). ``--from-run RUN``: confirm a run already made, on the cluster that
made it (-c its ceph.conf, or the embedded one in --state-dir). ``--quick``: a reduced matrix
(the tmpfs cell and one CephFS layout on the replicated pool, short levels) to show the script
works in a few minutes.

Prints each verdict's experiment and outcome, then the counts (confirmed / proportion checked /
not testable here / refuted / inconclusive) by verdict and in all, and the number of
confirmations whose experiment could not separate the named cause from a rival (target 0: such
an outcome is "proportion checked", never "confirmed"). Printed, never asserted.
Full run (the demo matrix, 12 levels): the demo's ~9 min, then ~2-6 pairs of ~15 s replays per
verdict: 30-60 min on the 2-core box.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from importlib.resources import files
from pathlib import Path

import yaml

from xcbench.selftest.confirm import OUTCOMES, confirm_run


def quick_matrix(directory: Path) -> Path:
    m = yaml.safe_load((files("xcbench.layouts") / "quick.yaml").read_text())
    m["name"] = "quick-confirm"
    d = m["defaults"]
    d["probe"] = {**d.get("probe", {}), "runtime": 2}
    d["campaign"] = {"duration": {"min": "6s", "max": "10s"},
                     "steady": {"rule": "autoterm", "window": "5s", "points": 5, "tolerance": "15%"}}
    d["concurrency"] = [2]
    cephfs = m["backends"]["cephfs"]
    m["backends"] = {"tmpfs": m["backends"]["tmpfs"],
                     "cephfs": {**cephfs, "layouts": cephfs["layouts"][:1],
                                "pools": [p for p in cephfs.get("pools", ["rep3"]) if str(p).startswith("rep")][:1]}}
    m.pop("exclude", None)
    path = directory / "quick-confirm.yaml"
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    return path


def counts(result: dict) -> dict:
    """{"all": Counter of outcomes, "by_verdict": {verdict: Counter}, "unseparated_confirmed": n}."""
    xs = result["confirmations"]
    by: dict[str, Counter] = {}
    for x in xs:
        by.setdefault(x["verdict"], Counter())[x["outcome"]] += 1
    return {"all": Counter(x["outcome"] for x in xs), "by_verdict": by,
            "unseparated_confirmed": sum(x["outcome"] == "confirmed" and x.get("separates") is False for x in xs)}


def line(c: Counter) -> str:
    return " / ".join(f"{c.get(o, 0)} {o}" for o in OUTCOMES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a reduced matrix (a few minutes)")
    ap.add_argument("--from-run", metavar="RUN", help="confirm a run already made")
    ap.add_argument("-c", "--ceph-conf", help="with --from-run: the ceph.conf of the cluster that made it")
    ap.add_argument("--state-dir", help="use/start the embedded cluster here (default: a temp dir)")
    ap.add_argument("--pairs", type=int, help="pairs per experiment (default: as many as the effect needs)")
    args = ap.parse_args(argv)
    from xcbench.ceph.mini import MiniCluster
    work = Path(tempfile.mkdtemp(prefix="xcb-bench-confirm-"))
    t0 = time.monotonic()
    if args.from_run and args.ceph_conf:
        from xcbench.ceph.cluster import Cluster
        cluster, mini, started = Cluster.from_conf(args.ceph_conf), None, False
    else:
        mini = MiniCluster(Path(args.state_dir) if args.state_dir else work / "cluster")
        cluster, started = mini.up()
    try:
        run_path = args.from_run or demo_run(args, work, cluster)
        t1 = time.monotonic()
        result = confirm_run(run_path, cluster, pairs=args.pairs, log=lambda m: print(m, flush=True))
    finally:
        cluster.close()
        if mini is not None and started:
            mini.down()
    report(result, t1 - t0, time.monotonic() - t1)
    return 0


def demo_run(args, work: Path, cluster) -> str:
    from xcbench.analysis.verdicts import between_run
    from xcbench.matrix import load_matrix
    from xcbench.run.runner import RunOptions
    from xcbench.selftest.capping import run_concluded
    path = quick_matrix(work) if args.quick else Path(str(files("xcbench.layouts") / "quick.yaml"))
    opts = RunOptions(store=work / "results", name="demo", report=False, progress=False,
                      between_run=between_run.load())  # as `xcbench demo`: this host's term
    run = run_concluded(load_matrix(path, cluster), cluster, opts)
    print(f"demo run: {run.path}", flush=True)
    return str(run.path)


def report(result: dict, run_s: float, confirm_s: float) -> None:
    c = counts(result)
    print(f"\nxcbench confirm {result['run']}")
    for x in result["confirmations"]:
        print(f"  {x['cell_id'][:10]} c={x['concurrency']} {x['verdict']}: {x['outcome']}"
              + (f" ({x.get('why')})" if x.get("why") else ""))
    for v, n in sorted(c["by_verdict"].items()):
        print(f"{v}: {line(n)}")
    print(f"all {sum(c['all'].values())} verdicts: {line(c['all'])}")
    print(f"confirmed by an experiment that could not separate the named cause from a rival: "
          f"{c['unseparated_confirmed']} (target 0)")
    print(f"took {run_s / 60:.1f} min to run, {confirm_s / 60:.1f} min to confirm")


if __name__ == "__main__":
    sys.exit(main())
