"""The self-test as a benchmark: how long the known-answer scenarios take here and what each
check measured (capped against uncapped, each role against its quota, a device against its
throttle, a link against its shaped rate).

    .venv/bin/python benchmarks/bench_selftest.py [--quick] [--scenario NAME ...] [--allow-missing NAME ...]

Runs `xcbench selftest` with those arguments (the embedded mini cluster started for it and taken
down after; the network scenario needs none) and prints its table (expected against attributed,
uncapped/capped with the 95 % bound, each role's CPU, limit and source, the checks right out of
all) and its wall time. Figures are printed, never asserted: a check that fails is reported, and
a shared 2-core machine moves the rates (the verdicts should not move).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer cells and shorter levels")
    ap.add_argument("--scenario", action="append", default=[], help="only this scenario (repeatable)")
    ap.add_argument("--allow-missing", action="append", default=[], metavar="NAME",
                    help="a scenario this host cannot make (not run, with its reason)")
    a = ap.parse_args()
    cmd = [sys.executable, "-m", "xcbench", "selftest"] + (["--quick"] if a.quick else []) \
        + [x for s in a.scenario for x in ("--scenario", s)] \
        + [x for s in a.allow_missing for x in ("--allow-missing", s)]
    t0 = time.monotonic()
    cp = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    print(cp.stdout.rstrip())
    if cp.returncode not in (0, 1):
        print(cp.stderr[-3000:])
    print(f"\n{' '.join(cmd[2:])}: exit {cp.returncode} in {wall // 60:.0f} min {wall % 60:02.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
