"""A run with an inventory of hosts (`xcbench run --hosts FILE`, or a matrix's ``hosts:``).

What the runner (xcbench.run.runner) asks of it, in this order:
- :meth:`RunHosts.start`: every host's clock offset and round trip measured once
  (xcbench.hosts.checks.clock_offsets) and written, with the hosts, in the manifest
  (``hosts``); the versions were checked by the command before anything started;
- :meth:`RunHosts.baseline`: iperf3 from each client host to each gateway host, its server on
  the gateway host and its client on the client host, each through the host's transport;
- :meth:`RunHosts.campaign`: each level from the client hosts (xcbench.scaleout.distributed);
  a host lost mid-level fails its share alone (one warning line) and is not asked again; with
  nodes from Slurm each node's clock is measured again after each level (``clock_end``) and the
  job, its nodes and every step launched so far are written (``hosts.slurm``).
The gateways themselves go on the gateway hosts through CellSession(hosts=...) (engineer
gwhosts' xcbench.gateway.placement).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from xcbench.campaign.spec import CampaignSpec
from xcbench.errors import XcbError
from xcbench.hosts.checks import clock_offsets
from xcbench.network.baseline import HostPairRunner
from xcbench.scaleout.distributed import run_distributed
from xcbench.system import proc


def describe(inv: Any) -> dict[str, Any]:
    """The inventory as the manifest records it (no secrets: ssh aliases and options only)."""
    hosts = {}
    for h in inv.hosts:
        link = getattr(h, "link", None)
        hosts[h.name] = {"roles": list(h.roles), "transport": h.transport, "address": h.address,
                         "ssh": getattr(h, "ssh", None), "cores": getattr(h, "cores", None),
                         "link": None if link is None else {"rate": link.rate,
                                                            "rate_bits_per_s": link.rate_bits_per_s,
                                                            "rtt": link.rtt}}
    bridge = getattr(inv, "bridge", None)
    alloc = getattr(inv, "allocation", None)  # nodes from Slurm: the job, its nodes and steps
    return {"source": str(getattr(inv, "source", "")), "hosts": hosts,
            "bridge": None if bridge is None else {"name": bridge.name, "address": bridge.address},
            **({"slurm": alloc.describe()} if alloc is not None else {})}


class RunHosts:
    def __init__(self, inv: Any, run: Any, procs: proc.ProcessSet):
        self.inv, self.run, self.procs = inv, run, procs
        self.offsets: dict[str, dict[str, float]] = {}
        self.lost: set[str] = set()  # client hosts lost mid-level: not asked again
        if not inv.clients:
            raise XcbError(f"{inv.source}: hosts: no host has the client role")

    def start(self) -> None:
        """Clock offsets of every host, into the manifest (again on a resumed run: clocks drift)."""
        self.offsets = clock_offsets(self.inv)
        entry = describe(self.inv)
        entry["clock"] = _clock(self.offsets)
        self.run.state.extra["hosts"] = entry
        self.run.save_manifest()

    def _level_done(self) -> None:
        """Nodes from Slurm: each node's clock measured again (``clock_end``: the drift since the
        start, the merge used the start's) and the steps launched so far, into the manifest."""
        if getattr(self.inv, "allocation", None) is None:
            return
        entry = self.run.state.extra.setdefault("hosts", describe(self.inv))
        here = replace(self.inv, hosts=tuple(h for h in self.inv.hosts if h.name not in self.lost))
        try:
            entry["clock_end"] = _clock(clock_offsets(here))
        except XcbError as e:  # a node lost since: its share already failed, in one line
            entry["clock_end"] = {"error": str(e)}
        entry["slurm"] = self.inv.allocation.describe()
        self.run.save_manifest()

    def baseline(self) -> tuple[list[tuple[str, str]], Any]:
        """(client address, gateway address) pairs and the pair runner that reaches them."""
        pairs = [(c.address, g.address) for c in self.inv.clients for g in self.inv.gateways]
        return pairs, HostPairRunner(self.inv.clients + self.inv.gateways)

    def campaign(self, spec: CampaignSpec, *, dest: Any, source: Any, sink: Any, cell_id: str,
                 stop_event: Any) -> dict:
        raw = Path(self.run.path) / "raw" / "agents" / cell_id
        raw.mkdir(parents=True, exist_ok=True)
        clients = [h for h in self.inv.clients if h.name not in self.lost]
        if not clients:
            raise XcbError(f"{self.inv.source}: every client host was lost "
                           f"({', '.join(sorted(self.lost))})")
        try:
            row = run_distributed(spec, dest=dest, source=source, hosts=clients,
                                  sink=sink, offsets=self.offsets, cell_id=cell_id,
                                  procs=self.procs, raw_dir=raw, stop_event=stop_event)
        finally:
            if stop_event is None or not stop_event.is_set():
                self._level_done()
        for name, h in (json.loads(row.get("settings") or "{}").get("lost") or {}).items():
            self.lost.add(name)  # the next levels run from the hosts left
            alloc = getattr(self.inv, "allocation", None)
            if alloc is not None and name in alloc.nodes:
                alloc.lost.add(name)  # its scratch: cleaned by a later command, once it is back
            self.run.warn(f"cell {cell_id}: {spec.campaign_id}: client host {name} lost mid-level "
                          f"({h.get('why')}); the level kept the other hosts' records, the next "
                          "levels run without it")
        return row


def _clock(offsets: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return {h: {"offset_s": round(v["offset_s"], 6), "rtt_s": round(v["rtt_s"], 6)}
            for h, v in offsets.items()}
