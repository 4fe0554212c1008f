"""Null experiments: how often does `xcbench confirm`'s judge confirm an effect that is not there?

    .venv/bin/python benchmarks/bench_null_experiments.py [--experiments 20] [--backend cephfs]
                                                          [--pairs N] [--state-dir DIR]

Starts the embedded mini cluster (or uses the one running in --state-dir), runs one cell at one
level as `xcbench run` does (the control's run: its between-run term, assumed or recorded, is
the one a confirm of it would take), then ``--experiments`` null experiments on it: each the
A-B-B-A pairs of a confirm (xcbench.selftest.confirm's replays) whose "changed" arm is the
control itself. Each experiment is judged twice with the usual predictions, as a relief (x2
predicted: at least x1.2 asked) and as a tightening (x0.5: at most x0.75 asked), by
analysis.verdicts.experiment.judge with no rivals (a rival could only stop a confirmation).
Nothing changed, so every "confirmed" is a false alarm: the stated confidence (one-sided 95 %)
promises at most 5 %; the target is at most 1 of 40 judgements (20 experiments).

Prints per experiment: the pairs' ratios, the judge's noise and both outcomes; then the count
of confirmed judgements against the target, the spread of the null ratios against the noise
the judge assumed (how honest it is: the share of experiments whose ratio lay inside its
two-sided 90 % interval, ~90 % when honest), and the time taken. Printed, never asserted: the
box is shared, and what else runs moves the rates.

``--pairs``: pairs per experiment (default: what confirm would run for a x2 relief at the
control level's own noise, experiment.pairs_needed). ``--backend tmpfs`` needs no cluster.
Measured short (2 experiments, 2 pairs, 6-10 s levels, cephfs): 1.7 min with the cluster's start.
Full run (20 experiments, 2-3 pairs, 12-24 s levels): 80-120 replays of ~20-30 s, 30-60 min.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from xcbench.analysis.verdicts import between_run
from xcbench.analysis.verdicts.experiment import judge, schedule
from xcbench.matrix import load_matrix
from xcbench.run.runner import RunOptions
from xcbench.selftest import confirm
from xcbench.selftest.capping import run_concluded

TARGET = 1  # confirmed judgements at most, of 2 x experiments
LEVEL = 2
# levels long enough for a 10-s window (10 blocks: the AR(1) error's validated range), files
# enough not to run out at c=2 within the longest level
CAMPAIGN = {"duration": {"min": "12s", "max": "24s"},
            "steady": {"rule": "autoterm", "window": "10s", "points": 5, "tolerance": "10%"}}
BACKENDS = {"tmpfs": {"tmpfs": {"size": ["1G"]}},
            "cephfs": {"cephfs": {"layouts": [{"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"}],
                                  "pools": ["rep1"]}},
            "rados": {"rados": {"layouts": [{"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"}],
                                "pools": ["rep1"]}}}
USUAL = (("relieve", 2.0), ("tighten", 0.5))  # the usual predictions (experiment_choice)


def matrix_doc(backend: str) -> dict:
    return {"name": f"null-{backend}", "defaults": {
        "origins": [1], "modes": ["push"], "concurrency": [LEVEL], "file_size": "16M", "files": 64,
        "repeats": 1, "gateway": {"async": False, "buffers_maxbsz": "16M"}, "campaign": CAMPAIGN},
        "backends": BACKENDS[backend]}


def judge_null(pairs: list[tuple[tuple[float, float], tuple[float, float]]],
               between: float | None) -> dict[str, dict]:
    """Both judgements of one null experiment: {kind: judge's result} for the usual predictions."""
    return {kind: judge(kind, pred, pairs, between) for kind, pred in USUAL}


def summary(results: list[dict[str, dict]]) -> dict:
    """Counts over the experiments: judgements, confirmed (false alarms), and how often the
    null ratio x1 lay inside the judge's two-sided 90 % interval (its noise honest)."""
    judged = [r for res in results for r in res.values() if r.get("ratio")]
    confirmed = sum(r["outcome"] in ("confirmed", "proportion checked") for res in results for r in res.values())
    inside = [r["low"] <= 1.0 <= r["high"] for res in results for r in (res["relieve"],) if r.get("ratio")]
    ratios = [r["ratio"] for res in results for r in (res["relieve"],) if r.get("ratio")]
    return {"judgements": sum(len(res) for res in results), "measured": len(judged),
            "confirmed": confirmed,
            "inside": sum(inside), "rated": len(inside),
            "log_sd": statistics.stdev(math.log(x) for x in ratios) if len(ratios) >= 2 else math.nan,
            "noise": statistics.median(r["relieve"]["rel_se"] for r in results if r["relieve"].get("rel_se"))
            if any(r["relieve"].get("rel_se") for r in results) else math.nan}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--experiments", type=int, default=20, help="null experiments (default 20: 40 judgements)")
    ap.add_argument("--backend", choices=sorted(BACKENDS), default="cephfs",
                    help="the cell's backend (default cephfs, on the embedded cluster)")
    ap.add_argument("--pairs", type=int, help="pairs per experiment (default: what confirm would run)")
    ap.add_argument("--state-dir", help="use/start the embedded cluster here (default: a temp dir)")
    args = ap.parse_args(argv)
    if args.experiments < 1 or (args.pairs is not None and args.pairs < 2):
        ap.error("--experiments >= 1, --pairs >= 2")
    work = Path(tempfile.mkdtemp(prefix="xcb-bench-null-"))
    cluster = mini = None
    started = False
    if args.backend != "tmpfs":
        from xcbench.ceph.mini import MiniCluster
        mini = MiniCluster(Path(args.state_dir) if args.state_dir else work / "cluster")
        cluster, started = mini.up()
    t0 = time.monotonic()
    try:
        results = run(args, work, cluster)
    finally:
        if cluster is not None:
            cluster.close()
        if mini is not None and started:
            mini.down()
    report(results, time.monotonic() - t0)
    return 0


def run(args, work: Path, cluster) -> list[dict[str, dict]]:
    path = work / "null.yaml"
    path.write_text(yaml.safe_dump(matrix_doc(args.backend)))
    matrix = load_matrix(path, cluster) if cluster is not None else load_matrix(path)
    opts = RunOptions(store=work / "results", name="control", baseline=False, probes=False, report=False,
                      progress=False, telemetry=confirm.TELEMETRY, between_run=between_run.load())
    base = run_concluded(matrix, cluster, opts)  # as `xcbench run`: this host's term, verdicts stored
    (row,) = [r for r in base.table("verdicts").to_dict("records") if int(r["concurrency"]) == LEVEL]
    ev = json.loads(row.get("evidence") or "{}")
    between = between_run.of(base.manifest).get("rate")
    assumed = between_run.assumed(base.manifest)
    pairs = args.pairs or confirm._pairs_for({"kind": "relieve", "predicted": 2.0}, ev, between) or 2
    print(f"control: {row['verdict']} at c={LEVEL}, {ev.get('rate', math.nan) * 8 / 1e9:.3f} Gb/s, own "
          f"noise ±{(ev.get('rate_rel_se_own') or math.nan) * 100:.1f} %, between-run term "
          f"{(between or 0) * 100:.1f} %{' (assumed)' if 'rate' in assumed else ''}; {pairs} pairs an "
          f"experiment, {args.experiments} experiments", flush=True)
    cells = {c.id: c for c in matrix.cells}
    cell = cells[row["cell_id"]]
    results = []
    for i in range(args.experiments):
        got: dict[int, dict[str, tuple[float, float]]] = {}
        for pair, arm in schedule(pairs):  # the changed arm is the control itself: nothing changes
            r = confirm._replay(confirm.Setting(matrix, cells, work / "replays", cluster), cell, LEVEL,
                                "write", {}, f"null{i}-{pair}{arm}")
            got.setdefault(pair, {})[arm] = r["rate"]
        res = judge_null([(got[p]["control"], got[p]["changed"]) for p in sorted(got)], between)
        results.append(res)
        x = res["relieve"]
        print(f"  null {i + 1:>2}: pairs " + " ".join(f"x{v:.3f}" for v in x["pair_ratios"])
              + f"  mean x{(x['ratio'] or math.nan):.3f}, noise ±{(x['rel_se'] or math.nan) * 100:.1f} %: "
              f"as a relief {x['outcome']}, as a tightening {res['tighten']['outcome']}", flush=True)
    return results


def report(results: list[dict[str, dict]], seconds: float) -> None:
    s = summary(results)
    print(f"false confirmations: {s['confirmed']} of {s['judgements']} judgements "
          f"({s['measured']} measured; target at most {TARGET} of 40, the stated 5 %: "
          f"{0.05 * s['judgements']:.1f})")
    print(f"null ratios: spread of log ratio {s['log_sd'] * 100:.1f} % against the judge's median noise "
          f"±{s['noise'] * 100:.1f} %; x1 inside the two-sided 90 % interval in {s['inside']} of {s['rated']} "
          f"experiments (honest: ~90 % or more)")
    print(f"took {seconds / 60:.1f} min")


if __name__ == "__main__":
    sys.exit(main())
