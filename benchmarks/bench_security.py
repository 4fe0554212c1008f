"""What TLS and tokens cost a gateway: one run of tmpfs cells with security none, tls, scitokens
and macaroons, each pushed (roots://; macaroons: https with gfal2) and pulled by HTTP-TPC
(https://), and the ratios to none.

    .venv/bin/python benchmarks/bench_security.py [--files 48] [--file-size 32M] [--concurrency 4]
                                                  [--repeats 2] [--out DIR] [--rados]

Prints per (mode, security): the gateway's CPU seconds per GB (campaigns.gateway_cpu_s_per_gb,
median over the levels' repeats), the campaign rate, and each as a ratio to security none of the
same mode, measured in the same run (cells interleaved by the matrix order; --repeats runs the
whole cell list again). Then `xcbench plan --calibrate RUN` for 100 Gb/s prints the gateways and
cores from those figures. Ratios are printed, never asserted: this 2-core machine is shared.
The CPU clock counts in 10 ms ticks: a cell must move enough bytes (default 1.5 GB per level)
for its s/GB to mean something. --rados adds the same cells on an XrdCeph gateway (starts the
embedded mini cluster).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import yaml


def matrix(path: Path, args) -> Path:
    dims = {"concurrency": [args.concurrency], "files": args.files, "file_size": args.file_size,
            "modes": ["push", "tpc-http"], "security": ["none", "tls", "scitokens"],
            "repeats": args.repeats, "campaign": {"timeout": 300, "retries": 1}}
    backends: dict = {"tmpfs": {"size": "2G"}}
    if args.rados:
        backends["rados"] = {"layouts": [{"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"}],
                             "pools": ["replicated"]}
    # macaroons travel over HTTP only: their cells push with gfal2 over https (the table says so)
    include = [{"backend": "tmpfs", "size": "2G", "security": "macaroons", "modes": ["push", "tpc-http"],
                "campaign": {"timeout": 300, "retries": 1, "client": "gfal2"}}]
    path.write_text(yaml.safe_dump({"name": "bench-security", "defaults": dims, "backends": backends,
                                    "include": include}))
    return path


def _proto(settings) -> str:
    """The protocol the campaign chose (its settings' choices), e.g. roots, https."""
    import json
    try:
        s = json.loads(settings) if isinstance(settings, str) else settings or {}
    except ValueError:
        return "?"
    for c in s.get("choices") or ():
        if c.get("what") == "protocol":
            return str(c.get("chosen"))
    return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=48)
    ap.add_argument("--file-size", default="32M")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--rados", action="store_true")
    args = ap.parse_args()

    from xcbench.analysis.verdicts.run_data import RunData
    from xcbench.cli import main as xcb
    from xcbench.matrix import ClusterFacts, load_matrix
    from xcbench.run.runner import RunOptions, run_matrix

    out = Path(args.out or tempfile.mkdtemp(prefix="xcb-bench-sec-"))
    out.mkdir(parents=True, exist_ok=True)
    m = matrix(out / "security.yaml", args)
    opts = RunOptions(store=out / "results", name="security", baseline=False, probes=False,
                      report=True, report_format="md", progress=False, telemetry="host,roles")
    if args.rados:
        from xcbench.ceph.mini import MiniCluster
        mc = MiniCluster(out / "cluster")
        cluster, _ = mc.up()
        try:
            run = run_matrix(load_matrix(m, cluster), cluster, opts)
        finally:
            cluster.close()
            mc.down()
    else:
        run = run_matrix(load_matrix(m, facts=ClusterFacts()), None, opts)
    camp = run.table("campaigns")
    cells = RunData(run).cell_objects
    camp = camp.assign(backend=camp["cell_id"].map(lambda c: cells[c].backend),
                       proto=camp["settings"].map(_proto),
                       s=camp["gateway_cpu_s_per_gb"].astype(float), r=camp["rate"].astype(float))
    failed = int(camp["failed"].sum())
    print(f"run {run.path} ({len(camp)} campaigns, {failed} failed transfers; every finished one "
          "checksum-verified)")
    print(f"{'backend':8s} {'mode':9s} {'security':10s} {'protocol':9s} {'core-s/GB':>10s} {'x none':>7s} "
          f"{'rate MB/s':>10s} {'x none':>7s}")
    proto = camp.groupby(["backend", "mode", "security"])["proto"].first()
    med = camp.groupby(["backend", "mode", "security"])[["s", "r"]].median()
    for (b, mode, sec), row in med.iterrows():
        base = med.loc[(b, mode, "none")] if (b, mode, "none") in med.index else None
        ratio_s = f"{row.s / base.s:.2f}" if base is not None and base.s > 0 else "-"
        ratio_r = f"{row.r / base.r:.2f}" if base is not None and base.r > 0 else "-"
        print(f"{b:8s} {mode:9s} {sec:10s} {proto[(b, mode, sec)]:9s} {row.s:10.3f} {ratio_s:>7s} "
              f"{row.r / 1e6:10.1f} {ratio_r:>7s}")
    print()
    sys.stdout.flush()
    return xcb(["plan", "--rate", "100Gb/s", "--calibrate", str(run.path), "--calibrate-osds", "3",
                "--rtt", "5,40,120"])


if __name__ == "__main__":
    sys.exit(main())
