"""The inventory of hosts a run uses: which host plays which role and how commands reach it.

A small YAML file (``--hosts FILE`` or a ``hosts:`` key in a matrix)::

    bridge: {name: xcb0, address: 10.77.0.1/24}     # emulated hosts only (root-namespace side)
    hosts:
      c1: {roles: [client], transport: netns, address: 10.77.0.11, cores: 0.5,
           link: {rate: 200mbit}}
      g2: {roles: [gateway], transport: ssh, ssh: g2-alias, address: 192.0.2.22}
      osd1: {roles: [storage], transport: ssh, ssh: osd1, address: 192.0.2.31,
             link: {speed: {bond0: 50gbit, eth0: 25gbit, eth1: 25gbit}}}  # or speed: 25gbit
    ceph: {conf: /etc/ceph/ceph.conf, id: bench}
    slurm: {partition: batch, nodes: 4, gateways: 1}   # nodes from Slurm (xcbench.hosts.slurm)
    prometheus: {url: http://prom.example:9090, auth: bearer:/path/to/token}   # optional

Every mistake is one XcbError line naming the file, the host and the field, raised before
anything starts (exit 2).
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.hosts.linkspeed import LinkSpeed, parse_speed, parse_tc_rate
from xcbench.hosts.slurm_spec import SlurmRequest, parse_request
from xcbench.system.http_auth import check_secret_url, check_url, read_auth
from xcbench.system.secrets_policy import matrix_inventory_problems
from xcbench.system.userfiles import check_strings, read_yaml

ROLES = ("client", "gateway", "redirector", "storage")  # storage: OSDs run there (`cluster up --osd-host`)
TRANSPORTS = ("local", "netns", "ssh")  # written in an inventory; "slurm": a node of an allocation
# netns "xcb-<name>" and the veth "xcb-<name>" must fit Linux's 15-character interface names
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,10}$")
BRIDGE_RE = re.compile(r"^xcb[A-Za-z0-9_-]{0,12}$")  # xcb*: the only links `hosts down` deletes
DEFAULT_BRIDGE = {"name": "xcb0", "address": "10.77.0.1/24"}
HOST_KEYS = {"roles", "transport", "address", "ssh", "ssh_options", "cores", "link", "xcbench"}
_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s)\s*$")


@dataclass(frozen=True)
class Link:
    """The shaping of an emulated host's link: ``rate`` as written, ``rate_bits_per_s`` in bits/s."""
    rate: str
    rate_bits_per_s: float
    rtt: str | None = None

    @property
    def rate_bytes(self) -> float:
        """The shaped rate in bytes/s (the unit telemetry counts in)."""
        return self.rate_bits_per_s / 8.0

    @property
    def tc_rate(self) -> str:
        return f"{int(round(self.rate_bits_per_s))}bit"


@dataclass(frozen=True)
class Bridge:
    name: str
    address: str  # with its prefix, "10.77.0.1/24"

    @property
    def ip(self) -> str:
        return str(ipaddress.ip_interface(self.address).ip)

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_interface(self.address).network

    @property
    def prefixlen(self) -> int:
        return self.network.prefixlen


@dataclass(frozen=True)
class Host:
    name: str
    roles: tuple[str, ...]
    transport: str
    address: str
    ssh: str | None = None
    ssh_options: tuple[str, ...] = ()
    cores: float | None = None
    link: Link | None = None
    xcbench: tuple[str, ...] = ()  # how to run xcbench there (default: see Transport.xcbench_argv)
    link_speed: LinkSpeed | None = None  # stated, not shaped (any transport)
    slurm: Any = None  # transport slurm: the allocation it is a node of (xcbench.hosts.slurm)

    @property
    def netns(self) -> str:
        """The network namespace of an emulated host."""
        return f"xcb-{self.name}"

    @property
    def veth(self) -> str:
        """The root-namespace end of an emulated host's veth pair (on the bridge)."""
        return f"xcb-{self.name}"

    @property
    def cgroup(self) -> str:
        """The name of an emulated host's CPU cgroup (xcbench.system.cgroups naming: xcb-<run>-<role>)."""
        return f"xcb-xcbench-host-{self.name}"

    def has_role(self, role: str) -> bool:
        return role in self.roles


