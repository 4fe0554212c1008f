"""HostSampler: network interfaces, CPU and memory of this host, through psutil (cheap: a few reads).

Metrics (labels in brackets):
  net.rx_bytes net.tx_bytes net.rx_packets net.tx_packets net.rx_drop net.tx_drop  [iface]
      cumulative, each with a ``.rate`` (per second)
  cpu.busy cpu.iowait [cpu: "all" | "cpu0"...]   fraction of the interval (0..1 per cpu)
  mem.total mem.available mem.cached mem.dirty mem.writeback   bytes
  cpu.pressure.some cpu.pressure.full [scope: "system"]   share (0..1) of the interval in which
      some (full: every) runnable task waited for a CPU (PSI, /proc/pressure/cpu); no rows
      where the kernel has no PSI
The CPU and RSS of one process (the gateway sampler's proc.* rows) are xcbench.system.proc.usage.
"""

from __future__ import annotations

import socket
from pathlib import Path

import psutil

from xcbench.system.proc import usage as read_proc  # noqa: F401 - kept for benchmarks/bench_telemetry.py
from xcbench.telemetry.base import Rates, Sampler
from xcbench.telemetry.sched import PRESSURE, read_pressure

# psutil's per-NIC field -> our metric suffix
NET_FIELDS = {"bytes_recv": "rx_bytes", "packets_recv": "rx_packets", "dropin": "rx_drop",
              "bytes_sent": "tx_bytes", "packets_sent": "tx_packets", "dropout": "tx_drop"}
# psutil's cpu_times fields that make up the total (guest time is already inside user)
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# Dirty and Writeback are not in psutil.virtual_memory (and its "cached" adds SReclaimable):
# these stay read from /proc/meminfo, as the kernel names them.
MEM_FIELDS = {"MemTotal": "mem.total", "MemAvailable": "mem.available", "Cached": "mem.cached",
              "Dirty": "mem.dirty", "Writeback": "mem.writeback"}


def read_net() -> dict[str, dict[str, int]]:
    """{iface: {rx_bytes, rx_packets, rx_drop, tx_bytes, tx_packets, tx_drop}}"""
    return {nic: {ours: int(getattr(c, theirs)) for theirs, ours in NET_FIELDS.items()}
            for nic, c in psutil.net_io_counters(pernic=True, nowrap=True).items()}


def read_cpu_times(per_cpu: bool = True) -> dict[str, tuple[float, ...]]:
    """{"cpu": seconds per CPU_FIELDS, "cpu0": ..., ...}: all CPUs, then (per_cpu) each one."""
    def fields(t) -> tuple[float, ...]:
        return tuple(getattr(t, f, 0.0) for f in CPU_FIELDS)
    out = {"cpu": fields(psutil.cpu_times())}
    for i, t in enumerate(psutil.cpu_times(percpu=True) if per_cpu else ()):
        out[f"cpu{i}"] = fields(t)
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


class HostSampler(Sampler):
    name = "host"

    def __init__(self, interfaces: list[str] | None = None, per_cpu: bool = True,
                 meminfo: str | Path = "/proc/meminfo", pressure: str | Path = PRESSURE):
        self.interfaces = interfaces
        self.pressure = Path(pressure)
        self._psi_prev: tuple[float, dict[str, float]] | None = None
        self.per_cpu = per_cpu
        self.meminfo = Path(meminfo)
        self.host = socket.gethostname()
        self._rates = Rates()
        self._cpu_prev: dict[str, tuple[float, ...]] = {}

    def sample(self, wall: float, mono: float) -> list[dict]:
        rows: list[dict] = []
        for iface, counters in read_net().items():
            if self.interfaces is not None and iface not in self.interfaces:
                continue
            if self.interfaces is None and not (counters["rx_bytes"] or counters["tx_bytes"]):
                continue  # an interface that never carried a byte (ifb, down links): no rows
            labels = {"iface": iface}
            for field, value in counters.items():
                rows += self._rates.counter_rows(self, wall, mono, f"net.{field}", value, labels)
        for name, times in read_cpu_times(self.per_cpu).items():
            prev = self._cpu_prev.get(name)
            self._cpu_prev[name] = times
            if prev is None:
                continue
            d = [a - b for a, b in zip(times, prev, strict=True)]
            total = sum(d)
            if total <= 0:
                continue
            idle = d[3] + d[4]
            labels = {"cpu": "all" if name == "cpu" else name}
            rows.append(self.row(wall, mono, "cpu.busy", (total - idle) / total, labels))
            rows.append(self.row(wall, mono, "cpu.iowait", d[4] / total, labels))
        rows += self._pressure_rows(wall, mono)
        mem = read_meminfo(self.meminfo)
        for key, metric in MEM_FIELDS.items():
            if key in mem:
                rows.append(self.row(wall, mono, metric, mem[key], {"host": self.host}))
        return rows

    def _pressure_rows(self, wall: float, mono: float) -> list[dict]:
        """Shares of the interval stalled on CPU, from PSI's cumulative totals (exact over the
        tick, unlike its avg10, which smooths over ten seconds)."""
        now = read_pressure(self.pressure)
        prev, self._psi_prev = self._psi_prev, (mono, now)
        if not now or prev is None or mono <= prev[0]:
            return []
        dt = mono - prev[0]
        return [self.row(wall, mono, f"cpu.pressure.{kind}", min(max((v - prev[1][kind]) / dt, 0.0), 1.0),
                         {"scope": "system"})
                for kind, v in now.items() if kind in prev[1]]
