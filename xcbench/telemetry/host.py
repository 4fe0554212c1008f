"""HostSampler: network interfaces, CPU and memory of this host from /proc (cheap: a few reads).

Metrics (labels in brackets):
  net.rx_bytes net.tx_bytes net.rx_packets net.tx_packets net.rx_drop net.tx_drop  [iface]
      cumulative, each with a ``.rate`` (per second)
  cpu.busy cpu.iowait [cpu: "all" | "cpu0"...]   fraction of the interval (0..1 per cpu)
  mem.total mem.available mem.cached mem.dirty mem.writeback   bytes
Also the /proc/<pid> readers the gateway sampler uses for xrootd's CPU and RSS.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from xcbench.telemetry.base import Rates, Sampler

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
NET_FIELDS = {0: "rx_bytes", 1: "rx_packets", 3: "rx_drop", 8: "tx_bytes", 9: "tx_packets",
              11: "tx_drop"}
MEM_FIELDS = {"MemTotal": "mem.total", "MemAvailable": "mem.available", "Cached": "mem.cached",
              "Dirty": "mem.dirty", "Writeback": "mem.writeback"}


def read_net_dev(path: str | Path = "/proc/net/dev") -> dict[str, dict[str, int]]:
    """{iface: {rx_bytes, rx_packets, rx_drop, tx_bytes, tx_packets, tx_drop}}"""
    out: dict[str, dict[str, int]] = {}
    for line in Path(path).read_text().splitlines()[2:]:
        name, _, rest = line.partition(":")
        cols = rest.split()
        if len(cols) < 16:
            continue
        out[name.strip()] = {f: int(cols[i]) for i, f in NET_FIELDS.items()}
    return out


def read_cpu_times(path: str | Path = "/proc/stat") -> dict[str, list[int]]:
    """{"cpu": [user, nice, system, idle, iowait, irq, softirq, steal, ...], "cpu0": ...} in ticks."""
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.startswith("cpu"):
            name, *vals = line.split()
            out[name] = [int(v) for v in vals]
    return out


def read_meminfo(path: str | Path = "/proc/meminfo") -> dict[str, int]:
    """{"MemTotal": bytes, ...}"""
    out = {}
    for line in Path(path).read_text().splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            out[key] = int(parts[0]) * (1024 if parts[-1] == "kB" else 1)
    return out


def read_proc(pid: int) -> dict[str, float]:
    """CPU seconds (user+system), RSS bytes and threads of one process (OSError if gone).

    ``children_cpu_seconds``: CPU of its reaped children - where a root:// TPC destination's
    work goes (xrootd runs each pull as a child `xrdcp --server`).
    """
    with open(f"/proc/{pid}/stat") as fh:
        after = fh.read().rsplit(")", 1)[1].split()  # the name may hold spaces and ')'
    if after[0] in ("Z", "X"):
        raise ProcessLookupError(f"pid {pid} is a zombie")
    return {"cpu_seconds": (int(after[11]) + int(after[12])) / CLK_TCK,
            "children_cpu_seconds": (int(after[13]) + int(after[14])) / CLK_TCK,
            "rss_bytes": int(after[21]) * PAGE, "threads": int(after[17])}


class HostSampler(Sampler):
    name = "host"

    def __init__(self, interfaces: list[str] | None = None, per_cpu: bool = True,
                 proc_root: str | Path = "/proc"):
        self.interfaces = interfaces
        self.per_cpu = per_cpu
        self.root = Path(proc_root)
        self.host = socket.gethostname()
        self._rates = Rates()
        self._cpu_prev: dict[str, list[int]] = {}

    def sample(self, wall: float, mono: float) -> list[dict]:
        rows: list[dict] = []
        for iface, counters in read_net_dev(self.root / "net/dev").items():
            if self.interfaces is not None and iface not in self.interfaces:
                continue
            if self.interfaces is None and not (counters["rx_bytes"] or counters["tx_bytes"]):
                continue  # an interface that never carried a byte (ifb, down links): no rows
            labels = {"iface": iface}
            for field, value in counters.items():
                rows += self._rates.counter_rows(self, wall, mono, f"net.{field}", value, labels)
        cpus = read_cpu_times(self.root / "stat")
        for name, ticks in cpus.items():
            if name != "cpu" and not self.per_cpu:
                continue
            prev = self._cpu_prev.get(name)
            self._cpu_prev[name] = ticks
            if prev is None:
                continue
            d = [a - b for a, b in zip(ticks, prev, strict=False)]
            total = sum(d[:8])  # guest time is already inside user
            if total <= 0:
                continue
            idle = d[3] + d[4]
            labels = {"cpu": "all" if name == "cpu" else name}
            rows.append(self.row(wall, mono, "cpu.busy", (total - idle) / total, labels))
            rows.append(self.row(wall, mono, "cpu.iowait", d[4] / total, labels))
        mem = read_meminfo(self.root / "meminfo")
        for key, metric in MEM_FIELDS.items():
            if key in mem:
                rows.append(self.row(wall, mono, metric, mem[key], {"host": self.host}))
        return rows
