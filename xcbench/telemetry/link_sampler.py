"""The `links` telemetry device: each emulated host's link, bytes both ways and its shaped rate.

    link.tx_bytes  link.rx_bytes      counters (+ .rate, bytes/s), the host's view   [host, roles]
    link.limit_bytes                  the rate the link is shaped to, bytes/s (None: unshaped)

The shaped rate is the limit the network verdict compares link.*_bytes.rate with.
"""

from __future__ import annotations

from pathlib import Path

from xcbench.hosts.links import SYS_NET, LinkInfo, read_counters
from xcbench.telemetry.base import Rates, SampleGap, Sampler


class LinksSampler(Sampler):
    name = "links"

    def __init__(self, links: list[LinkInfo], sys_net: Path = SYS_NET):
        self.links = list(links)
        self.sys_net = sys_net
        self._rates = Rates()

    def sample(self, wall: float, mono: float) -> list[dict]:
        rows: list[dict] = []
        missing = []
        for link in self.links:
            labels = {"host": link.host, "roles": ",".join(link.roles)}
            try:
                c = read_counters(link.veth, self.sys_net)
            except Exception:  # noqa: BLE001 - one host gone must not lose the others
                missing.append(link.host)
                continue
            for field in ("tx_bytes", "rx_bytes"):
                rows += self._rates.counter_rows(self, wall, mono, f"link.{field}", c[field],
                                                 labels)
            rows.append(self.row(wall, mono, "link.limit_bytes", link.limit_bytes, labels))
        if missing:
            raise SampleGap(f"no link counters for host(s) {', '.join(missing)}", rows)
        return rows
