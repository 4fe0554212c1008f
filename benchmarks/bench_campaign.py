"""The campaign driver beside its CLI-loop peer, for every client x mode, in one run.

The same FILES files of SIZE into the same tmpfs gateway at concurrency CONC, checksum none
(bare CLI copies verify nothing either), by the campaign driver (one process) and by a parallel
loop keeping CONC CLI processes running (the way sites and the US-CMS/RAL/FNAL studies test):

    XRootD push             vs  xrdcp                       (root://)
    gfal2 push              vs  gfal-copy                   (file:// -> root://)
    HTTP push (XrdHttp PUT) vs  curl -T                     (the gfal2 client over http://)
    root TPC (XRootD, gfal2) vs xrdcp --tpc only / gfal-copy (source gateway -> destination)
    HTTP-TPC (COPY, gfal2)  vs  gfal-copy --copy-mode pull  (streaming fallback off)

The loops read local files on /dev/shm written before their clock; the driver's rate is the
campaign's (first attempt start to last finish: HTTP pushes stage their local files and TPC
campaigns their source before that clock too). CPU: the driver's own figure (driver_cpu_cores,
process CPU over the campaign) and the loop's children CPU over its wall time, in cores.
Reads: the same files read back by read campaigns (XRootD client, gfal2, HTTP GET; the dataset
written into the gateway before the clock) vs xrdcp to /dev/null and curl -o /dev/null, and the
read/write ratio of the XRootD client (RAL measured reads well above writes per gateway).
Targets: every driver >= 3x its loop; gfal2 push >= 0.7x XRootD push. Not a test: prints
numbers (a shared 2-core machine: expect noise; use --repeats for medians). ``--many N`` adds
a campaign of N small files at concurrency N (threads in one process): every file must have
exactly one final record, and the peak concurrency in the records is printed.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xcbench.campaign import CampaignSpec, Dataset, run_campaign  # noqa: E402
from xcbench.cell import Cell  # noqa: E402
from xcbench.run.session import CellSession  # noqa: E402
from xcbench.system import proc  # noqa: E402

GFAL_TPC_HTTP = ["--copy-mode", "pull", "-D", "HTTP PLUGIN:ENABLE_STREAM_COPY=false",
                 "-D", "HTTP PLUGIN:ENABLE_FALLBACK_TPC_COPY=false"]
# (label, campaign mode, campaign client, destination scheme, loop label, loop command)
PAIRS = [
    ("XRootD push", "push", "xrootd", "root", "xrdcp",
     lambda s, d: ["xrdcp", "-f", "--nopbar", s, d]),
    ("gfal2 push", "push", "gfal2", "root", "gfal-copy",
     lambda s, d: ["gfal-copy", "-f", "file://" + s, d]),
    ("HTTP push (XrdHttp PUT)", "push", "gfal2", "http", "curl -T",
     lambda s, d: ["curl", "-sS", "-f", "-T", s, d]),
    ("root TPC, XRootD client", "tpc-root", "xrootd", "root", "xrdcp --tpc only",
     lambda s, d: ["xrdcp", "-f", "--nopbar", "--tpc", "only", s, d]),
    ("root TPC, gfal2", "tpc-root", "gfal2", "root", "gfal-copy",
     lambda s, d: ["gfal-copy", "-f", s, d]),
    ("HTTP-TPC, COPY (XRootD client)", "tpc-http", "xrootd", "http", "gfal-copy (pull)",
     lambda s, d: ["gfal-copy", "-f", *GFAL_TPC_HTTP, s, d]),
    ("HTTP-TPC, gfal2", "tpc-http", "gfal2", "http", "gfal-copy (pull)",
     lambda s, d: ["gfal-copy", "-f", *GFAL_TPC_HTTP, s, d]),
]
# (label, campaign client, loop label, loop command): reads from the gateway to nowhere
READS = [
    ("XRootD read", "xrootd", "xrdcp > /dev/null", lambda s: ["xrdcp", "-f", "--nopbar", s, "/dev/null"]),
    ("gfal2 read", "gfal2", "xrdcp > /dev/null", lambda s: ["xrdcp", "-f", "--nopbar", s, "/dev/null"]),
    ("HTTP GET read", "http", "curl -o /dev/null", lambda s: ["curl", "-sS", "-f", "-o", "/dev/null", s]),
]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def clear(gw) -> None:
    for p in Path(gw.target.path).iterdir():
        if p.is_file():
            p.unlink()


def cli_loop(cmds: list[list[str]], conc: int, env: dict, nbytes: int) -> dict:
    """Keep ``conc`` processes running until every command has run; all must succeed."""
    c0, t0 = children_cpu(), time.time()
    running: list = []
    todo = list(cmds)
    while todo or running:
        while todo and len(running) < conc:
            running.append(proc.spawn(todo.pop(0), env=env))
        for p in list(running):
            if p.popen.poll() is not None:
                if p.popen.returncode != 0:
                    raise SystemExit(f"{p.popen.args}: exit {p.popen.returncode}")
                running.remove(p)
        time.sleep(0.005)
    dt = time.time() - t0
    return {"rate": nbytes / dt, "cpu": (children_cpu() - c0) / dt}


def driver(args, mode: str, client: str, dest, source) -> tuple[dict, list[dict]]:
    rows: dict[str, list] = {}
    spec = CampaignSpec(files=args.files, file_size=args.size_mib << 20, mode=mode, client=client,
                        concurrency=args.concurrency, checksum="none", timeout=600)
    row = run_campaign(spec, dest=dest, source=source,
                       sink=lambda t, r: rows.setdefault(t, []).extend(r))
    if row["finished"] != args.files:
        bad = [r["reason"] for r in rows["transfers"] if r["file_state"] != "FINISHED"]
        raise SystemExit(f"{mode}/{client}: {row['failed']} transfers failed, e.g. {bad[:1]}")
    return {"rate": row["rate"], "cpu": row["driver_cpu_cores"],
            "limit": (row["driver_cpu_limit_cores"], row["driver_cpu_limit_source"])}, rows["transfers"]


def read_pair(args, pair, dst) -> tuple[dict, dict]:
    label, client, _, cmd = pair
    rows: dict[str, list] = {}
    spec = CampaignSpec(files=args.files, file_size=args.size_mib << 20, direction="read",
                        client=client, concurrency=args.concurrency, checksum="none", timeout=600)
    row = run_campaign(spec, dest=dst, sink=lambda t, r: rows.setdefault(t, []).extend(r))
    if row["finished"] != args.files:
        bad = [r["reason"] for r in rows["transfers"] if r["file_state"] != "FINISHED"]
        raise SystemExit(f"{label}: {row['failed']} reads failed, e.g. {bad[:1]}")
    drv = {"rate": row["rate"], "cpu": row["driver_cpu_cores"]}
    urls = [r["source"] for r in sorted(rows["transfers"], key=lambda r: r["file_index"])]
    loop = cli_loop([cmd(u) for u in urls], args.concurrency, dst.client_env,
                    args.files * (args.size_mib << 20))
    return drv, loop


def run_pair(args, pair, dst, src, files: list[Path], k: int) -> tuple[dict, dict | None]:
    label, mode, client, scheme, _, cmd = pair
    dest = dst if scheme == "root" else dst.http_url
    drv, transfers = driver(args, mode, client, dest, src if mode != "push" else None)
    clear(dst)
    if cmd(".", ".")[0] == "gfal-copy" and not shutil.which("gfal-copy"):
        return drv, None
    nbytes = args.files * (args.size_mib << 20)
    if mode == "push":
        sources = [str(f) for f in files]
    else:  # the driver staged the dataset on the source gateway: the loop copies the same files
        sources = [r["source"] for r in sorted(transfers, key=lambda r: r["file_index"])]
    cmds = [cmd(s, dst.url(f"loop{k}-{i:06d}", scheme)) for i, s in enumerate(sources)]
    loop = cli_loop(cmds, args.concurrency, dst.client_env, nbytes)
    clear(dst)
    return drv, loop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--size-mib", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=1, help="runs per pair (median kept)")
    ap.add_argument("--only", default="", help="run the pairs whose label contains this "
                    "(comma-separated: any of these)")
    ap.add_argument("--many", type=int, default=0, metavar="N",
                    help="also N files of 4 MiB at concurrency N, XRootD and gfal2 (e.g. 1200)")
    args = ap.parse_args()
    wanted = [w.strip().lower() for w in args.only.split(",")]
    pairs = [p for p in PAIRS if any(w in p[0].lower() for w in wanted)]
    gib = args.files * (args.size_mib << 20)
    with ExitStack() as stack:
        procs = proc.ProcessSet()
        stack.callback(procs.stop_all)
        work = Path(tempfile.mkdtemp(prefix="xcb-bench-campaign-"))
        work.chmod(0o755)
        stack.callback(shutil.rmtree, work, True)
        gws = []
        for name in ("bench-dst", "bench-src"):
            cell = Cell(id=name, label=name, backend="tmpfs", tmpfs_size=gib + (512 << 20))
            gws.append(stack.enter_context(CellSession(cell, cluster=None, workdir=work, procs=procs,
                                                       name=name)).gateway)
        dst, src = gws
        local = Path(tempfile.mkdtemp(prefix="xcb-bench-src-", dir="/dev/shm"))
        stack.callback(shutil.rmtree, local, True)
        ds = Dataset.generate(args.files, args.size_mib << 20)
        files = [ds.materialise(i, local / ds.name(i)) for i in range(args.files)]

        reads = [p for p in READS if any(w in p[0].lower() for w in wanted)]
        results: dict[str, tuple[list, list]] = {p[0]: ([], []) for p in pairs + reads}
        t0 = time.time()
        for k in range(args.repeats):
            for p in pairs:
                drv, loop = run_pair(args, p, dst, src, files, k)
                results[p[0]][0].append(drv)
                if loop:
                    results[p[0]][1].append(loop)
            for r in reads:
                drv, loop = read_pair(args, r, dst)
                results[r[0]][0].append(drv)
                results[r[0]][1].append(loop)
            clear(dst)
        report(args, [p[0::4] for p in pairs] + [(r[0], r[2]) for r in reads], results,
               time.time() - t0)
        for client in ("xrootd", "gfal2") if args.many else ():
            many(dst, args.many, client)


def many(dst, n: int, client: str) -> None:
    rows: dict[str, list] = {}
    spec = CampaignSpec(files=n, file_size=4 << 20, concurrency=n, client=client, checksum="both",
                        delete_after_verify=True, timeout=300)
    t0 = time.time()
    row = run_campaign(spec, dest=dst, sink=lambda t, r: rows.setdefault(t, []).extend(r))
    dt = time.time() - t0
    ts = rows["transfers"]
    per_file: dict[int, int] = {}
    for r in ts:
        per_file[r["file_index"]] = per_file.get(r["file_index"], 0) + 1
    events = sorted([(r["start_time"], 1) for r in ts if r["start_time"]] +
                    [(r["finish_time"], -1) for r in ts if r["start_time"]])
    peak = cur = 0
    for _, d in events:
        cur += d
        peak = max(peak, cur)
    lost = n - len(per_file) + sum(1 for v in per_file.values() if v > 1)
    print(f"  {client}: {n} files x 4 MiB at concurrency {n}, checksum both: {row['finished']} "
          f"finished, {row['failed']} failed, {dt:.1f} s, peak in flight {peak}, driver CPU "
          f"{row['driver_cpu_cores']:.2f} cores, lost/duplicated records: {lost}")


def report(args, pairs, results, seconds: float) -> None:
    def med(runs, key):
        return statistics.median(r[key] for r in runs)

    print(f"{args.files} x {args.size_mib} MiB at concurrency {args.concurrency}, checksum none, "
          f"tmpfs gateways, median of {args.repeats} ({seconds:.0f} s):")
    print(f"  {'driver (client, mode)':32s} {'MiB/s':>7s} {'CPU':>6s}   {'CLI loop':18s} "
          f"{'MiB/s':>7s} {'CPU':>6s}  {'ratio':>6s}  target")
    for label, loop_label in pairs:
        drv, loop = results[label]
        d = med(drv, "rate") / 2**20
        line = f"  {label:32s} {d:7.0f} {med(drv, 'cpu'):6.2f}   "
        if loop:
            lr = med(loop, "rate") / 2**20
            ratio = d / lr
            line += (f"{loop_label:18s} {lr:7.0f} {med(loop, 'cpu'):6.2f}  {ratio:6.2f}  >= 3 "
                     f"{'ok' if ratio >= 3 else 'MISSED'}")
        else:
            line += f"{loop_label:18s} not installed (gfal2-util-scripts: make setup)"
        print(line)
    if "gfal2 push" in results and "XRootD push" in results:
        g = med(results["gfal2 push"][0], "rate") / med(results["XRootD push"][0], "rate")
        print(f"  gfal2 push / XRootD push: {g:.2f} (target >= 0.7 {'ok' if g >= 0.7 else 'MISSED'})")
    if "XRootD read" in results and "XRootD push" in results:
        rw = med(results["XRootD read"][0], "rate") / med(results["XRootD push"][0], "rate")
        print(f"  XRootD read / XRootD push (same files, one gateway): {rw:.2f}")
    limit = next((r[0][0]["limit"] for r in results.values() if "limit" in r[0][0]), ("?", "?"))
    print(f"  CPU: cores used (driver: its process over the campaign; loop: its processes over "
          f"its wall time); driver limit {limit[0]} cores ({limit[1]})")


if __name__ == "__main__":
    main()
