"""The settle step before a probe job: the previous job's writes flushed and the storage's write
rate back to idle, so one job's backlog is not measured as the next job's figure.

Flushed: ``sync`` (the kernel's dirty pages of every file system, ceph-fuse's included, handed
to their servers). Idle: the clients' write bytes/s the OSDs report falls below IDLE_FRACTION
of the rate the previous job wrote, on QUIET consecutive readings. Read from the OSDs' own
counters (admin socket ``perf dump``: osd.op_w_in_bytes, cumulative) where the OSDs run on this
host, else from the mgr's per-pool rate (``osd pool stats``, a few seconds behind). Bounded:
after MAX_S the probe goes on and its row says the storage had not settled (``settled`` False).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

from xcbench.ceph.cluster import Cluster
from xcbench.telemetry.ceph import CephSampler, asok_command

# the settle keeps the previous job's backlog out of the next job's figure: 1 % of that figure
# is well inside the probes' own noise (their interval samples vary by 10-60 %)
IDLE_FRACTION = 0.01
POLL = 0.5  # s between readings of the OSDs' counters
QUIET = 2  # consecutive idle readings: ceph-fuse flushes its own cache in bursts
MAX_S = 15.0  # the longest settle (the mgr's rate lags by its 5 s stats period; twice that, and more)


class Settle:
    """Reads the write bytes/s of the cluster's storage for one pool's probes."""

    def __init__(self, cluster: Cluster, pool: str | None):
        self.cluster, self.pool = cluster, pool
        self._socks: dict[int, Any] | None = None

    def _sockets(self) -> dict[int, Any]:
        if self._socks is None:
            try:
                self._socks = CephSampler(self.cluster, osd_perf=True).local_osd_sockets()
            except Exception:  # noqa: BLE001 - no local OSDs readable: the mgr's rate instead
                self._socks = {}
        return self._socks

    def _osd_bytes(self) -> float | None:
        total = 0.0
        for path in self._sockets().values():
            try:
                d = asok_command(path, "perf dump", timeout=2.0, logger="osd") or {}
            except Exception:  # noqa: BLE001 - an OSD that does not answer: not counted
                return None
            total += float((d.get("osd") or {}).get("op_w_in_bytes", 0))
        return total

    def rate(self) -> float:
        """The clients' write bytes/s now (over POLL s of the OSDs' counters, or the mgr's)."""
        if self._sockets():
            a = self._osd_bytes()
            time.sleep(POLL)
            b = self._osd_bytes()
            if a is not None and b is not None:
                return max(0.0, b - a) / POLL
        time.sleep(POLL)
        for p in self.cluster.mon_command("osd pool stats", pool_name=self.pool) or []:
            return float((p.get("client_io_rate") or {}).get("write_bytes_sec", 0))
        return math.nan

    def close(self) -> None:
        self._socks = None


def flush_and_wait(waiter: Settle | None, path: str | None, prev_bw: float | None) -> dict[str, Any]:
    """sync, then wait until the storage's write rate is idle (see the module): {settle_s,
    settled, settle_rate}."""
    t0 = time.monotonic()
    if path:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)  # never through a link
        try:
            os.fsync(fd)  # the directory's entries (the removed files)
        finally:
            os.close(fd)
    os.sync()
    out: dict[str, Any] = {"settle_s": 0.0, "settled": True, "settle_rate": math.nan}
    if waiter is None or not prev_bw or not math.isfinite(prev_bw):
        out["settle_s"] = round(time.monotonic() - t0, 2)
        return out
    limit = IDLE_FRACTION * prev_bw
    quiet = 0
    rate = math.nan
    while time.monotonic() - t0 < MAX_S:
        try:
            rate = waiter.rate()
        except Exception:  # noqa: BLE001 - a cluster that does not answer: wait out MAX_S
            rate = math.nan
            time.sleep(POLL)
        quiet = quiet + 1 if math.isfinite(rate) and rate <= limit else 0
        if quiet >= QUIET:
            break
    out.update(settle_s=round(time.monotonic() - t0, 2), settled=quiet >= QUIET, settle_rate=rate)
    return out
