"""The gateway's CPU seconds per GB moved, per campaign level: what sizes a gateway.

The roles device samples the gateway's cores busy tick by tick (xcbench.telemetry.roles); a
level's CPU per GB wants the exact seconds between the level's start and end, so the meter reads
the same process trees (each server's xrootd/cmsd and their children: root-TPC xrdcp pulls,
reaped ones included) as cumulative CPU seconds at both ends (``tree_cpu_seconds``):

    gateway_cpu_s          CPU seconds of every process of the gateway (origins, redirector)
    gateway_cpu_s_per_gb   gateway_cpu_s / (the campaign's bytes / 1e9)
    gateway_cpu_origins    JSON list, one entry per origin (and one for the redirector):
                           {origin, host, cpu_s, bytes, s_per_gb}; ``bytes`` (write levels
                           only) is what the origin's xrootd tree wrote over the level
                           (/proc/PID/io wchar: the file on tmpfs/CephFS, the OSD sockets for
                           XrdCeph -- a written byte once), None for read levels and where the
                           counters cannot be read (then s_per_gb is None too)
    security               the cell's security mode (none, tls, scitokens, macaroons)

A gateway with a server on an ssh host is measured by its gateway agents
(xcbench.gateway.remote: ``server_counters``, the same tree counters taken on that host); a
gateway that has them neither here nor there leaves the columns None: the row says nothing it
did not measure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from xcbench.telemetry.roles import tree_counters

COLUMNS = ("gateway_cpu_s", "gateway_cpu_s_per_gb", "gateway_cpu_origins", "security")


def _group(server: Any) -> str:
    """Origin name of a server: its xrootd and its cmsd share the instance name (o1, mgr, xcb)."""
    return "redirector" if server.role == "manager" else server.name


def _local(server: Any) -> bool:
    slot = getattr(server, "slot", None)
    return slot is None or getattr(slot.host, "transport", "local") != "ssh"


class GatewayCpuMeter:
    """``start()`` before a level, ``finish(bytes)`` after it -> the COLUMNS of its campaign row.

    ``link_bytes(server) -> int | None``: the origin's cumulative bytes written (default: its
    xrootd tree's wchar); injectable for the unit tests.
    """

    def __init__(self, gateway: Any, security: str = "none",
                 link_bytes: Callable[[Any], int | None] | None = None):
        self.gateway, self.security = gateway, security
        # a gateway on ssh hosts counts its servers' trees there (xcbench.gateway.remote)
        self._counters = getattr(gateway, "server_counters", None) or _local_counters
        self._link = link_bytes if link_bytes is not None else self._written
        self._cpu0: dict[str, float | None] = {}
        self._bytes0: dict[str, int | None] = {}

    def _groups(self) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for s in getattr(self.gateway, "servers", []):
            out.setdefault(_group(s), []).append(s)
        return out

    def measurable(self) -> bool:
        servers = getattr(self.gateway, "servers", None)
        if not servers:
            return False
        return self._counters is not _local_counters or all(_local(s) for s in servers)

    def _cpu(self, servers: list[Any]) -> float | None:
        got = self._counters(servers)
        return got[0] if got is not None else None

    def _written(self, server: Any) -> int | None:
        got = self._counters([server]) if server.pid else None
        return got[1] if got is not None else None

    def _bytes(self, servers: list[Any]) -> int | None:
        data = [s for s in servers if s.daemon == "xrootd"]
        if len(data) != 1:
            return None
        try:
            return self._link(data[0])
        except Exception:  # noqa: BLE001 - counters are evidence, never a reason to lose the level
            return None

    def start(self) -> None:
        if not self.measurable():
            return
        for name, servers in self._groups().items():
            self._cpu0[name] = self._cpu(servers)
            self._bytes0[name] = self._bytes(servers) if name != "redirector" else None

    def finish(self, moved: int | float | None, direction: str | None = "write") -> dict[str, Any]:
        out: dict[str, Any] = dict.fromkeys(COLUMNS)
        out["security"] = self.security
        if not self._cpu0:
            return out
        per: list[dict[str, Any]] = []
        total, complete = 0.0, True
        for name, servers in self._groups().items():
            c0, c1 = self._cpu0.get(name), self._cpu(servers)
            cpu = c1 - c0 if c0 is not None and c1 is not None and c1 >= c0 else None
            b0 = self._bytes0.get(name)
            b1 = self._bytes(servers) if b0 is not None and direction in (None, "write") else None
            b = b1 - b0 if b0 is not None and b1 is not None and b1 >= b0 else None
            host = next((s.host for s in servers if getattr(s, "host", None)), None) or "local"
            per.append({"origin": name, "host": host, "cpu_s": cpu, "bytes": b,
                        "s_per_gb": cpu / (b / 1e9) if cpu is not None and b else None})
            if cpu is None:
                complete = False  # a server restarted or vanished: its seconds are unknown
            else:
                total += cpu
        out["gateway_cpu_origins"] = json.dumps(per, sort_keys=True)
        if complete:
            out["gateway_cpu_s"] = total
            out["gateway_cpu_s_per_gb"] = total / (float(moved) / 1e9) if moved else None
        return out


def _local_counters(servers: list[Any]) -> tuple[float, int | None] | None:
    return tree_counters([s.pid for s in servers if s.pid])
