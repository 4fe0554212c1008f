"""Gateway readiness: talk the protocols, do not just look for a pid (see xcbench.gateway)."""

from __future__ import annotations

import http.client
import socket
import struct
import time

from xcbench.errors import XcbError
from xcbench.gateway.types import GatewayLike, Server
from xcbench.system import proc
from xcbench.system.ports import port_open
from xcbench.system.sdlisten import EXIT_BIND


class PortTaken(Exception):
    """A pre-bound port was taken between choosing it and binding it: start again."""


class Crashed(Exception):
    """A daemon died by a signal while starting (XrdCeph 5.5 did, now and then): retry."""

    def __init__(self, error: XcbError):
        super().__init__(str(error))
        self.error = error


def xroot_handshake(host: str, port: int, timeout: float = 2.0) -> int | None:
    """XRootD initial handshake; the server type (0 redirector, 1 data server) or None."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(struct.pack(">5i", 0, 0, 0, 4, 2012))
            buf = b""
            while len(buf) < 16:
                chunk = s.recv(16 - len(buf))
                if not chunk:
                    return None
                buf += chunk
    except OSError:
        return None
    _sid, status, dlen, _protover, kind = struct.unpack(">HHiii", buf)
    return kind if status == 0 and dlen == 8 else None


def http_answers(host: str, port: int, timeout: float = 2.0) -> bool:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("HEAD", "/")
        return conn.getresponse().status > 0
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def failed(gw: GatewayLike, s: Server, why: str) -> XcbError:
    lines = [ln for ln in (proc.tail(s.log, 8) + "\n" + proc.tail(s.out, 4))
             .splitlines() if ln.strip()]
    return XcbError(f"gateway {gw.name}: {s.daemon} {s.name} (cell {gw.target.cell_id}) {why}; "
                    f"config {s.config}; log {s.log}: " + " | ".join(lines[-8:]))


def wait_server(gw: GatewayLike, s: Server, deadline: float) -> None:
    assert s.proc is not None  # launched before it is waited for
    while True:
        if not s.proc.alive():
            rc = s.proc.popen.returncode
            if rc == EXIT_BIND:
                raise PortTaken(proc.tail(s.out, 1))
            if rc is not None and rc < 0:
                raise Crashed(failed(gw, s, f"was killed by signal {-rc} while starting"))
            raise failed(gw, s, f"exited with status {rc} while starting")
        addr = s.addr or gw.addr  # an origin on a gateway host: that host's address
        if s.daemon == "xrootd":
            ok = xroot_handshake(addr, s.port) is not None and (
                s.http_port is None or http_answers(addr, s.http_port))
        elif s.role == "manager":
            ok = port_open(s.port, addr, timeout=2.0)
        else:  # a data server's cmsd: its login is checked as part of the cluster below
            ok = "initialization completed" in proc.tail(s.log, 200)
        if ok:
            return
        if time.monotonic() > deadline:
            raise failed(gw, s, "did not answer in time")
        time.sleep(0.05)


def wait_cluster(gw: GatewayLike, deadline: float) -> None:
    """Wait until the manager cmsd has every origin logged in and redirects."""
    mgr = next(s for s in gw.servers if s.daemon == "cmsd" and s.role == "manager")
    want = len(gw.origins)
    while True:
        lines = proc.tail(mgr.log, 2000).splitlines()
        logged = sum("Primary server" in ln and "logged in" in ln for ln in lines)
        if logged >= want and any("manager service enabled" in ln for ln in lines):
            return
        if time.monotonic() > deadline:
            raise failed(gw, mgr, f"saw {logged} of {want} origins log in")
        time.sleep(0.05)
