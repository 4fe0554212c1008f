"""Hosts and roles: which machine runs clients, gateways and the redirector, and how commands
reach it (xcbench.hosts.transport; job steps on Slurm nodes: xcbench.hosts.steps); emulated hosts
on one machine (xcbench.hosts.emulate); nodes from a Slurm allocation (xcbench.hosts.slurm)."""

from xcbench.hosts.inventory import (
    Bridge,
    Host,
    Inventory,
    Link,
    load_inventory,
    local_inventory,
    parse_inventory,
)
from xcbench.hosts.steps import SlurmTransport  # registers transport "slurm"
from xcbench.hosts.transport import NetnsTransport, SshTransport, Transport, transport_for

__all__ = ["Bridge", "Host", "Inventory", "Link", "NetnsTransport", "SlurmTransport", "SshTransport",
           "Transport",
           "load_inventory", "local_inventory", "parse_inventory", "transport_for"]
