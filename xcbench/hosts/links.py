"""The links of emulated hosts: bytes through each host's veth and the rate it is shaped to
(the "shaped link" limit of the role vocabulary), read in the root namespace.

Counters are the host's view: ``tx_bytes`` is what the host sent (what its root-side veth end
received), ``rx_bytes`` what it received.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.hosts.emulate import recorded_hosts
from xcbench.hosts.inventory import Host, Inventory
from xcbench.hosts.reshape import current_rates

SYS_NET = Path("/sys/class/net")


@dataclass(frozen=True)
class LinkInfo:
    host: str
    veth: str
    roles: tuple[str, ...]
    rate_bits_per_s: float | None  # bits/s; None: not shaped

    @property
    def limit_bytes(self) -> float | None:
        """The shaped rate in bytes/s (None: unshaped)."""
        return self.rate_bits_per_s / 8.0 if self.rate_bits_per_s else None


def _info(host: Host) -> LinkInfo:
    rate = host.link.rate_bits_per_s if host.link and host.link.rate else None
    return LinkInfo(host.name, host.veth, host.roles, rate)


def read_counters(veth: str, sys_net: Path = SYS_NET) -> dict[str, int]:
    """The host's {tx_bytes, rx_bytes} through its root-side veth end ``veth``."""
    stats = sys_net / veth / "statistics"
    try:
        rx = int((stats / "rx_bytes").read_text())
        tx = int((stats / "tx_bytes").read_text())
    except (OSError, ValueError) as e:
        raise XcbError(f"link {veth}: no counters ({e}): are the emulated hosts up?") from None
    return {"tx_bytes": rx, "rx_bytes": tx}  # the host sends what its root-side end receives


def link_counters(host: Host) -> dict[str, int]:
    """{"tx_bytes", "rx_bytes"} of an emulated host's link (its view)."""
    if host.transport != "netns":
        raise XcbError(f"host {host.name}: transport {host.transport}: only emulated (netns) "
                       f"hosts have a link xcbench can count")
    return read_counters(host.veth)


def links_of(inv: Inventory) -> list[LinkInfo]:
    now = current_rates()  # a link an experiment holds tightened: its limit is that rate
    return [replace(i, rate_bits_per_s=now.get(i.host, i.rate_bits_per_s)) for i in map(_info, inv.netns_hosts)]


def recorded_links(state: str | Path | None = None) -> list[LinkInfo]:
    """The links of every emulated host recorded as up (xcbench.hosts.emulate's records)."""
    out = []
    for name, h in recorded_hosts(state):
        rate = h.get("reshaped_bits_per_s") or h.get("rate_bits_per_s")  # tightened by an experiment: that
        out.append(LinkInfo(name, h["veth"], tuple(h.get("roles") or ()),
                            float(rate) if rate and rate != float("inf") else None))
    return out