@dataclass(frozen=True)
class Inventory:
    hosts: tuple[Host, ...]
    bridge: Bridge | None = None
    ceph: dict | None = None
    source: str = "<inventory>"
    prometheus: dict | None = None  # {"url", "auth": (kind, secret) | None}: the site's Prometheus
    slurm: SlurmRequest | None = None  # nodes from Slurm: resolved by xcbench.hosts.slurm.nodes_of
    allocation: Any = None  # once resolved: the xcbench.hosts.slurm.Allocation the nodes are of

    def with_role(self, role: str) -> list[Host]:
        return [h for h in self.hosts if role in h.roles]

    @property
    def clients(self) -> list[Host]:
        return self.with_role("client")

    @property
    def gateways(self) -> list[Host]:
        return self.with_role("gateway")

    @property
    def redirector(self) -> Host | None:
        r = self.with_role("redirector")
        return r[0] if r else None

    @property
    def emulated(self) -> bool:
        return any(h.transport == "netns" for h in self.hosts)

    @property
    def netns_hosts(self) -> list[Host]:
        return [h for h in self.hosts if h.transport == "netns"]

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise XcbError(f"{self.source}: no host named {name!r}")


def parse_time(value: Any) -> float:
    """'20ms' -> 0.02 s. Raises ValueError."""
    m = _TIME.match(value) if isinstance(value, str) else None
    if not m:
        raise ValueError(f"{value!r} is not a time (write e.g. 20ms)")
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def local_inventory() -> Inventory:
    """Today's behaviour: this machine is every host."""
    return Inventory((Host("local", ROLES, "local", "127.0.0.1"),), None, None, "<local>")


# host settings that run a command on this machine (ssh's ProxyCommand, LocalCommand ...; the
# command that runs xcbench there): taken only from an inventory file given on the command line
COMMAND_KEYS = ("xcbench", "ssh_options")


def load_inventory(path: str | Path, *, commands: bool = True) -> Inventory:
    """An inventory file. ``commands``: may it hold settings that run commands (True for a
    file given on the command line with --hosts; False for one a matrix names)."""
    data = read_yaml(path)
    check_strings(data, str(path))
    return parse_inventory(data, str(path), commands=commands)


def parse_inventory(data: Any, where: str, *, commands: bool = True) -> Inventory:
    """Validate an inventory (a mapping read from YAML); XcbError("<where>: host c1: cores: ...").
    ``commands=False`` (an inventory inline in a matrix, or a file a matrix names): settings
    that run commands (:data:`COMMAND_KEYS`) are refused."""
    if not isinstance(data, dict):
        raise XcbError(f"{where}: top level: not a mapping of bridge/hosts/ceph "
                       f"(found {type(data).__name__})")
    if "slurm" in data and not commands:  # salloc, steps: the operator's own account and nodes
        raise XcbError(f"{where}: slurm: asks Slurm for nodes and runs job steps; allowed only in "
                       f"an inventory file given on the command line (--hosts FILE), not from a matrix")
    known = ["bridge", "hosts", "ceph", "prometheus", *(["slurm"] if commands else [])]
    unknown = sorted(set(map(str, data)) - set(known))
    if unknown:
        raise XcbError(f"{where}: {unknown[0]}: unknown key (known: {', '.join(known)})")
    slurm = parse_request(data["slurm"], where) if "slurm" in data else None
    raw = data.get("hosts")
    if slurm is not None and (raw is None or raw == {}):
        raw = {}
    elif not isinstance(raw, dict) or not raw:
        raise XcbError(f"{where}: hosts: must be a non-empty mapping of host name -> settings"
                       f"{'' if slurm else ' (or slurm: for nodes from Slurm)'}")
    if not commands:
        for name, spec in raw.items():
            for key in COMMAND_KEYS:
                if isinstance(spec, dict) and key in spec:
                    raise XcbError(f"{where}: host {name}: {key}: runs a command on this machine; "
                                   f"allowed only in an inventory file given on the command line "
                                   f"(--hosts FILE), not from a matrix")
        refused = matrix_inventory_problems(data, where)  # nothing that picks a secret's path
        if refused:
            raise XcbError(refused[0])
    hosts = [_host(str(name), spec, where) for name, spec in raw.items()]
    bridge = _bridge(data.get("bridge"), where) if any(
        h.transport == "netns" for h in hosts) or data.get("bridge") is not None else None
    _cross_check(hosts, bridge, where)
    return Inventory(tuple(hosts), bridge, _ceph(data.get("ceph"), where), where,
                     _prometheus(data.get("prometheus"), where), slurm)


