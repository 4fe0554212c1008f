"""Loopback ports. Every server xcbench starts binds to 127.0.0.1 on a port chosen here."""

from __future__ import annotations

import socket

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


def port_open(port: int, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
