"""Telemetry devices: the samplers a run can switch on, each with what it records and its pace.

As in rally's telemetry devices: a device is chosen by name on the command line
(``xcbench run --telemetry host,ceph`` or with intervals, ``--telemetry host:0.5,ceph:2``),
``xcbench telemetry list`` says what each one records, and :func:`build` turns a selection into
the cell's TelemetryRunner. A device that does not apply to a cell (ceph for a tmpfs target, the
gateway without a report listener) is left out of that cell, silently: the selection is per run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xcbench.cell import Cell
from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError
from xcbench.hosts.links import links_of, recorded_links
from xcbench.telemetry.base import Sampler, Sink, TelemetryRunner
from xcbench.telemetry.ceph import CephSampler
from xcbench.telemetry.gateway import GatewaySampler
from xcbench.telemetry.host import HostSampler
from xcbench.telemetry.link_sampler import LinksSampler
from xcbench.telemetry.promapi import PromClient
from xcbench.telemetry.prometheus import PrometheusSampler
from xcbench.telemetry.role_processes import make_sampler


@dataclass(frozen=True)
class Context:
    """What a device may need to build its sampler for one cell."""
    cell: Cell
    target: Any
    gateway: Any
    listener: Any
    cluster: Cluster | None
    hosts: Any = None  # the run's inventory (xcbench.hosts.Inventory), None: no --hosts
    prometheus: Any = None  # {"url", "auth"} of the run's Prometheus (xcbench.telemetry.prometheus)
    sink: Any = None  # where a device writes FINDING rows
    raw_dir: Any = None  # the cell's raw/ dir in the run (a device's own files), None: none


@dataclass(frozen=True)
class Device:
    name: str
    records: str  # one line: what its rows are (metric families)
    interval: float  # default seconds between samples
    applies: str  # when a cell gets it
    make: Callable[[Context], Sampler | None]


def _host(ctx: Context) -> Sampler:
    return HostSampler()


def _gateway(ctx: Context) -> Sampler | None:
    return GatewaySampler(ctx.listener, ctx.gateway) if ctx.listener is not None else None


def _ceph(ctx: Context) -> Sampler | None:
    pool = getattr(ctx.target, "pool", None)
    return CephSampler(ctx.cluster, [pool]) if ctx.cluster is not None and pool else None


def _roles(ctx: Context) -> Sampler:
    return make_sampler(gateway=ctx.gateway, target=ctx.target, cluster=ctx.cluster)


def _links(ctx: Context) -> Sampler | None:
    """The run's emulated hosts (its inventory when the context has one, else every emulated
    host recorded as up); none: the device does not apply."""
    links = links_of(ctx.hosts) if ctx.hosts is not None else recorded_links()
    return LinksSampler(links) if links else None


def _prometheus(ctx: Context) -> Sampler | None:
    """The run's Prometheus: --prometheus, the inventory's, else the embedded cluster's."""
    conf = prometheus_of(ctx)
    if not conf:
        return None
    api = PromClient(conf["url"], conf.get("auth"))
    if conf.get("timeout"):
        api.timeout = float(conf["timeout"])
    return PrometheusSampler(api, cell_id=ctx.cell.id,
                             sink=ctx.sink, cluster=ctx.cluster, inventory=ctx.hosts,
                             step=conf.get("scrape_interval"),
                             raw_dir=ctx.raw_dir / "prometheus" / ctx.cell.id if ctx.raw_dir else None)


def prometheus_of(ctx: Context) -> dict | None:
    """--prometheus, else the matrix's (both in ``ctx.prometheus``: xcbench.commands.run picks
    the command line's first), else the inventory's, else the embedded cluster's."""
    if ctx.prometheus:
        return dict(ctx.prometheus)
    inv = getattr(ctx.hosts, "prometheus", None)
    if inv:
        return dict(inv)
    info = getattr(ctx.cluster, "info", None) or {}
    embedded = info.get("prometheus") if getattr(ctx.cluster, "embedded", False) else None
    return {"url": embedded["url"], "scrape_interval": embedded.get("scrape_interval")} if embedded else None


