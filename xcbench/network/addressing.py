"""Network addressing of a run: which address a listener of this machine binds so that every
gateway host of the inventory reaches it (never a wildcard)."""

from __future__ import annotations

import socket
from typing import Any

from xcbench.errors import XcbError


def report_host(hosts: Any = None) -> str:
    """The address the run's xrd.report listener binds so that every gateway host reaches it:
    loopback without an inventory (or a local-only one); the bridge address for emulated hosts;
    else this machine's source address on the route to the first gateway host."""
    gws = list(getattr(hosts, "gateways", None) or [])
    if not any(h.transport != "local" or h.address not in ("127.0.0.1", "localhost") for h in gws):
        return "127.0.0.1"
    bridge = getattr(hosts, "bridge", None)
    if bridge is not None:
        return str(bridge.ip)
    dest = str(gws[0].address)
    with socket.socket(socket.AF_INET6 if ":" in dest else socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((dest, 9))  # no packet is sent: this only picks the source address
            return str(s.getsockname()[0])
        except OSError as e:
            raise XcbError(f"{getattr(hosts, 'source', 'hosts')}: no route to gateway host "
                           f"{dest}: {e}") from e
