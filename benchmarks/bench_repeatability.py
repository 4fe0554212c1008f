"""Repeatability: the demo matrix run twice on one mini cluster; do verdicts and rates agree?

    .venv/bin/python benchmarks/bench_repeatability.py [--quick] [--matrix FILE] [--state-dir DIR]

Starts the embedded cluster (or uses the one running in --state-dir), runs the matrix twice
(same cluster, same software), and prints per (cell, level): the two steady rates, their
relative difference |b - a| / mean(a, b), the two verdicts, and whether the cell fingerprints
are equal; then three numbers apart: exact agreement (a verdict equal to a co-limit the other
run names counts), agreement through a borderline candidate, and contradictions; the share of
(cell, level) verdicts that agree either way (target >= 95 %) and the median
and worst relative rate difference (target median <= 10 %). Ratios are printed, never asserted:
this 2-core machine is shared, and what else runs moves the rates.

Each level runs twice by default (``--repeats``, interleaved c1 c4 c1 c4): with one pass the
attribution knows only the steady window's spread, not a drift of the cell between its
levels. Measured on this 2-core box before the between-run terms, the demo matrix agreed on 11
of 12 verdicts with one pass (an EC CephFS cell's c=1 level ran 94 then 74 MB/s at the same OSD
CPU) and 12 of 12 with two; with the recorded terms, one pass agreed on 60 of 60 levels over five
pairs judged out of sample (README, "Between-run noise").

``--record`` (with ``--fresh`` or ``--from-runs``): the pair's per-level differences of rate and
host CPU, and per storage cell of its fio ceilings, go into this host's between-run noise
(analysis.verdicts.between_run), which later runs copy into their manifest and their verdicts' noise. A
run made after a recording was attributed with the pairs before it: a fresh pair then checks the
term out of sample.
``--from-runs A B``: judge two runs already made (no cluster is started).

``--quick``: a reduced variant of layouts/quick.yaml (tmpfs + CephFS default layout on the
replicated and the EC pool, 10-20 s levels with an 8 s steady window, short fio probes), for a
check that the benchmark works in a few minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path

import yaml

from xcbench.analysis.verdicts import between_run

TARGET_AGREE = 0.95
TARGET_MEDIAN_DIFF = 0.10


def quick_matrix(directory: Path) -> Path:
    m = yaml.safe_load((files("xcbench.layouts") / "quick.yaml").read_text())
    m["name"] = "quick-repeatability"
    d = m["defaults"]
    d["probe"] = {**d.get("probe", {}), "runtime": 2}
    d["campaign"] = {"duration": {"min": "10s", "max": "20s"},
                     "steady": {"rule": "autoterm", "window": "8s", "points": 4, "tolerance": "10%"}}
    m["backends"] = {"tmpfs": m["backends"]["tmpfs"],
                     "cephfs": {**m["backends"]["cephfs"],
                                "layouts": m["backends"]["cephfs"]["layouts"][:1]}}
    m.pop("exclude", None)
    path = directory / "quick-repeatability.yaml"
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    return path


def run_once(matrix_path: Path, cluster, out: Path, name: str, repeats: int | None = None):
    """(RunData, seconds) of one run of the matrix, concluded as `xcbench run` concludes it
    (this host's between-run term recorded, the verdicts stored)."""
    from xcbench.analysis.conclude import conclude
    from xcbench.matrix import load_matrix
    from xcbench.run.runner import RunOptions, run_matrix
    matrix = load_matrix(matrix_path, cluster)
    opts = RunOptions(store=out, name=name, baseline=False, report=False, progress=False,
                      repeats=repeats, between_run=between_run.load())
    t0 = time.monotonic()
    rd = conclude(run_matrix(matrix, cluster, opts))
    return rd, time.monotonic() - t0


def run_twice(matrix_path: Path, cluster, out: Path, repeats: int | None = None):
    runs = [run_once(matrix_path, cluster, out, name, repeats) for name in ("first", "second")]
    return [r for r, _ in runs], [t for _, t in runs]


def run_on_fresh_clusters(matrix_path: Path, work: Path, repeats: int | None = None):
    """Each run on a mini cluster of its own, started for it and taken down after (as two
    sites, or two days, would run it): what one cluster's history carries over is not shared."""
    from xcbench.ceph.mini import MiniCluster
    runs, seconds = [], []
    for name in ("first", "second"):
        mini = MiniCluster(work / f"cluster-{name}")
        cluster, _ = mini.up()
        try:
            rd, t = run_once(matrix_path, cluster, work / "results", name, repeats)
        finally:
            cluster.close()
            mini.down()
        runs.append(rd)
        seconds.append(t)
    return runs, seconds


def co_limits(ev: dict) -> set:
    """The co-limits a verdict names beside its own (evidence ``co_limits``: names, or
    {"verdict": name} entries); none where the run's evidence has no such field."""
    out = set()
    for x in ev.get("co_limits") or ():
        name = x.get("verdict") if isinstance(x, dict) else x
        if isinstance(name, str):
            out.add(name)
    return out


def causes_of(rd) -> dict[tuple, tuple[set, bool, set]]:
    """{(cell_id, concurrency, direction): (the causes the verdict names: its own and its
    borderline candidates', whether it is borderline, its co-limits)} (analysis.verdicts.borderline)."""
    from xcbench.analysis.verdicts.attribution import verdicts_of
    from xcbench.analysis.verdicts.borderline import causes
    out = {}
    for r in verdicts_of(rd).to_dict("records"):
        try:
            ev = json.loads(r.get("evidence") or "{}")
        except ValueError:
            ev = {}
        d = r.get("direction") or "write"
        key = (r["cell_id"], float(r["concurrency"]), d if d == d else "write")
        out[key] = (causes(r["verdict"], ev), bool(ev.get("borderline")), co_limits(ev))
    return out


def level_diffs(a, b) -> dict[str, list[float]]:
    """log(b / a) of each level's rate and host CPU busy, over the levels both runs have, and
    of each storage cell's fio ceilings (analysis.verdicts.between_run.PROBES), over the cells both
    probed."""
    from xcbench.analysis.verdicts.attribution import verdicts_of

    def figures(rd):
        out = {}
        for r in verdicts_of(rd).to_dict("records"):
            try:
                ev = json.loads(r.get("evidence") or "{}")
            except ValueError:
                continue
            out[(r["cell_id"], float(r["concurrency"]), r.get("direction") or "write")] = ev
        return out
    fa, fb = figures(a), figures(b)
    diffs: dict[str, list[float]] = {q: [] for q in between_run.QUANTITIES}
    for key in sorted(fa.keys() & fb.keys()):
        for q in ("rate", "host_busy"):
            x, y = fa[key].get(q), fb[key].get(q)
            if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x > 0 and y > 0:
                diffs[q].append(math.log(y / x))
    pa, pb = a.probe_ceilings, b.probe_ceilings
    storage = set(a.cells.loc[a.cells["backend"] != "tmpfs", "cell_id"])  # tmpfs: no fio ceiling used
    for cid in sorted(storage & set(pa.index) & set(pb.index)):
        for q in between_run.PROBES:
            x, y = (float(p.loc[cid, q.removeprefix("fio_")]) for p in (pa, pb))
            if x > 0 and y > 0:  # NaN (not probed) compares False
                diffs[q].append(math.log(y / x))
    return diffs


def judge(va: str, vb: str, ca: set, cb: set, la: frozenset | set = frozenset(),
          lb: frozenset | set = frozenset()) -> str:
    """agree (exact): the same verdict, or one run's verdict is a co-limit the other names
    (``la``, ``lb``: both runs saw both limits, the rules' order picked one); borderline: different verdicts, but one names the other's
    verdict as its borderline candidate (inconclusive too: "on its other side the verdict
    would be inconclusive"), or both name one cause: a figure within its noise of a threshold
    fell on either side (counted as agreeing); inconclusive: a cause named plainly against
    inconclusive; contradiction: two different causes named, neither as a candidate."""
    if va == vb or va in lb or vb in la:
        return "agree"
    if va in cb or vb in ca or (ca & cb) - {"inconclusive"}:
        return "borderline"
    if "inconclusive" in (va, vb):
        return "inconclusive"
    return "contradiction"


def summarise(a, b) -> dict:
    from xcbench.analysis.verdicts.compare import compare_data
    rows = [r for r in compare_data(a, b) if not r["only_in"]]
    ca_all, cb_all = causes_of(a), causes_of(b)
    diffs, judged, lines = [], 0, []
    within = rated = 0  # levels whose rate difference lies within the two runs' stated 95 % noise
    kinds = {"agree": 0, "borderline": 0, "inconclusive": 0, "contradiction": 0}
    n_borderline = n_co = 0  # n_co: exact agreements through a co-limit
    for r in rows:
        x, y = r["base_rate"], r["contender_rate"]
        d = abs(y - x) / ((x + y) / 2) if x == x and y == y and x + y > 0 else float("nan")
        if d == d:
            diffs.append(d)
        honest = noise_holds(x, y, r["base_rel_se"], r["contender_rel_se"])
        if honest is not None:
            rated += 1
            within += honest
        key = (r["cell_id"], float(r["concurrency"]), r["direction"])
        (ca, ba, la), (cb, bb, lb) = (ca_all.get(key, (set(), False, set())),
                                      cb_all.get(key, (set(), False, set())))
        kind = ""
        if r["base_verdict"] and r["contender_verdict"]:
            judged += 1
            kind = judge(r["base_verdict"], r["contender_verdict"], ca, cb, la, lb)
            kinds[kind] += 1
            n_co += kind == "agree" and r["base_verdict"] != r["contender_verdict"]
            n_borderline += ba or bb
        mark = {"agree": "==", "borderline": "~~", "inconclusive": "!=", "contradiction": "XX"}.get(kind, "  ")
        lines.append(f"  {r['label']:<38} c={int(r['concurrency']):<3} {x / 2**30:7.3f} "
                     f"{y / 2**30:7.3f} GiB/s  diff {d * 100:5.1f} %  "
                     f"{(r['base_verdict'] or '–') + ('*' if ba else ''):>15} {mark} "
                     f"{(r['contender_verdict'] or '–') + ('*' if bb else ''):<15} fingerprint "
                     f"{'changed: ' + ', '.join(r['config_fields']) if r['config_changed'] else 'equal'}")
    agree = kinds["agree"] + kinds["borderline"]
    return {"rows": len(rows), "lines": lines, "agree": agree, "judged": judged, "kinds": kinds,
            "exact": kinds["agree"], "exact_share": kinds["agree"] / judged if judged else float("nan"),
            "borderline": n_borderline, "agree_through_co_limits": n_co,
            "agree_share": agree / judged if judged else float("nan"),
            "median_diff": statistics.median(diffs) if diffs else float("nan"),
            "worst_diff": max(diffs) if diffs else float("nan"),
            "fingerprints_changed": sum(1 for r in rows if r["config_changed"]),
            "noise_within": within, "noise_rated": rated}


def noise_holds(x: float, y: float, se_x: float, se_y: float) -> bool | None:
    """Is |log(y / x)| within 1.96 times the two levels' combined stated relative error (each
    run's own noise and its between-run term, analysis.verdicts.compare)? None where a rate or
    an error is unknown: such a level states no noise to hold."""
    if not all(math.isfinite(v) for v in (x, y, se_x, se_y)) or x <= 0 or y <= 0:
        return None
    return abs(math.log(y / x)) <= 1.96 * math.hypot(se_x, se_y)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a reduced matrix (a few minutes)")
    ap.add_argument("--matrix", help="another matrix (default: layouts/quick.yaml)")
    ap.add_argument("--repeats", type=int, default=2,
                    help="repeats of each level, interleaved (c1 c4 c1 c4; default 2): the "
                    "attribution judges growth with concurrency against the repeats' spread, "
                    "which sees drift within a cell; 1 = the demo's single pass")
    ap.add_argument("--state-dir", help="use/start the embedded cluster here (default: a temp dir)")
    ap.add_argument("--fresh", action="store_true",
                    help="each run on a fresh mini cluster of its own (two fresh "
                    "clusters, one pass: --fresh --repeats 1)")
    ap.add_argument("--record", action="store_true",
                    help="add the pair's level differences to this host's between-run noise "
                    "(with --fresh or --from-runs)")
    ap.add_argument("--from-runs", nargs=2, metavar="RUN", help="judge two runs already made")
    args = ap.parse_args(argv)
    if args.record and not (args.fresh or args.from_runs):
        ap.error("--record: only a pair on two fresh clusters measures the between-run noise "
                 "(--fresh, or --from-runs of such a pair)")
    if args.from_runs:
        from xcbench.analysis.verdicts.run_data import RunData
        a, b = (RunData(r) for r in args.from_runs)
        report(summarise(a, b), a, b, "two runs given", None, args)
        return 0
    from xcbench.ceph.mini import MiniCluster
    work = Path(tempfile.mkdtemp(prefix="xcb-bench-repeat-"))
    matrix = Path(args.matrix) if args.matrix else \
        quick_matrix(work) if args.quick else Path(str(files("xcbench.layouts") / "quick.yaml"))
    load = [os.getloadavg()]
    if args.fresh:
        (a, b), seconds = run_on_fresh_clusters(matrix, work, args.repeats)
        load.append(os.getloadavg())
    else:
        mini = MiniCluster(Path(args.state_dir) if args.state_dir else work / "cluster")
        cluster, started = mini.up()
        try:
            (a, b), seconds = run_twice(matrix, cluster, work / "results", args.repeats)
            load.append(os.getloadavg())
        finally:
            cluster.close()
            if started:
                mini.down()
    print(f"matrix {matrix.name} with {args.repeats} repeat(s) a level: two runs "
          f"on {'two fresh clusters' if args.fresh else 'one cluster'}, "
          f"{seconds[0]:.0f} s and {seconds[1]:.0f} s")
    report(summarise(a, b), a, b, "", load, args)
    return 0


def report(s: dict, a, b, what: str, load, args) -> None:
    if what:
        print(what)
    if load:  # what else ran moves the rates: say how busy the box was
        print(f"host load average before {'/'.join(f'{x:.1f}' for x in load[0])}, after "
              f"{'/'.join(f'{x:.1f}' for x in load[-1])} on {os.cpu_count()} cores")
    for name, rd in (("first", a), ("second", b)):
        br = rd.manifest.get("between_run")
        print(f"{name} run's between-run noise: " + (
            terms(br) + f" ({br['pairs']} pair(s) before it)" if isinstance(br, dict) else "none recorded"))
    print(f"  {'cell':<38} {'level':<5} {'first':>7} {'second':>7}")
    print("\n".join(s["lines"]))
    print("  (* borderline: a figure within its own noise of a rule's threshold; == same verdict "
          "or one's verdict a co-limit of the other's (exact agreement), "
          "~~ one names the other's verdict as its borderline candidate (agrees), != a cause vs "
          "inconclusive, XX contradiction)")
    k, n = s["kinds"], s["judged"]
    print(f"three numbers, apart: exact agreement {k['agree']}/{n} (a co-limit the other names counts), "
          f"agreement through a borderline candidate {k['borderline']}/{n}, contradictions "
          f"{k['contradiction']}/{n}; a cause named against inconclusive {k['inconclusive']}/{n}")
    print(f"verdicts agree: {s['agree']}/{s['judged']} = {s['agree_share'] * 100:.0f} % "
          f"(a borderline verdict agrees with the cause it names; target >= {TARGET_AGREE * 100:.0f} %, "
          f"ratio to target {s['agree_share'] / TARGET_AGREE:.2f})")
    k = s["kinds"]
    print(f"exact agreement: {k['agree']}/{s['judged']} (of which through a co-limit: "
          f"{s['agree_through_co_limits']})")
    print(f"borderline verdicts: {s['borderline']} of {s['judged']} levels; agreeing through a "
          f"borderline candidate: {k['borderline']}; disagreements: {k['inconclusive']} named vs inconclusive, "
          f"contradictions (two different causes named, neither borderline): {k['contradiction']} "
          f"(target 0)")
    print(f"steady rate difference: median {s['median_diff'] * 100:.1f} %, worst "
          f"{s['worst_diff'] * 100:.1f} % (target median <= {TARGET_MEDIAN_DIFF * 100:.0f} %, "
          f"ratio to target {s['median_diff'] / TARGET_MEDIAN_DIFF:.2f})")
    print(f"noise honest: {s['noise_within']}/{s['noise_rated']} levels' rate difference within the "
          f"two runs' stated 95 % noise (1.96 x their combined relative error; target >= 90 %)")
    print(f"cell fingerprints changed between the runs: {s['fingerprints_changed']} of {s['rows']} rows")
    print(f"runs: {a.run.path} {b.run.path}")
    diffs = level_diffs(a, b)
    print("between the two runs, one run's spread (90 % quantile of |log(b/a)| / 1.645 / sqrt 2): "
          + ", ".join(f"{q} {between_run.sigma(d) * 100:.1f} % over {len(d)} levels"
                      for q, d in diffs.items()))
    if args.record:
        now = between_run.record((str(a.run.path), str(b.run.path)), diffs)
        print(f"recorded in {between_run.path()}: " + (
            f"now {terms(now)} from {now['pairs']} pair(s)" if now else "too few levels yet for a term"))


def terms(br: dict) -> str:
    """'rate 3.6 %, host_busy 1.7 %, fio_write_bw 8.7 %' (the terms a calibration has)."""
    return ", ".join(f"{q} {br[q] * 100:.1f} %" for q in between_run.QUANTITIES
                     if isinstance(br.get(q), (int, float))) or "no term"


if __name__ == "__main__":
    sys.exit(main())
