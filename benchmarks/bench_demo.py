"""The demo as a user meets it, piped: how long it takes against the estimate it printed, where
the time went, and whether its closing table reads at 80 columns.

    .venv/bin/python benchmarks/bench_demo.py [--matrix FILE] [--columns 80] [--keep DIR]

Runs `xcbench demo` (the embedded mini cluster, layouts/quick.yaml unless --matrix, the cluster
taken down after) with its output piped and COLUMNS set, as `make demo | tee log` or a CI job
shows it. Printed: the estimate line and the run's length (the manifest's start to end) with
their ratio (target: within ±25 %), the command's whole wall time (cluster up and down
included), the run's time by phase from its tables (the iperf3 baseline, the fio probes and their
settle steps, the campaign levels, and the rest: each cell's set-up and take-down), and the
closing table's widest line and its lines holding a single word (targets: ≤ COLUMNS, none).
Figures are printed, never asserted; the whole machine is busy for the demo's length (~10 min on
2 cores): run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
UNIT = {"s": 1.0, "min": 60.0, "h": 3600.0}


def estimate_seconds(line: str) -> tuple[float, float] | None:
    """(low, high) seconds from an estimate line: 'estimate: 5–9 min ...', '~8 min', '40 s'."""
    m = re.search(r"(\d+(?:\.\d+)?)\s*(?:[–-]\s*(\d+(?:\.\d+)?))?\s*(s|min|h)\b", line)
    if not m:
        return None
    lo = float(m.group(1)) * UNIT[m.group(3)]
    hi = float(m.group(2) or m.group(1)) * UNIT[m.group(3)]
    return lo, hi


def closing_lines(stdout: str) -> list[str]:
    """The closing table as printed: from its title to the line before 'run:'."""
    lines = stdout.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("what capped each level")), None)
    if start is None:
        return []
    end = next((i for i, ln in enumerate(lines[start:], start) if ln.startswith("run: ")), len(lines))
    return lines[start:end]


def lone_words(lines: list[str]) -> list[str]:
    """Lines whose text (table rules and borders aside) is one word."""
    out = []
    for ln in lines:
        words = [w for w in re.split(r"[\s│┃|]+", ln) if w and not set(w) <= set("━╇─┼╋")]
        if len(words) == 1 and len(ln.strip()) > 0 and not ln.strip().startswith(("what", "verdicts")):
            out.append(ln)
    return out


def phases(run: Path) -> dict[str, float]:
    """Seconds by phase from the run's tables."""
    m = json.loads((run / "manifest.json").read_text())
    length = (pd.Timestamp(m["end"]) - pd.Timestamp(m["start"])).total_seconds()
    out = {"run": length}
    for name, table in (("baseline", "baseline"), ("probes", "probes"), ("levels", "campaigns")):
        path = run / f"{table}.parquet"
        df = pd.read_parquet(path) if path.exists() else pd.DataFrame()
        if df.empty:
            out[name] = 0.0
        elif name == "baseline":
            out[name] = float(df["seconds"].fillna(0).sum())
        elif name == "probes":
            wall = df["wall_s"] if "wall_s" in df else df["runtime_s"]
            settle = df["settle_s"] if "settle_s" in df else 0.0
            out[name] = float(pd.to_numeric(wall, errors="coerce").fillna(0).sum()
                              + pd.to_numeric(settle, errors="coerce").fillna(0).sum())
        else:
            out[name] = float((df["finish_time"] - df["start_time"]).clip(lower=0).sum())
    out["set-up and the rest"] = length - out["baseline"] - out["probes"] - out["levels"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--matrix", help="another matrix (default: layouts/quick.yaml)")
    ap.add_argument("--columns", type=int, default=80, help="COLUMNS for the piped output")
    ap.add_argument("--keep", type=Path, help="the result store (default: a temp dir, removed)")
    a = ap.parse_args()
    store = a.keep or Path(tempfile.mkdtemp(prefix="xcb-bench-demo-"))
    cmd = [sys.executable, "-m", "xcbench", "demo", "--store", str(store), "--run-name", "demo"]
    if a.matrix:
        cmd += ["--matrix", a.matrix]
    env = {**os.environ, "COLUMNS": str(a.columns)}
    t0 = time.monotonic()
    cp = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    print(f"xcbench demo: exit {cp.returncode}, {wall:.0f} s wall (cluster up and down included)")
    if cp.returncode not in (0, 1):
        print(cp.stderr[-3000:])
        return 1
    est_line = next((ln.strip() for ln in cp.stderr.splitlines() if "estimate" in ln), "")
    run = store / "demo"
    ph = phases(run)
    print(f"the estimate printed: {est_line or '(none)'}")
    est = estimate_seconds(est_line)
    if est:
        mid = (est[0] + est[1]) / 2
        print(f"the run's length: {ph['run']:.0f} s = x{ph['run'] / mid:.2f} of the estimate's middle "
              f"({mid:.0f} s; target within ±25 %: x0.75–x1.25)")
    print("by phase: " + ", ".join(f"{k} {v:.0f} s" for k, v in ph.items() if k != "run"))
    table = closing_lines(cp.stdout)
    widest = max((len(ln) for ln in table), default=0)
    lone = lone_words(table)
    print(f"closing table: {len(table)} lines, widest {widest} columns (COLUMNS={a.columns}), "
          f"{len(lone)} line(s) holding one word")
    for ln in lone:
        print(f"  one word: {ln!r}")
    print("\n".join(table))
    if not a.keep:
        shutil.rmtree(store, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
