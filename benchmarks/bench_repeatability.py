"""Repeatability: the demo matrix run twice; do verdicts and rates agree, counted strictly?

    .venv/bin/python benchmarks/bench_repeatability.py [--fresh] [--repeats N] [--quick] [--matrix FILE]

Starts the embedded cluster (or uses the one running in --state-dir), runs the matrix twice
(same cluster, same software; ``--fresh``: each run on a fresh mini cluster of its own), and
prints per (cell, level): the two steady rates, their relative difference, the two verdicts and
whether the cell fingerprints are equal. Then the agreement, each kind counted apart (a level
falls in the first that holds):

- **exact**: the same verdict;
- **co-limit match**: one run's verdict is a co-limit the other names (both saw both limits,
  the rules' order picked one; causes that predict opposite outcomes are never co-limits of each
  other: analysis.verdicts.rules.OPPOSED);
- **candidate match**: one run's verdict is the other's borderline candidate (a figure within its
  noise of a threshold fell on either side); two runs sharing a candidate only do not match;
- **contradictions**: two different causes, neither a co-limit nor a candidate of the other;
- apart: a cause named plainly against inconclusive;

the mean number of causes named per level (verdict, co-limits and candidates), and whether the
noise is honest: each level's rate difference inside the two runs' stated 95 % noise. The
criteria (issue 44; on a fresh machine with no recorded pairs, two fresh clusters, one pass
each: ``--fresh --repeats 1``): the same verdict at >= 90 % of levels, 0 contradictions, the rate
difference inside the stated 95 % noise at >= 90 % of levels. Each is printed met or not,
never asserted: this 2-core machine is shared, and what else runs moves the rates.

``--record`` (with ``--fresh`` or ``--from-runs``): the pair's per-level differences of rate and
host CPU, and per storage cell of its fio ceilings, with the runs' own errors of each, go into
this host's between-run noise (analysis.verdicts.between_run), which later runs copy into their
manifest and their verdicts' noise (a term needs two pairs). ``--from-runs A B``: judge two runs
already made (no cluster is started).

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

TARGET_SAME = 0.90  # the same verdict at >= 90 % of levels
TARGET_HONEST = 0.90  # rate differences inside the stated 95 % noise at >= 90 % of levels
TARGET_MEDIAN_DIFF = 0.10
KINDS = ("exact", "co-limit", "candidate", "contradiction", "inconclusive")
MARKS = {"exact": "==", "co-limit": "=+", "candidate": "~~", "inconclusive": "!=", "contradiction": "XX"}


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


def named(verdict: str, candidates: set, co: set) -> int:
    """How many causes a level names: its verdict, co-limits and borderline candidates
    (inconclusive is no cause)."""
    return len(({verdict} | set(candidates) | set(co)) - {"inconclusive", ""})


def level_diffs(a, b) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(log(b / a) of each level's rate and host CPU busy, over the levels both runs have, and
    of each storage cell's fio ceilings (analysis.verdicts.between_run.PROBES), over the cells
    both probed; the two runs' own errors of each figure together, sqrt(sa^2 + sb^2), NaN where
    unknown)."""
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

    def num(v) -> float:
        return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else float("nan")
    fa, fb = figures(a), figures(b)
    diffs: dict[str, list[float]] = {q: [] for q in between_run.QUANTITIES}
    own: dict[str, list[float]] = {q: [] for q in between_run.QUANTITIES}
    errs = {"rate": "rate_rel_se_own", "host_busy": "host_busy_rel_se"}
    for key in sorted(fa.keys() & fb.keys()):
        for q in ("rate", "host_busy"):
            x, y = fa[key].get(q), fb[key].get(q)
            if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x > 0 and y > 0:
                diffs[q].append(math.log(y / x))
                own[q].append(math.hypot(num(fa[key].get(errs[q])), num(fb[key].get(errs[q]))))
    pa, pb = a.probe_ceilings, b.probe_ceilings
    storage = set(a.cells.loc[a.cells["backend"] != "tmpfs", "cell_id"])  # tmpfs: no fio ceiling used
    for cid in sorted(storage & set(pa.index) & set(pb.index)):
        for q in between_run.PROBES:
            x, y = (float(p.loc[cid, q.removeprefix("fio_")]) for p in (pa, pb))
            if x > 0 and y > 0:  # NaN (not probed) compares False
                diffs[q].append(math.log(y / x))
                own[q].append(float("nan"))  # a cell probe's own error is not kept per cell here
    return diffs, own


def judge(va: str, vb: str, ca: set, cb: set, la: frozenset | set = frozenset(),
          lb: frozenset | set = frozenset()) -> str:
    """The kind of agreement of two runs' verdicts ``va``, ``vb`` at one level (``ca``, ``cb``:
    each run's verdict and borderline candidates; ``la``, ``lb``: its co-limits), the first
    that holds: exact (the same verdict), co-limit (one's verdict is a co-limit the other
    names), candidate (one's verdict is the other's borderline candidate), inconclusive (a
    cause named plainly against inconclusive), contradiction (two different causes, neither a
    co-limit nor a candidate of the other; a candidate both share does not make them agree)."""
    if va == vb:
        return "exact"
    if va in lb or vb in la:
        return "co-limit"
    if va in cb or vb in ca:
        return "candidate"
    if "inconclusive" in (va, vb):
        return "inconclusive"
    return "contradiction"


