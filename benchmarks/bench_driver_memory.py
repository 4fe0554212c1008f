"""What one campaign driver holds per file and per transfer in flight: the figures behind the
memory limit of files and concurrency (xcbench.campaign.spec.memory_problem).

Per file: the dataset's state (sizes, block layouts, adler32s) for FILES files, RSS before and
after. Per transfer: the resident cost of THREADS idle worker threads (a transfer's thread; the
clients' buffers come on top). Prints the measured bytes and the constants the check uses; not
a test.
"""

from __future__ import annotations

import argparse
import gc
import threading
import time

import psutil

from xcbench.campaign import spec
from xcbench.campaign.dataset import Dataset


def per_file(files: int) -> float:
    p = psutil.Process()
    gc.collect()
    r0 = p.memory_info().rss
    ds = Dataset.generate(files, 1 << 20, "uniform", 1, block_size=1 << 20)
    for i in range(files):
        ds.adler32(i)
    gc.collect()
    return (p.memory_info().rss - r0) / files


def per_thread(threads: int) -> float:
    p = psutil.Process()
    gc.collect()
    r0 = p.memory_info().rss
    ev = threading.Event()
    ts = [threading.Thread(target=ev.wait, daemon=True) for _ in range(threads)]
    for t in ts:
        t.start()
    time.sleep(0.5)
    r1 = p.memory_info().rss
    ev.set()
    return (r1 - r0) / threads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=200_000)
    ap.add_argument("--threads", type=int, default=2000)
    a = ap.parse_args()
    f, t = per_file(a.files), per_thread(a.threads)
    print(f"dataset state: {f:.0f} B/file measured ({a.files} files); the check counts "
          f"{spec.BYTES_PER_FILE} B/file ({spec.BYTES_PER_FILE / f:.2f}x)")
    print(f"idle worker thread: {t:.0f} B measured ({a.threads} threads); the check counts "
          f"{spec.BYTES_PER_TRANSFER} B/transfer ({spec.BYTES_PER_TRANSFER / t:.1f}x: client "
          f"buffers come on top)")


if __name__ == "__main__":
    main()
