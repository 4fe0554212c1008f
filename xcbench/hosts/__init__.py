"""Hosts and roles: which machine runs clients, gateways and the redirector, and how commands
reach it (xcbench.hosts.transport); emulated hosts on one machine (xcbench.hosts.emulate)."""

from xcbench.hosts.inventory import (
    Bridge,
    Host,
    Inventory,
    Link,
    load_inventory,
    local_inventory,
    parse_inventory,
)
from xcbench.hosts.transport import NetnsTransport, SshTransport, Transport, transport_for

__all__ = ["Bridge", "Host", "Inventory", "Link", "NetnsTransport", "SshTransport", "Transport",
           "load_inventory", "local_inventory", "parse_inventory", "transport_for"]