def summarise(a, b) -> dict:
    from xcbench.analysis.verdicts.compare import compare_data
    rows = [r for r in compare_data(a, b) if not r["only_in"]]
    ca_all, cb_all = causes_of(a), causes_of(b)
    diffs, judged, lines, per_level = [], 0, [], []
    within = rated = 0  # levels whose rate difference lies within the two runs' stated 95 % noise
    kinds = dict.fromkeys(KINDS, 0)
    n_borderline = 0
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
            n_borderline += ba or bb
            per_level += [named(r["base_verdict"], ca, la), named(r["contender_verdict"], cb, lb)]
        lines.append(f"  {r['label']:<38} c={int(r['concurrency']):<3} {x * 8 / 1e9:7.3f} "
                     f"{y * 8 / 1e9:7.3f} Gb/s  diff {d * 100:5.1f} %  "
                     f"{(r['base_verdict'] or '–') + ('*' if ba else ''):>18} {MARKS.get(kind, '  ')} "
                     f"{(r['contender_verdict'] or '–') + ('*' if bb else ''):<18} "
                     f"{'honest' if honest else 'outside' if honest is not None else '-':<7} fingerprint "
                     f"{'changed: ' + ', '.join(r['config_fields']) if r['config_changed'] else 'equal'}")
    return {"rows": len(rows), "lines": lines, "judged": judged, "kinds": kinds,
            "exact": kinds["exact"], "exact_share": kinds["exact"] / judged if judged else float("nan"),
            "borderline": n_borderline,
            "causes_per_level": statistics.mean(per_level) if per_level else float("nan"),
            "median_diff": statistics.median(diffs) if diffs else float("nan"),
            "worst_diff": max(diffs) if diffs else float("nan"),
            "fingerprints_changed": sum(1 for r in rows if r["config_changed"]),
            "noise_within": within, "noise_rated": rated}


def criteria(s: dict) -> list[tuple[str, bool]]:
    """The three criteria, each (line, met)."""
    n, k = s["judged"], s["kinds"]
    same = k["exact"] / n if n else 0.0
    honest = s["noise_within"] / s["noise_rated"] if s["noise_rated"] else 0.0
    return [(f"the same verdict at {k['exact']}/{n} = {same * 100:.0f} % of levels (>= {TARGET_SAME * 100:.0f} %)",
             same >= TARGET_SAME),
            (f"contradictions {k['contradiction']} (0)", k["contradiction"] == 0),
            (f"rate difference inside the stated 95 % noise at {s['noise_within']}/{s['noise_rated']} = "
             f"{honest * 100:.0f} % of levels (>= {TARGET_HONEST * 100:.0f} %)", honest >= TARGET_HONEST)]


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
            terms(br) + (f" (assumed: {', '.join(br['assumed'])})" if br.get("assumed") else "")
            + f" ({br.get('pairs', 0)} pair(s) recorded before it)" if isinstance(br, dict) else "none"))
    print(f"  {'cell':<38} {'level':<5} {'first':>7} {'second':>7}")
    print("\n".join(s["lines"]))
    print("  (* borderline; == the same verdict, =+ one's verdict a co-limit of the other's, ~~ one's "
          "verdict the other's borderline candidate, != a cause vs inconclusive, XX contradiction; "
          "honest: the rate difference inside the two runs' stated 95 % noise)")
    k, n = s["kinds"], s["judged"]
    print(f"agreement, counted apart: exact {k['exact']}/{n}, co-limit matches {k['co-limit']}/{n}, "
          f"candidate matches {k['candidate']}/{n}, contradictions {k['contradiction']}/{n}; "
          f"a cause against inconclusive {k['inconclusive']}/{n}")
    print(f"causes named per level (verdict, co-limits, candidates): {s['causes_per_level']:.2f} on "
          f"average; borderline verdicts at {s['borderline']} of {n} levels")
    print(f"steady rate difference: median {s['median_diff'] * 100:.1f} %, worst "
          f"{s['worst_diff'] * 100:.1f} % (target median <= {TARGET_MEDIAN_DIFF * 100:.0f} %)")
    for line, met in criteria(s):
        print(f"criterion {'met' if met else 'NOT met'}: {line}")
    print(f"cell fingerprints changed between the runs: {s['fingerprints_changed']} of {s['rows']} rows")
    print(f"runs: {a.run.path} {b.run.path}")
    diffs, own = level_diffs(a, b)
    print("between the two runs, one run's spread beyond their own noise (90 % quantile / 1.645 / "
          "sqrt 2): " + ", ".join(f"{q} {between_run.sigma(d, own[q]) * 100:.1f} % over {len(d)} levels"
                                  for q, d in diffs.items()))
    if args.record:
        now = between_run.record((str(a.run.path), str(b.run.path)), diffs, own)
        print(f"recorded in {between_run.path()}: now {terms(now)} from {now['pairs']} pair(s)"
              + (f"; still assumed: {', '.join(now['assumed'])}" if now.get("assumed") else ""))


def terms(br: dict) -> str:
    """'rate 3.6 %, host_busy 1.7 %, fio_write_bw 8.7 %' (the terms a calibration has)."""
    return ", ".join(f"{q} {br[q] * 100:.1f} %" for q in between_run.QUANTITIES
                     if isinstance(br.get(q), (int, float))) or "no term"


if __name__ == "__main__":
    sys.exit(main())
