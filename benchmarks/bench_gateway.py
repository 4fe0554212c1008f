"""Gateway start time and per-file latencies on tmpfs (no Ceph needed).

    /work/main/.venv/bin/python benchmarks/bench_gateway.py [--rounds 3] [--size 64M]

Prints, per round: seconds until a single gateway answers and until 2 origins behind a cmsd
redirector answer; one upload of --size with xrdcp directly and through the redirector (every
new file there waits for the cmsd query deadline, 1 s as configured); and a root TPC and an
HTTP-TPC of the same file between two gateways (XrdCl polls root TPCs every 2.5 s). Ratios are
against a 2 s start target and against the direct upload. Timings depend on what else runs on
this 2-core machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import requests

from xcbench.cell import Cell
from xcbench.figures.units import format_size, parse_size
from xcbench.run.session import CellSession
from xcbench.system import proc
from xcbench.system.proc import ProcessSet

TARGET_START_S = 2.0


def timed(fn) -> float:
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def one_round(wd: Path, size: int, i: int) -> dict[str, float]:
    """Times include the tmpfs target's prepare (a mount: milliseconds beside the gateway)."""
    procs = ProcessSet()
    cells = [Cell(id=f"bench{i}{n}", label="bench", backend="tmpfs", origins=2 if n == 1 else 1,
                  tmpfs_size=max(4 * size, 64 << 20)) for n in range(3)]
    wd.mkdir(parents=True, exist_ok=True)
    src_file = wd / "src.bin"
    src_file.write_bytes(bytes(size))
    out: dict[str, float] = {}
    try:
        with ExitStack() as stack:
            gws = []
            for n, key in enumerate(("start 1 origin", "start 2 origins", None)):
                t0 = time.monotonic()
                s = stack.enter_context(CellSession(cells[n], cluster=None, workdir=wd, procs=procs))
                if key:
                    out[key] = time.monotonic() - t0
                gws.append(s.gateway)
            single, redir, other = gws
            out["push direct"] = timed(lambda: proc.run(["xrdcp", "-f", "--nopbar", src_file, single.url("f")]))
            out["push via redirector"] = timed(
                lambda: proc.run(["xrdcp", "-f", "--nopbar", src_file, redir.url(f"f{i}")]))
            out["root TPC"] = timed(lambda: proc.run(["xrdcp", "--tpc", "only", "--nopbar",
                                                      single.url("f"), other.url("rt")]))
            out["HTTP-TPC"] = timed(lambda: requests.request(
                "COPY", other.url("ht", "http"), headers={"Source": single.url("f", "http")},
                timeout=300).raise_for_status())
    finally:
        procs.stop_all()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", default="64M")
    args = ap.parse_args()
    size = parse_size(args.size)
    rows = []
    with tempfile.TemporaryDirectory(prefix="xcb-bench-gw-", dir="/var/tmp") as d:
        for i in range(args.rounds):
            rows.append(one_round(Path(d) / f"r{i}", size, i))
            print(f"round {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in rows[-1].items()))
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"\nmedians over {args.rounds} rounds, {format_size(size)} files:")
    for k, v in med.items():
        if k.startswith("start"):
            ratio = f"{v / TARGET_START_S:.2f} of the {TARGET_START_S:g} s target"
        else:
            ratio = f"{v / med['push direct']:.1f}x the direct upload"
        print(f"  {k:20} {v:6.2f} s   ({ratio})")


if __name__ == "__main__":
    main()
