"""`xcbench confirm` as a benchmark: each verdict of a run tested by relieving or tightening the
limit it names, the predicted ratio beside the measured one, and the count of outcomes.

    .venv/bin/python benchmarks/bench_confirm.py RUN [--level N] [--test VERDICT ...] [--pairs N]
    .venv/bin/python benchmarks/bench_confirm.py --network 200mbit [--test network]

RUN: a run already made (a directory); a demo run made and confirmed, with the counts by outcome
and verdict: benchmarks/bench_confirm_demo.py. --network RATE: two emulated hosts (a client host whose link is shaped to RATE, a gateway host
with a tmpfs gateway; the self-test's network set-up), a run at c=2 from the client host, then
confirm replays it from the same hosts (the link halved for the changed runs); the hosts are
removed after. Printed: confirm's own lines (experiment, predicted and measured ratio with its
bounds, the outcome), the count of outcomes, and the wall time of each step. Figures are printed,
never asserted: a shared 2-core machine moves the rates.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def xcbench(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    cp = subprocess.run([sys.executable, "-m", "xcbench", *args], cwd=ROOT, capture_output=True, text=True)
    return cp, time.monotonic() - t0


def confirm(run: str, extra: list[str]) -> None:
    cp, took = xcbench("confirm", run, *extra)
    print(cp.stdout.rstrip())
    if cp.returncode not in (0, 1):
        print(cp.stderr[-3000:])
    print(f"confirm: exit {cp.returncode} (1: a verdict refuted) in {took // 60:.0f} min {took % 60:02.0f} s")


def network(rate: str, store: Path, extra: list[str]) -> None:
    from xcbench.hosts.emulate import free_network
    from xcbench.selftest import network as net
    why = net.why_not()
    if why:
        sys.exit(f"bench_confirm: --network: {why}")
    sizes = {**net.levels_of(quick=True), "file_size": "16M"}
    name = f"bench-confirm-net-{int(time.time())}"
    tag = f"{int(time.time()) % 100000}"
    with net.emulated(net.inventory_doc(tag, rate, free_network()), store, name) as inv:
        t0 = time.monotonic()
        run = net._run(net.matrix_doc(name, (2,), sizes), name, None, store / "r", store, inv, False)
        (v,) = run.table("verdicts").to_dict("records")
        print(f"run at c=2 over a {rate} client link: {v['verdict']} ({time.monotonic() - t0:.0f} s): {v['reason']}")
        confirm(str(run.path), extra)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", nargs="?", help="a run directory to confirm")
    ap.add_argument("--network", metavar="RATE", help="a run on emulated hosts, the client link shaped to RATE")
    ap.add_argument("--level", help="only the verdicts at this level")
    ap.add_argument("--test", action="append", default=[], metavar="VERDICT",
                    help="test this cause instead of the verdict the run named (repeatable)")
    ap.add_argument("--pairs", help="control/changed pairs per experiment (confirm's default: 2)")
    ap.add_argument("--keep", type=Path, help="the result store (default: a temp dir, kept: its path is printed)")
    a = ap.parse_args()
    if sum(map(bool, (a.run, a.network))) != 1:
        ap.error("give one of RUN or --network RATE")
    extra = [*(["--level", a.level] if a.level else []), *(["--pairs", a.pairs] if a.pairs else []),
             *[x for t in a.test for x in ("--test", t)]]
    store = a.keep or Path(tempfile.mkdtemp(prefix="xcb-bench-confirm-"))
    print(f"result store: {store}")
    if a.run:
        confirm(a.run, extra)
    else:
        network(a.network, store, extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
