"""Benchmark: analysis + HTML report of a run with 1 M transfer records and 1 M samples.

Target: under 30 s. The run is synthetic (tests/support/synthrun.py, written straight
to Parquet; generating it is not timed) with 16 cells x 4 concurrency levels x 2 repeats.
Timed: what `xcbench report RUN` does - load the tables, steady windows, points with bootstrap
CIs, attribution, plots, rendering. Prints the time and its ratio to the 30 s target.

    .venv/bin/python benchmarks/bench_analysis.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.synthrun import GIB, MIB, SynthCell, make_run  # noqa: E402

TARGET_S = 30.0
TRANSFERS = 1_000_000
SAMPLES = 1_000_000


def cells() -> list[SynthCell]:
    M, K = 1 << 20, 1 << 10
    out = [SynthCell("tmpfs", per_stream=150 * MIB, gateway=1.5 * GIB)]
    for backend in ("cephfs", "rados"):
        for su, sc, os_ in ((4 * M, 1, 4 * M), (1 * M, 4, 4 * M), (64 * K, 1, 4 * M), (4 * M, 2, 8 * M)):
            for pool, bw, iops in (("rep3", 1.2 * GIB, 4000), ("ec4+2", 1.6 * GIB, 1500)):
                if len(out) < 16:
                    out.append(SynthCell(backend, (su, sc, os_), pool, per_stream=150 * MIB,
                                         gateway=1.5 * GIB, fio_bw=bw, fio_iops=iops,
                                         ec_factor=0.7 if pool.startswith("ec") else 1.0))
    for c in out:
        c.concurrency, c.repeats, c.file_size = (4, 8, 16, 32), 2, 20 << 20
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="keep the generated run and report in this dir")
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="xcb-bench-"))
    cs = cells()
    files = TRANSFERS // sum(len(c.concurrency) * c.repeats for c in cs) + 1
    for c in cs:
        c.files = files
    t = time.perf_counter()
    path, _ = make_run(tmp, cs, write="parquet", name="bench")
    gen = time.perf_counter() - t
    import pyarrow.parquet as pq
    n_tr = pq.read_metadata(path / "transfers.parquet").num_rows
    n_sa = pq.read_metadata(path / "samples.parquet").num_rows
    print(f"generated {n_tr:,} transfers, {n_sa:,} samples in {gen:.1f} s (not timed)")
    if n_tr < TRANSFERS or n_sa < SAMPLES:
        print("error: the synthetic run is smaller than the target", file=sys.stderr)
        return 1

    from xcbench.analysis.report.document import render_report
    from xcbench.analysis.verdicts.attribution import attribute
    from xcbench.analysis.verdicts.run_data import RunData
    t0 = time.perf_counter()
    rd = RunData(path)
    _ = rd.points, rd.transfer_quantiles
    t1 = time.perf_counter()
    verdicts = attribute(rd)
    t2 = time.perf_counter()
    out = render_report([rd], "html", path / "report.html")
    t3 = time.perf_counter()
    total = t3 - t0
    print(f"load + steady state + points: {t1 - t0:.1f} s; attribution ({len(verdicts)} verdicts): "
          f"{t2 - t1:.1f} s; report (plots + HTML, {out.stat().st_size / 1e6:.1f} MB): {t3 - t2:.1f} s")
    print(f"analysis + report of {n_tr:,} transfers and {n_sa:,} samples: {total:.1f} s "
          f"= {total / TARGET_S:.2f} x the {TARGET_S:.0f} s target "
          f"({'OK' if total < TARGET_S else 'TOO SLOW'})")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
