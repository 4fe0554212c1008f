"""Campaign driver vs bare xrdcp processes, and 1200 concurrent transfers from one process.

1. The same 16 files of 256 MiB pushed into the same tmpfs gateway at concurrency 16, by
   (a) 16 `xrdcp` processes started by a parallel loop (the files are local on /dev/shm) and
   (b) the campaign driver (one process, XRootD Python client, one thread per transfer).
   Prints the aggregate rate ratio (target >= 3) and the driver's CPU per GB over the loop's
   (target <= 0.5). CPU: resource.getrusage — RUSAGE_CHILDREN for the xrdcp processes,
   RUSAGE_SELF for the driver (this process does nothing else meanwhile). The gateway's own CPU
   is read from /proc for both. The driver runs with checksum none like bare xrdcp, and once
   more with checksum both (adler32 on the gateway) for reference. Runs alternate, median kept.
2. A campaign of small files (4 MiB: long enough for 1200 to be in flight at once on this
   machine) at concurrency 1200, threads in one process: every file must have
   exactly one final record (zero lost), and the peak concurrency seen in the records is printed.

Not a test: prints numbers (the machine has 2 cores shared with others: expect noise).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xcbench import proc  # noqa: E402
from xcbench.campaign import CampaignSpec, Dataset, run_campaign  # noqa: E402
from xcbench.cell import Cell  # noqa: E402
from xcbench.session import CellSession  # noqa: E402

FILES, SIZE, CONC = 16, 256 << 20, 16
REPEATS = 3
SMALL_FILES, SMALL_SIZE, SMALL_CONC = 2400, 4 << 20, 1200


def cpu(kind) -> float:
    r = resource.getrusage(kind)
    return r.ru_utime + r.ru_stime


def proc_cpu(pids) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


def clear(gw) -> None:
    for p in Path(gw.target.path).iterdir():
        p.unlink()


def xrdcp_loop(gw, files: list[Path], tag: str) -> dict:
    """A shell-style parallel loop: keep CONC xrdcp processes running until all are done."""
    c0, g0, t0 = cpu(resource.RUSAGE_CHILDREN), proc_cpu(gw.pids), time.time()
    running, todo = [], list(files)
    while todo or running:
        while todo and len(running) < CONC:
            f = todo.pop(0)
            running.append(proc.spawn(["xrdcp", "-f", "--nopbar", f, gw.url(f"{tag}-{f.name}")]))
        for p in list(running):
            if p.popen.poll() is not None:
                p.popen.wait()
                if p.popen.returncode != 0:
                    raise SystemExit(f"xrdcp failed: exit {p.popen.returncode}")
                running.remove(p)
        time.sleep(0.005)
    dt = time.time() - t0
    n = sum(f.stat().st_size for f in files)
    return {"rate": n / dt, "cpu_per_gb": (cpu(resource.RUSAGE_CHILDREN) - c0) / (n / 1e9),
            "gw_cpu_per_gb": (proc_cpu(gw.pids) - g0) / (n / 1e9), "seconds": dt}


def driver(gw, checksum: str) -> dict:
    spec = CampaignSpec(files=FILES, file_size=SIZE, concurrency=CONC, checksum=checksum,
                        timeout=600)
    c0, g0, t0 = cpu(resource.RUSAGE_SELF), proc_cpu(gw.pids), time.time()
    row = run_campaign(spec, dest=gw)
    dt = time.time() - t0
    if row["finished"] != FILES:
        raise SystemExit(f"driver: {row['failed']} transfers failed")
    n = FILES * SIZE
    return {"rate": n / dt, "cpu_per_gb": (cpu(resource.RUSAGE_SELF) - c0) / (n / 1e9),
            "gw_cpu_per_gb": (proc_cpu(gw.pids) - g0) / (n / 1e9), "seconds": dt}


def async_push(gw, files: int, size: int, conc: int) -> dict:
    """The other design, measured: no thread per transfer; XRootD async callbacks chain
    open -> write ... -> close, and a finished file starts the next (no checksum, no records)."""
    from XRootD import client as xc
    from XRootD.client.flags import AccessMode, OpenFlags
    ds = Dataset.generate(files, size, block_size=4 << 20)
    mode = AccessMode.UR | AccessMode.UW | AccessMode.GR | AccessMode.OR
    done, lock, errors = threading.Event(), threading.Lock(), []
    state = {"next": 0, "left": files}

    def start() -> None:
        with lock:
            if state["next"] >= files:
                return
            i = state["next"]
            state["next"] += 1
        f, chunks = xc.File(), list(ds.chunks(i))

        def finished(st) -> None:
            if not st.ok:
                errors.append(st.message)
            with lock:
                state["left"] -= 1
                last = state["left"] == 0
            if last:
                done.set()
            else:
                start()

        def write(k: int, off: int):
            def cb(st, _resp, _hosts):
                if not st.ok:
                    return finished(st)
                if k == len(chunks):
                    return f.close(callback=lambda st2, r, h: finished(st2))
                f.write(chunks[k], off, len(chunks[k]), callback=write(k + 1, off + len(chunks[k])))
            return cb

        f.open(gw.url(f"async-{i:06d}", "root").replace("root://", f"root://xcb{i % 16}@"),
               OpenFlags.DELETE, mode, callback=write(0, 0))

    c0, t0 = cpu(resource.RUSAGE_SELF), time.time()
    for _ in range(min(conc, files)):
        start()
    done.wait()
    dt = time.time() - t0
    if errors:
        raise SystemExit(f"async push: {len(errors)} errors, e.g. {errors[0]}")
    n = files * size
    return {"rate": n / dt, "cpu_per_gb": (cpu(resource.RUSAGE_SELF) - c0) / (n / 1e9),
            "seconds": dt, "files_per_s": files / dt}


def med(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def small_files(gw) -> None:
    rows: dict[str, list] = {}
    spec = CampaignSpec(files=SMALL_FILES, file_size=SMALL_SIZE, concurrency=SMALL_CONC,
                        checksum="both", delete_after_verify=True, timeout=300, retries=0)
    c0, t0 = cpu(resource.RUSAGE_SELF), time.time()
    row = run_campaign(spec, dest=gw, sink=lambda t, r: rows.setdefault(t, []).extend(r))
    dt, used = time.time() - t0, cpu(resource.RUSAGE_SELF) - c0
    ts = rows["transfers"]
    per_file: dict[int, int] = {}
    for r in ts:
        per_file[r["file_index"]] = per_file.get(r["file_index"], 0) + 1
    lost = SMALL_FILES - len(per_file)
    dup = sum(1 for v in per_file.values() if v > 1)
    events = sorted([(r["start_time"], 1) for r in ts] + [(r["finish_time"], -1) for r in ts],
                    key=lambda e: (e[0], e[1]))
    peak = cur = 0
    for _, d in events:
        cur += d
        peak = max(peak, cur)
    print(f"\n1200-concurrent campaign: {SMALL_FILES} files x {SMALL_SIZE >> 10} KiB, checksum both, "
          f"delete after verify")
    print(f"  {row['finished']} finished, {row['failed']} failed, lost records: {lost}, "
          f"files with >1 record: {dup}, peak concurrency in the records: {peak} (limit {SMALL_CONC})")
    print(f"  {dt:.1f} s wall, {SMALL_FILES / dt:.0f} files/s, driver CPU {used:.1f} s, "
          f"max timeline active {max(r['active'] for r in rows['timeline'])}")
    reasons: dict[str, int] = {}
    for r in ts:
        if r["file_state"] != "FINISHED":
            key = (r["reason"] or "")[:100]
            reasons[key] = reasons.get(key, 0) + 1
    for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  failed x{n}: {why}")
    print(f"  zero lost records: {'yes' if lost == 0 and dup == 0 else 'NO'}")


def main() -> None:
    with ExitStack() as stack:
        procs = ProcessSet()
        stack.callback(procs.stop_all)
        work = Path(tempfile.mkdtemp(prefix="xcb-bench-campaign-"))
        work.chmod(0o755)
        stack.callback(shutil.rmtree, work, True)
        cell = Cell(id="bench-campaign", label="bench", backend="tmpfs", tmpfs_size=6 << 30)
        gw = stack.enter_context(CellSession(cell, cluster=None, workdir=work, procs=procs,
                                             name="bench-campaign")).gateway

        # the loop's local source files hold the driver's dataset (same bytes for both)
        src = Path(tempfile.mkdtemp(prefix="xcb-bench-src-", dir="/dev/shm"))
        stack.callback(shutil.rmtree, src, True)
        ds = Dataset.generate(FILES, SIZE)
        files = [ds.materialise(i, src / ds.name(i)) for i in range(FILES)]

        loop, drv, drv_ck = [], [], []
        for k in range(REPEATS):
            loop.append(xrdcp_loop(gw, files, f"loop{k}"))
            clear(gw)
            drv.append(driver(gw, "none"))
            clear(gw)
        drv_ck.append(driver(gw, "both"))
        clear(gw)
        gb = FILES * SIZE / 1e9
        print(f"push {FILES} x {SIZE >> 20} MiB at concurrency {CONC} into one tmpfs gateway "
              f"({gb:.1f} GB), median of {REPEATS}:")
        for name, runs in (("bare xrdcp loop", loop), ("driver (checksum none)", drv),
                           ("driver (checksum both)", drv_ck)):
            print(f"  {name:24s} {med(runs, 'rate') / 2**20:7.0f} MiB/s   client CPU "
                  f"{med(runs, 'cpu_per_gb'):.2f} s/GB   gateway CPU {med(runs, 'gw_cpu_per_gb'):.2f} s/GB")
        asy = async_push(gw, FILES, SIZE, CONC)
        clear(gw)
        print(f"  {'async callbacks (no rec.)':24s} {asy['rate'] / 2**20:7.0f} MiB/s   client CPU "
              f"{asy['cpu_per_gb']:.2f} s/GB   (one run; the other design, for comparison)")
        ratio = med(drv, "rate") / med(loop, "rate")
        cpu_ratio = med(drv, "cpu_per_gb") / med(loop, "cpu_per_gb")
        print(f"  aggregate rate ratio driver/loop: {ratio:.2f} (target >= 3)")
        print(f"  CPU per GB ratio driver/loop: {cpu_ratio:.2f} (target <= 0.5)")
        small_files(gw)
        n = SMALL_CONC  # no delete in these two: as many files as fit, all at once
        spec = CampaignSpec(files=n, file_size=SMALL_SIZE, concurrency=SMALL_CONC, checksum="none")
        c0, t0 = cpu(resource.RUSAGE_SELF), time.time()
        row = run_campaign(spec, dest=gw)
        dt, used = time.time() - t0, cpu(resource.RUSAGE_SELF) - c0
        clear(gw)
        print(f"  driver (threads), {n} such files at {SMALL_CONC} (checksum none, size check, "
              f"records): {dt:.1f} s, {n / dt:.0f} files/s, client CPU {used:.1f} s, "
              f"{row['failed']} failed")
        asy = async_push(gw, n, SMALL_SIZE, SMALL_CONC)
        clear(gw)
        print(f"  async callbacks, {n} such files at {SMALL_CONC} (no checksum, delete or records): "
              f"{asy['seconds']:.1f} s, {asy['files_per_s']:.0f} files/s, "
              f"client CPU {asy['cpu_per_gb'] * n * SMALL_SIZE / 1e9:.1f} s")


if __name__ == "__main__":
    from xcbench.proc import ProcessSet
    main()
