"""What a campaign agent samples of its own client host while it drives: the host's link and CPU,
sent on its stream as ``samples`` rows, so the coordinator has each client host's figures on the
run's clock (per-host verdicts name the host: a Slurm node, an ssh host).

    link.tx_bytes link.rx_bytes (+ .rate)   the interface that holds the host's address  [host, roles]
    link.limit_bytes    the rate its root qdisc shapes it to (tc tbf / netem rate), bytes/s
                        (None: not shaped); the limit analysis.verdicts.link_use compares with
    link.speed_bytes    the NIC's own speed, bytes/s (None where sysfs does not show this
                        interface, as in a network namespace entered without its own /sys)
    node.cpu.busy       share of the CPUs this agent may run on busy over the interval (0..1) [host]
    node.cpu.cores      CPUs this agent may run on (its affinity: a step's CPUs)         [host]
    node.cpu.limit_cores  the CPU limit of the client role (this agent and what it starts):
                        the tightest of its cgroup's CFS quota, its cpuset, its affinity and
                        the host's cores (xcbench.system.limits.cpu_limit, as for every role's
                        limit), e.g. a Slurm step's ``--cpus-per-task`` where Slurm confines
                        steps (task/cgroup, task/affinity); None when it cannot be read  [host, source]
    node.cpu.client_cores cores the client role used over the interval (this agent's process
                        CPU, its reaped children's included), to compare with limit_cores  [host]

node.cpu.busy is over the agent's own CPUs (its affinity, the ``cpuN`` lines of /proc/stat),
not the whole machine's: a Slurm step given 2 of 64 CPUs is at its limit when those 2 are
busy, whatever the other 62 do, and busy / cores then compare like with like
(analysis.verdicts.node_use: a client node at its CPU limit is named).

Read from /proc/net/dev (the reader's own network namespace) through psutil, /proc/stat, and
``tc -j qdisc show`` (netlink): right inside an emulated host too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from xcbench.system.limits import cpu_limit
from xcbench.telemetry.base import Rates, Sampler

INTERVAL = 1.0
PROC_STAT = Path("/proc/stat")
IDLE_COLUMNS = (3, 4)  # idle and iowait among a cpuN line's columns (user nice system idle iowait ...)
TIME_COLUMNS = 8  # user .. steal: the total (guest time is already inside user)


def cpu_jiffies(cpus: set[int], stat: Path = PROC_STAT) -> tuple[float, float] | None:
    """(idle, total) clock ticks of the CPUs ``cpus`` from /proc/stat's ``cpuN`` lines (None:
    none of them there)."""
    idle = total = 0.0
    seen = False
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        head, _, rest = line.partition(" ")
        if not (head.startswith("cpu") and head[3:].isdigit() and int(head[3:]) in cpus):
            continue
        cols = [float(x) for x in rest.split()[:TIME_COLUMNS]]
        idle += sum(cols[i] for i in IDLE_COLUMNS if i < len(cols))
        total += sum(cols)
        seen = True
    return (idle, total) if seen else None


def boot_id(path: Path = Path("/proc/sys/kernel/random/boot_id")) -> str | None:
    """The running kernel's boot id: two processes on one machine share it, two machines do
    not (a host emulated in a network namespace, or a test cluster's node on this box, is the
    same machine as its coordinator)."""
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def interface_of(address: str) -> str | None:
    """The interface holding ``address`` in this network namespace (None: no such one)."""
    for name, addrs in psutil.net_if_addrs().items():
        if any(a.address.split("%")[0] == address for a in addrs):
            return name
    return None


def shaped_rate(iface: str) -> float | None:
    """Bytes/s the root qdisc of ``iface`` shapes it to (tbf, or netem with a rate); None."""
    tc = shutil.which("tc")
    if tc is None:
        return None
    try:
        out = subprocess.run([tc, "-j", "qdisc", "show", "dev", iface], capture_output=True,
                             text=True, timeout=10, check=False, stdin=subprocess.DEVNULL)
        qdiscs = json.loads(out.stdout or "[]")
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    for q in qdiscs if isinstance(qdiscs, list) else []:
        if isinstance(q, dict) and q.get("root") and q.get("kind") in ("tbf", "netem"):
            rate = (q.get("options") or {}).get("rate")
            if isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate > 0:
                return float(rate)
    return None


def nic_speed(iface: str, sys_net: Path = Path("/sys/class/net")) -> float | None:
    """The NIC's speed in bytes/s, when /sys shows this very interface (same MAC as netlink)."""
    try:
        mac = next((a.address for a in psutil.net_if_addrs().get(iface, ())
                    if a.family == psutil.AF_LINK), None)
        if mac is None or (sys_net / iface / "address").read_text().strip() != mac:
            return None
        mbit = int((sys_net / iface / "speed").read_text())
    except (OSError, ValueError):
        return None
    return mbit * 1e6 / 8 if mbit > 0 else None