def _prometheus(spec: Any, where: str) -> dict | None:
    """prometheus: {url: ..., auth: bearer:PATH | basic:PATH} (the secret read from its file)."""
    if spec is None:
        return None
    if not isinstance(spec, dict) or "url" not in spec or set(map(str, spec)) - {"url", "auth"}:
        raise XcbError(f"{where}: prometheus: must be a mapping with url (and optionally auth: "
                       "bearer:PATH or basic:PATH)")
    for k, v in spec.items():
        if not isinstance(v, str) or not v:
            raise XcbError(f"{where}: prometheus: {k}: must be a non-empty string")
    url = check_url(spec["url"], f"{where}: prometheus: url")
    check_secret_url(url, spec.get("auth"), f"{where}: prometheus: url")
    return {"url": url, "auth": read_auth(spec.get("auth"), f"{where}: prometheus: auth")}


def _host(name: str, spec: Any, where: str) -> Host:
    at = f"{where}: host {name}"
    if not NAME_RE.match(name):
        raise XcbError(f"{at}: name: must be 1-11 letters, digits, _ or - (starting with a letter "
                       f"or digit): it names a network namespace and a network interface")
    if not isinstance(spec, dict):
        raise XcbError(f"{at}: must be a mapping (roles, transport, address, ...)")
    unknown = sorted(set(map(str, spec)) - HOST_KEYS)
    if unknown:
        raise XcbError(f"{at}: {unknown[0]}: unknown key (known: {', '.join(sorted(HOST_KEYS))})")
    roles = spec.get("roles")
    if isinstance(roles, str):
        roles = [roles]
    if not isinstance(roles, list) or not roles:
        raise XcbError(f"{at}: roles: must be a non-empty list of {', '.join(ROLES)}")
    for r in roles:
        if r not in ROLES:
            raise XcbError(f"{at}: roles: {r!r} is not a role ({', '.join(ROLES)})")
    transport = spec.get("transport", "local")
    if transport not in TRANSPORTS:
        raise XcbError(f"{at}: transport: {transport!r} is not one of {', '.join(TRANSPORTS)}")
    address = spec.get("address", "127.0.0.1" if transport == "local" else None)
    if address is None:
        raise XcbError(f"{at}: address: required for transport {transport} "
                       f"(the address its gateways bind to and clients reach)")
    try:
        ip = ipaddress.ip_address(str(address))
    except ValueError:
        raise XcbError(f"{at}: address: {address!r} is not an IP address") from None
    ssh, opts = spec.get("ssh"), spec.get("ssh_options", [])
    if transport == "ssh":
        if not isinstance(ssh, str) or not ssh.strip() or ssh.startswith("-") or \
                any(c.isspace() for c in ssh):
            raise XcbError(f"{at}: ssh: required for transport ssh: an ~/.ssh/config alias or "
                           f"user@host (no spaces, not starting with -)")
        if not isinstance(opts, list) or not all(isinstance(o, (str, int)) for o in opts):
            raise XcbError(f"{at}: ssh_options: must be a list of ssh arguments "
                           f"(e.g. [-o, Port=2222, -i, key])")
    elif ssh is not None or spec.get("ssh_options") is not None:
        raise XcbError(f"{at}: {'ssh' if ssh is not None else 'ssh_options'}: only for "
                       f"transport ssh (this host's transport is {transport})")
    cores = spec.get("cores")
    if cores is not None:
        if transport != "netns":
            raise XcbError(f"{at}: cores: only for transport netns (an emulated host's CPU "
                           f"quota); a real host has its own cores")
        if isinstance(cores, bool) or not isinstance(cores, (int, float)) or \
                not (0.01 <= cores <= 1024) or not math.isfinite(cores):
            raise XcbError(f"{at}: cores: {cores!r} must be a number of cores in [0.01, 1024]")
    link_spec = spec.get("link")
    speed = parse_speed(link_spec.get("speed"), at) if isinstance(link_spec, dict) and "speed" in link_spec else None
    if isinstance(link_spec, dict) and "speed" in link_spec:
        link_spec = {k: v for k, v in link_spec.items() if k != "speed"} or None
    link = _link(link_spec, transport, at)
    xcb = spec.get("xcbench", [])
    if isinstance(xcb, str):
        import shlex
        xcb = shlex.split(xcb)
    if not isinstance(xcb, list) or not all(isinstance(x, str) and x for x in xcb):
        raise XcbError(f"{at}: xcbench: must be the command that runs xcbench on the host "
                       f"(e.g. /opt/xcbench/bin/xcbench)")
    return Host(name, tuple(dict.fromkeys(roles)), transport, str(ip), ssh if transport == "ssh"
                else None, tuple(str(o) for o in opts) if transport == "ssh" else (),
                float(cores) if cores is not None else None, link, tuple(xcb), speed)