DEVICES: dict[str, Device] = {d.name: d for d in (
    Device("host", "CPU busy/iowait per core, memory (total, available, cached, dirty, writeback), "
           "bytes/packets/drops per network interface", 1.0, "every cell", _host),
    Device("gateway", "xrootd/cmsd xrd.report counters (link bytes, ops, errors, threads) and "
           "CPU, children's CPU, RSS and threads of each server process", 1.0,
           "every cell", _gateway),
    Device("ceph", "per-pool client rates and df counters (stored, raw used, ops, bytes), OSD "
           "commit/apply latency and local OSD perf counters, health, PG states", 1.0,
           "cells with a Ceph pool", _ceph),
    Device("roles", "CPU cores, RSS, CPU limit (cgroup quota, cpuset or host cores, and where it "
           "comes from) and CFS throttling of each role: client (the driver), gateway, mount, "
           "osd, mds, mon, mgr, probe", 1.0, "every cell", _roles),
    Device("links", "bytes sent and received through each emulated host's link and the rate "
           "it is shaped to (its limit)", 1.0, "runs with emulated hosts up", _links),
    Device("prometheus", "every host's CPU busy vs cores, NIC rx/tx vs link speed, disk busy and "
           "bytes (node_exporter); per OSD ops, bytes, latency and per pool client rates (ceph-mgr); "
           "range queries after each level; live.* (the busiest storage host's NIC, disk, CPU for "
           "the progress view) every tick", 5.0,
           "runs with a Prometheus (--prometheus, the matrix's, the inventory's, the embedded cluster's)",
           _prometheus),
)}
DEFAULT = tuple(DEVICES)  # every device, at its default interval
NONE = "none"


def parse_selection(text: str | None) -> dict[str, float]:
    """``"host:0.5,ceph"`` -> {"host": 0.5, "ceph": 1.0}; None -> every device at its default.

    A bad name or interval is an XcbError of one line (exit 2), raised before any cluster work.
    """
    if text is None:
        return {name: DEVICES[name].interval for name in DEFAULT}
    if text.strip() == NONE:
        return {}
    out: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = (part.strip() for part in item.partition(":"))
        if name not in DEVICES:
            raise XcbError(f"--telemetry: unknown device {name!r} in {text!r} "
                           f"(known: {', '.join(DEVICES)}, or {NONE}; see `xcbench telemetry list`)")
        if name in out:
            raise XcbError(f"--telemetry: device {name!r} given twice in {text!r}")
        interval = DEVICES[name].interval
        if sep:
            try:
                interval = float(value)
            except ValueError:
                interval = float("nan")
            if not interval > 0 or interval == float("inf"):
                raise XcbError(f"--telemetry: {item.strip()!r}: the interval must be a number of "
                               "seconds > 0 (e.g. host:0.5)")
        out[name] = interval
    return out


def wants(selection: str | None, device: str) -> bool:
    """Whether ``device`` is part of the selection."""
    return device in parse_selection(selection)


def build(selection: str | None, *, cell: Cell, target: Any, gateway: Any, listener: Any,
          cluster: Cluster | None, sink: Sink, hosts: Any = None, prometheus: Any = None,
          raw_dir: Any = None) -> TelemetryRunner | None:
    """The cell's TelemetryRunner with the chosen devices that apply to it (None if none does);
    ``hosts``: the run's inventory (the links device samples its hosts, not every one up)."""
    chosen = parse_selection(selection)
    ctx = Context(cell=cell, target=target, gateway=gateway, listener=listener, cluster=cluster,
                  hosts=hosts, prometheus=prometheus, sink=sink, raw_dir=raw_dir)
    samplers = [s for s in (DEVICES[name].make(ctx) for name in chosen) if s is not None]
    if not samplers:
        return None
    intervals = {s.name: chosen[s.name] for s in samplers}
    return TelemetryRunner(samplers, interval=min(intervals.values()), intervals=intervals,
                           sink=sink, cell_id=cell.id)
