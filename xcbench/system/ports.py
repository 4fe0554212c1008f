"""Loopback ports. Every server xcbench starts binds to 127.0.0.1 on a port chosen here."""

from __future__ import annotations

import random
import re
import socket
from pathlib import Path
from typing import Any, NamedTuple

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK, *, udp: bool = False, avoid: set[int] | None = None) -> int:
    """A port that is free right now on ``host`` (the kernel picks it), not one in ``avoid``."""
    kind = socket.SOCK_DGRAM if udp else socket.SOCK_STREAM
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(100):
        with socket.socket(family, kind) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if not avoid or port not in avoid:
            return port
    raise OSError(f"no free port on {host}")


def free_ports(n: int, host: str = LOOPBACK) -> list[int]:
    """``n`` distinct free TCP ports (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for ports it picks itself (bind to 0, a connect's local port)."""
    try:
        lo, hi = map(int, EPHEMERAL.read_text().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def late_bind_port(host: str = LOOPBACK) -> int:
    """A free TCP port for a server that binds it some seconds later (the ceph-mgr's prometheus
    module: after the mgr has loaded it). Taken below the kernel's ephemeral range: a port there
    is only free until any outgoing connection of the host is given it as its local port, and
    then the server cannot bind it. A port below the range is handed out by nobody."""
    lo, _ = ephemeral_range()
    first = max(1024, lo // 2)
    for port in random.sample(range(first, lo), min(200, lo - first)):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        return port
    raise OSError(f"no free port on {host} in {first}-{lo - 1}")


def port_open(port: int, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _ip(value: object) -> Any:
    """``value`` as an IP address (brackets allowed; an IPv4-mapped one as its IPv4), or None."""
    import ipaddress
    v = str(value if value is not None else "").strip()
    try:
        ip = ipaddress.ip_address(v[1:-1] if v.startswith("[") and v.endswith("]") else v)
    except ValueError:
        return None
    return getattr(ip, "ipv4_mapped", None) or ip


def is_wildcard(bind: object) -> bool:
    """Does ``bind`` listen on every interface? By address semantics, not spelling: 0.0.0.0,
    ::, ::0, 0:0::0, [::], ::ffff:0.0.0.0 (an IPv4-mapped wildcard), "" and "*"."""
    if str(bind if bind is not None else "").strip() in ("", "*"):
        return True
    ip = _ip(bind)
    return ip is not None and ip.is_unspecified


class Url(NamedTuple):
    """A URL as :func:`parse_url` reads it: what a policy decides on is what a request uses."""
    scheme: str
    host: str  # lower case; an IPv6 address without brackets
    port: int | None
    path: str  # with its query, as given

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.path}"


_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)([^#]*)")
_HOST = re.compile(r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+")


def parse_url(url: object) -> Url | None:
    """The one reading of a URL that decides where a request goes, for the policy (is it
    loopback? TLS?) and for the request itself (xcbench.clients.http_client connects to ``host``
    and ``port`` from here). None for anything two parsers could read differently: user info
    (``user@``: ``http://evil.example\\@127.0.0.1/`` is 127.0.0.1 to urllib, evil.example to
    requests), a backslash, a percent sign, space or control character anywhere, a fragment, a
    host that is not a plain name or address, a port that is not a number."""
    if not isinstance(url, str) or not url.isascii() or re.search(r"[\x00-\x20\x7f\\%#]", url):
        return None
    m = _URL.fullmatch(url)
    if m is None:
        return None
    scheme, authority, path = m.group(1).lower(), m.group(2), m.group(3)
    host, sep, port = authority.rpartition(":") if not authority.endswith("]") else (authority, "", "")
    if not sep:
        host, port = authority, ""
    if not host or not _HOST.fullmatch(host) or (sep and not port.isdigit()) or \
            (port and not 0 < int(port) < 65536):
        return None
    return Url(scheme, host.strip("[]").lower(), int(port) if port else None, path)


def is_loopback_url(url: str) -> bool:
    """Does ``url`` name a host on this machine's loopback (127.0.0.0/8, ::1, localhost)? By
    :func:`parse_url`: a URL it does not read is not loopback."""
    u = parse_url(url)
    return u is not None and is_loopback_addr(u.host)


def cleartext_token_problem(url: object) -> str | None:
    """Why a bearer token may not be sent to ``url`` (None: it may): only over https://, or
    over http:// to this machine's loopback (it never leaves the host)."""
    if not isinstance(url, str):
        return None
    if url.lower().startswith("http://") and not is_loopback_url(url):
        return (f"{url}: a bearer token is sent only over https:// (plain http:// would give it "
                f"to anyone on the path); use the https:// endpoint")
    return None


def is_loopback_addr(value: object) -> bool:
    """Is ``value`` an address of this machine's loopback (127.0.0.0/8, ::1, an IPv4-mapped
    127.x, ``localhost``; brackets allowed)?"""
    if str(value if value is not None else "").strip() == "localhost":
        return True
    ip = _ip(value)
    return ip is not None and ip.is_loopback


def check_bind(value: object) -> list[tuple[str, str]]:
    """Problems of a matrix's gateway ``bind`` as (field, message) pairs ([] if usable).

    A matrix is data from anyone, and a gateway serves its cell's namespace to whoever reaches
    it: a matrix binds a gateway to this machine's loopback only. Gateways on other addresses
    are placed by an inventory given on the command line (``--hosts FILE``), each on its host's
    own address; a wildcard (0.0.0.0, ::) is never bound."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return [("bind", "empty: give a loopback address (127.0.0.1 is the default)")]
    if not isinstance(value, str):
        return [("bind", f"{value!r} is not an address")]
    v = value.strip()
    if v == "localhost":
        return []
    if _ip(v) is None:
        return [("bind", f"{value!r} is not an IP address (127.0.0.1, ::1)")]
    if is_wildcard(v):
        return [("bind", f"{v} listens on every interface: a gateway serves its cell to whoever "
                 "reaches it, so a matrix binds it to loopback (127.0.0.1, ::1); gateways on other "
                 "hosts come from an inventory given with --hosts FILE")]
    if not is_loopback_addr(v):
        return [("bind", f"{v} is not a loopback address: a matrix binds a gateway to loopback "
                 "(127.0.0.1, ::1); gateways on other addresses come from an inventory given "
                 "with --hosts FILE")]
    return []
