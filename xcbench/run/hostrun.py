"""A run with an inventory of hosts (`xcbench run --hosts FILE`, or a matrix's ``hosts:``).

What the runner (xcbench.run.runner) asks of it, in this order:
- :meth:`RunHosts.start`: every host's clock offset and round trip measured once
  (xcbench.hosts.checks.clock_offsets) and written, with the hosts, in the manifest
  (``hosts``); the versions were checked by the command before anything started;
- :meth:`RunHosts.baseline`: iperf3 from each client host to each gateway host, its server on
  the gateway host and its client on the client host, each through the host's transport;
- :meth:`RunHosts.campaign`: each level from the client hosts (xcbench.scaleout.distributed).
The gateways themselves go on the gateway hosts through CellSession(hosts=...) (engineer
gwhosts' xcbench.gateway.placement).
"""

from __future__ import annotations

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
                                                            "rate_bps": link.rate_bps,
                                                            "rtt": link.rtt}}
    bridge = getattr(inv, "bridge", None)
    return {"source": str(getattr(inv, "source", "")), "hosts": hosts,
            "bridge": None if bridge is None else {"name": bridge.name, "address": bridge.address}}


class RunHosts:
    def __init__(self, inv: Any, run: Any, procs: proc.ProcessSet):
        self.inv, self.run, self.procs = inv, run, procs
        self.offsets: dict[str, dict[str, float]] = {}
        if not inv.clients:
            raise XcbError(f"{inv.source}: hosts: no host has the client role")

    def start(self) -> None:
        """Clock offsets of every host, into the manifest (again on a resumed run: clocks drift)."""
        self.offsets = clock_offsets(self.inv)
        entry = describe(self.inv)
        entry["clock"] = {h: {"offset_s": round(v["offset_s"], 6), "rtt_s": round(v["rtt_s"], 6)}
                          for h, v in self.offsets.items()}
        self.run.state.extra["hosts"] = entry
        self.run.save_manifest()

    def baseline(self) -> tuple[list[tuple[str, str]], Any]:
        """(client address, gateway address) pairs and the pair runner that reaches them."""
        pairs = [(c.address, g.address) for c in self.inv.clients for g in self.inv.gateways]
        return pairs, HostPairRunner(self.inv.clients + self.inv.gateways)

    def campaign(self, spec: CampaignSpec, *, dest: Any, source: Any, sink: Any, cell_id: str,
                 stop_event: Any) -> dict:
        raw = Path(self.run.path) / "raw" / "agents" / cell_id
        raw.mkdir(parents=True, exist_ok=True)
        return run_distributed(spec, dest=dest, source=source, hosts=self.inv.clients, sink=sink,
                               offsets=self.offsets, cell_id=cell_id, procs=self.procs,
                               raw_dir=raw, stop_event=stop_event)
