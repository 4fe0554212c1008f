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
    """Seconds by phase from the run's manifest and tables: before the first cell (the iperf3
    baseline, the TCP audit), the levels, the fio probes (level probes with their settle steps, the
    cells' own jobs), each cell's set-up (the rest of its time), and after the last cell (the
    verdicts and the report)."""
    m = json.loads((run / "manifest.json").read_text())
    t = lambda s: pd.Timestamp(s).timestamp()  # noqa: E731
    start, end = t(m["start"]), t(m["end"])
    cells = [(t(c["start"]), t(c["end"])) for c in m["cells"].values() if c.get("start") and c.get("end")]
    camp, probes = (pd.read_parquet(run / f"{x}.parquet") if (run / f"{x}.parquet").exists() else pd.DataFrame()
                    for x in ("campaigns", "probes"))
    levels = float((camp["finish_time"] - camp["start_time"]).clip(lower=0).sum()) if len(camp) else 0.0
    fio = 0.0
    if len(probes):
        wall = pd.to_numeric(probes.get("wall_s"), errors="coerce")
        settle = pd.to_numeric(probes.get("settle_s"), errors="coerce").fillna(0)
        runtime = pd.to_numeric(probes["runtime_s"], errors="coerce")
        fio = float(wall.fillna(runtime).fillna(0).sum() + settle.sum())
    in_cells = sum(b - a for a, b in cells)
    return {"run": end - start, "before the cells (iperf3)": min(a for a, _ in cells) - start if cells else 0.0,
            "levels": levels, "fio probes": fio, "set-up": in_cells - levels - fio,
            "verdicts and report": end - max(b for _, b in cells) if cells else 0.0}


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