def _link(spec: Any, transport: str, at: str) -> Link | None:
    if spec is None:
        return None
    if transport != "netns":
        raise XcbError(f"{at}: link: only for transport netns (links of emulated hosts are shaped)")
    if not isinstance(spec, dict) or "rate" not in spec and "rtt" not in spec:
        raise XcbError(f"{at}: link: must be a mapping with rate (e.g. 200mbit) and/or rtt")
    unknown = sorted(set(map(str, spec)) - {"rate", "rtt"})
    if unknown:
        raise XcbError(f"{at}: link: {unknown[0]}: unknown key (known: rate, rtt, speed)")
    rate, rtt = spec.get("rate"), spec.get("rtt")
    bits_per_s = math.inf
    if rate is not None:
        try:
            bits_per_s = parse_tc_rate(rate)
        except ValueError as e:
            raise XcbError(f"{at}: link: rate: {e}") from None
    if rtt is not None:
        try:
            parse_time(rtt)
        except ValueError as e:
            raise XcbError(f"{at}: link: rtt: {e}") from None
    return Link(str(rate) if rate is not None else "", bits_per_s, str(rtt) if rtt is not None else None)


def _bridge(spec: Any, where: str) -> Bridge:
    spec = DEFAULT_BRIDGE if spec is None else spec
    if not isinstance(spec, dict) or set(map(str, spec)) - {"name", "address"}:
        raise XcbError(f"{where}: bridge: must be a mapping {{name: xcb0, address: 10.77.0.1/24}}")
    name = str(spec.get("name", DEFAULT_BRIDGE["name"]))
    if not BRIDGE_RE.match(name):
        raise XcbError(f"{where}: bridge: name: {name!r} must be xcb followed by up to 12 letters, digits, _ or - (xcbench deletes only "
                       "links named xcb*)")
    addr = str(spec.get("address", DEFAULT_BRIDGE["address"]))
    try:
        iface = ipaddress.ip_interface(addr)
    except ValueError:
        raise XcbError(f"{where}: bridge: address: {addr!r} is not an address with its prefix "
                       f"(e.g. 10.77.0.1/24)") from None
    if "/" not in addr or iface.version != 4 or not iface.ip.is_private or iface.ip.is_loopback \
            or iface.network.prefixlen > 30 or iface.ip in (iface.network.network_address,
                                                             iface.network.broadcast_address):
        raise XcbError(f"{where}: bridge: address: {addr!r} must be a private IPv4 host address "
                       f"with a prefix of /30 or wider (e.g. 10.77.0.1/24): emulated hosts use "
                       f"private addresses only")
    return Bridge(name, addr)


def _cross_check(hosts: list[Host], bridge: Bridge | None, where: str) -> None:
    seen: dict[str, str] = {}
    redirectors = [h.name for h in hosts if "redirector" in h.roles]
    if len(redirectors) > 1:
        raise XcbError(f"{where}: host {redirectors[1]}: roles: a second redirector "
                       f"({redirectors[0]} is one); a run has one cmsd redirector")
    for h in hosts:
        if h.transport != "netns":
            continue
        assert bridge is not None
        ip = ipaddress.ip_address(h.address)
        net = bridge.network
        if ip not in net or ip in (net.network_address, net.broadcast_address) or \
                str(ip) == bridge.ip:
            raise XcbError(f"{where}: host {h.name}: address: {h.address} must be a host address "
                           f"in the bridge's network {net} other than the bridge's {bridge.ip}")
        if h.address in seen:
            raise XcbError(f"{where}: host {h.name}: address: {h.address} is also host "
                           f"{seen[h.address]}'s")
        seen[h.address] = h.name


def _ceph(spec: Any, where: str) -> dict | None:
    if spec is None:
        return None
    if not isinstance(spec, dict) or set(map(str, spec)) - {"conf", "id", "keyring"}:
        raise XcbError(f"{where}: ceph: must be a mapping with conf (a ceph.conf path) and id")
    for k, v in spec.items():
        if not isinstance(v, str) or not v:
            raise XcbError(f"{where}: ceph: {k}: must be a non-empty string")
    return dict(spec)