class NodeSampler(Sampler):
    name = "node"

    def __init__(self, host: str, address: str, roles: str = "client"):
        self.host, self.roles = host, roles
        self.iface = interface_of(address)
        self.limit = shaped_rate(self.iface) if self.iface else None
        self.speed = nic_speed(self.iface) if self.iface else None
        self._rates = Rates()
        self._cpu: tuple[float, float] | None = None
        self._own: tuple[float, float] | None = None  # (mono, process CPU s) at the last sample
        try:  # a step's confinement does not change while it runs: read once
            lim = cpu_limit(os.getpid())
            self.limit_cores, self.limit_source = lim.cores, lim.source
        except (OSError, ValueError) as e:
            self.limit_cores, self.limit_source = None, f"unknown ({type(e).__name__})"

    def sample(self, wall: float, mono: float) -> list[dict]:
        labels = {"host": self.host, "roles": self.roles}
        rows: list[dict] = []
        if self.iface is not None:
            c = psutil.net_io_counters(pernic=True, nowrap=True).get(self.iface)
            if c is not None:
                rows += self._rates.counter_rows(self, wall, mono, "link.tx_bytes", c.bytes_sent, labels)
                rows += self._rates.counter_rows(self, wall, mono, "link.rx_bytes", c.bytes_recv, labels)
            rows.append(self.row(wall, mono, "link.limit_bytes", self.limit, labels))
            rows.append(self.row(wall, mono, "link.speed_bytes", self.speed, labels))
        mine = os.sched_getaffinity(0)
        now = cpu_jiffies(mine)
        if now is not None and self._cpu is not None:
            total = now[1] - self._cpu[1]
            idle = now[0] - self._cpu[0]  # idle + iowait
            if total > 0:
                rows.append(self.row(wall, mono, "node.cpu.busy", min(1.0, max(0.0, 1 - idle / total)),
                                     {"host": self.host}))
        self._cpu = now
        rows.append(self.row(wall, mono, "node.cpu.cores", float(len(mine)), {"host": self.host}))
        rows.append(self.row(wall, mono, "node.cpu.limit_cores", self.limit_cores,
                             {"host": self.host, "source": self.limit_source[:200]}))
        own = psutil.Process().cpu_times()
        used = own.user + own.system + own.children_user + own.children_system
        if self._own is not None and mono > self._own[0]:
            rows.append(self.row(wall, mono, "node.cpu.client_cores",
                                 max(0.0, (used - self._own[1]) / (mono - self._own[0])),
                                 {"host": self.host}))
        self._own = (mono, used)
        return rows


def run_sampler(sampler: NodeSampler, send: Callable[[list[dict]], Any], stop: threading.Event,
                interval: float = INTERVAL) -> threading.Thread:
    """Sample every ``interval`` s until ``stop``; each sample's rows go to ``send``."""
    def loop() -> None:
        while True:
            try:
                rows = sampler.sample(time.time(), time.monotonic())
            except Exception:  # noqa: BLE001 - a sample lost must not end the campaign
                rows = []
            if rows:
                send(rows)
            if stop.wait(interval):
                return
    t = threading.Thread(target=loop, name="xcb-node-sampler", daemon=True)
    t.start()
    return t
