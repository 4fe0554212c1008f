"""Link speeds: tc's rate syntax, and a host's link speed as an inventory states it.

    parse_tc_rate("25gbit") -> 2.5e10 bits/s
    parse_speed("25gbit", at) / parse_speed({"eth0": "25gbit"}, at) -> LinkSpeed
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from xcbench.errors import XcbError

# tc's rate units: bits ("200mbit") or bytes ("25mbps") per second, decimal or binary prefixes
_TC_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(|k|m|g|t|ki|mi|gi|ti)(bit|bps)\s*$", re.I)
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
           "ki": 2.0 ** 10, "mi": 2.0 ** 20, "gi": 2.0 ** 30, "ti": 2.0 ** 40}


def parse_tc_rate(value: Any) -> float:
    """'200mbit' -> 2e8 bits/s ('25mbps' is bytes/s, as tc reads it). Raises ValueError."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"{value!r} is not a tc rate (write e.g. 200mbit or 1gbit)")
    m = _TC_RATE.match(value)
    if not m:
        raise ValueError(f"{value!r} is not a tc rate (write e.g. 200mbit or 1gbit)")
    num, prefix, unit = m.groups()
    bits = float(num) * _PREFIX[prefix.lower()] * (1.0 if unit.lower() == "bit" else 8.0)  # tc's bps: bytes
    if not (bits >= 8000 and math.isfinite(bits)):
        raise ValueError(f"{value!r} is below 1 kB/s: not a rate a link can be shaped to")
    return bits


@dataclass(frozen=True)
class LinkSpeed:
    """A host's link speed as the operator states it (``link: {speed: 25gbit}`` for every NIC
    of the host, or ``{speed: {eth0: 25gbit, bond0: 50gbit}}`` per NIC): for NICs whose driver
    reports none (node_network_speed_bytes absent). Bits/s."""
    host_bits_per_s: float | None = None
    nics: tuple[tuple[str, float], ...] = ()

    def of(self, device: str) -> tuple[float, str] | None:
        """(bytes/s, which entry) of one NIC: its own entry, else the host's."""
        own = dict(self.nics).get(device)
        if own is not None:
            return own / 8.0, f"link.speed.{device}"
        return (self.host_bits_per_s / 8.0, "link.speed") if self.host_bits_per_s else None


def parse_speed(spec: Any, at: str) -> LinkSpeed:
    """``speed: 25gbit`` (every NIC of the host) or ``speed: {eth0: 25gbit, ...}`` (per NIC)."""
    def rate(v: Any, field: str) -> float:
        try:
            return parse_tc_rate(v)
        except ValueError as e:
            raise XcbError(f"{at}: {field}: {e}") from None
    if isinstance(spec, dict):
        if not spec:
            raise XcbError(f"{at}: link: speed: must name at least one NIC (e.g. {{eth0: 25gbit}})")
        nics = []
        for nic, v in spec.items():
            if not isinstance(nic, str) or not re.match(r"^[A-Za-z0-9_.:@-]{1,15}$", nic):
                raise XcbError(f"{at}: link: speed: {nic!r} is not a network interface name")
            nics.append((nic, rate(v, f"link: speed: {nic}")))
        return LinkSpeed(None, tuple(nics))
    return LinkSpeed(rate(spec, "link: speed"), ())
