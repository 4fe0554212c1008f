"""GatewaySampler: xrootd's own counters (xrd.report) plus CPU and RSS of each server process.

Rows from a report packet are stamped with the time the packet ARRIVED (not the tick), so
several packets between two ticks all keep their own 1 s resolution. Metrics:

  xrd.<key> for the keys below, labels {gateway: <instance>, pgm: xrootd|cmsd, pid}
      COUNTERS (cumulative) each with ``xrd.<key>.rate`` per second, e.g. xrd.link.in (bytes
      received from clients) and xrd.link.in.rate; GAUGES as reported.
  proc.cpu_seconds (+ .rate = cores busy), proc.children_cpu_seconds (+ .rate; TPC pulls run
      as children), proc.rss_bytes, proc.threads  labels {pid, name}
  Note: a root:// TPC destination's link.in does NOT see the pulled bytes (the child xrdcp
  does the transfer); the source's link.out does.

A server process that died, or a report stream that went silent, is a gap (SampleGap): the rows
that could still be read are kept.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from xcbench.errors import XcbError
from xcbench.network.addressing import report_host
from xcbench.system.proc import usage
from xcbench.telemetry.base import Rates, SampleGap, Sampler
from xcbench.telemetry.xrdreport import ReportListener, parse_report

COUNTERS = (
    "link.in", "link.out", "link.tot", "link.tmo", "link.stall", "link.sfps",
    "xrootd.ops.open", "xrootd.ops.rd", "xrootd.ops.pr", "xrootd.ops.rv", "xrootd.ops.rs",
    "xrootd.ops.wr", "xrootd.ops.wv", "xrootd.ops.ws", "xrootd.ops.sync", "xrootd.ops.getf",
    "xrootd.ops.putf", "xrootd.ops.misc", "xrootd.err", "xrootd.rdr", "xrootd.dly",
    "xrootd.aio.num", "xrootd.aio.rej", "xrootd.lgn.num",
    "ofs.err", "ofs.dly", "ofs.tpc.grnt", "ofs.tpc.deny", "ofs.tpc.err", "ofs.tpc.exp",
    "buff.reqs", "buff.adj", "sched.jobs", "sched.tcr", "sched.tde", "sched.tlimr",
    "poll.ev", "proc.usr", "proc.sys",
)
GAUGES = (
    "link.num", "link.maxn", "xrootd.aio.max", "ofs.opr", "ofs.opw", "ofs.opp", "ofs.han",
    "buff.mem", "buff.buffs", "sched.threads", "sched.idle", "sched.inq", "sched.maxinq",
    "poll.att", "poll.en",
)


def report_listener(hosts: Any = None, **kw: Any) -> ReportListener:
    """The run's ReportListener, bound at :func:`report_host` (never a wildcard)."""
    gws = getattr(hosts, "gateways", None) or []
    remote = [h.address for h in gws if getattr(h, "transport", "local") != "local"]
    return ReportListener(host=report_host(hosts), remote=remote, **kw)


def _pids(servers: Iterable[Any]) -> list[tuple[int, str]]:
    """(pid, name) of gateway.servers entries (xcbench.gateway.Server, xcbench.system.proc.Proc, or a
    plain pid); name is "<daemon>:<instance>" when the entry says both, e.g. "xrootd:gw-1",
    with "@<host>" for a server on an inventory's gateway host."""
    out = []
    for s in servers or ():
        pid = getattr(s, "pid", s)
        if isinstance(pid, int):
            name = str(getattr(s, "name", "xrootd"))
            daemon = getattr(s, "daemon", None)
            host = getattr(s, "host", None)  # on a gateway host: "xrootd:o2@g2"
            name = f"{daemon}:{name}" if daemon else name
            out.append((pid, f"{name}@{host}" if isinstance(host, str) else name))
    return out


class GatewaySampler(Sampler):
    name = "gateway"

    def __init__(self, listener: ReportListener, gateway: Any = None, *,
                 pids: Iterable[int] = (), stale_after: float = 5.0):
        self.listener = listener
        self.gateway = gateway
        self.extra_pids = list(pids)
        self.stale_after = stale_after
        self._rates = Rates()
        self.reports = 0
        self.bad_packets = 0

    def start(self) -> None:
        # its gateway's datagrams only: the local ones from these processes' sockets
        self.listener.expect(lambda: [pid for pid, _ in self.servers()])
        self.listener.start()

    def servers(self) -> list[tuple[int, str]]:
        found = _pids(getattr(self.gateway, "servers", ()) if self.gateway is not None else ())
        return found + [(p, "pid") for p in self.extra_pids]

    def sample(self, wall: float, mono: float) -> list[dict]:
        rows: list[dict] = []
        problems: list[str] = []
        for p in self.listener.drain():
            try:
                rep = parse_report(p.data)
            except XcbError as e:
                self.bad_packets += 1
                problems.append(str(e))
                continue
            self.reports += 1
            h = rep.header
            labels = {"gateway": str(h.get("ins", "")), "pgm": str(h.get("pgm", "")),
                      "pid": h.get("pid", 0)}
            for key in COUNTERS:
                if key in rep.values:
                    rows += self._rates.counter_rows(self, p.wall, p.mono, f"xrd.{key}",
                                                     rep.values[key], labels)
            for key in GAUGES:
                if key in rep.values:
                    rows.append(self.row(p.wall, p.mono, f"xrd.{key}", rep.values[key], labels))
        for pid, pname in self.servers():
            try:
                st = usage(pid)
            except OSError:
                problems.append(f"{pname} pid {pid} is gone")
                continue
            labels = {"pid": pid, "name": pname}
            rows += self._rates.counter_rows(self, wall, mono, "proc.cpu_seconds",
                                             st["cpu_seconds"], labels)
            rows += self._rates.counter_rows(self, wall, mono, "proc.children_cpu_seconds",
                                             st["children_cpu_seconds"], labels)
            rows.append(self.row(wall, mono, "proc.rss_bytes", st["rss_bytes"], labels))
            rows.append(self.row(wall, mono, "proc.threads", st["threads"], labels))
        silent = self._silent_for()
        if silent is not None:
            problems.append(f"no xrd.report packet on {self.listener.addr} for {silent:.0f} s")
        if problems:
            raise SampleGap("; ".join(problems), rows)
        return rows

    def _silent_for(self) -> float | None:
        """Seconds without a packet, if longer than stale_after (None while all is well)."""
        now = time.monotonic()
        last = self.listener.last_mono or self.listener.started_mono
        if last is None or now - last <= self.stale_after:
            return None
        return now - last
