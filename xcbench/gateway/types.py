"""What the gateway's parts share: a server process (``Server``) and the view of a started
gateway that readiness and placement need (``GatewayLike``), so that neither imports launch,
which imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from xcbench.system import proc


@dataclass
class Server:
    """One xrootd or cmsd process of a gateway."""
    daemon: str  # xrootd | cmsd
    role: str  # standalone | server | manager
    name: str  # instance name (-n)
    port: int
    http_port: int | None
    config: Path
    log: Path
    localroot: str | None = None  # data servers of tmpfs/cephfs targets
    proc: proc.Proc | None = field(default=None, repr=False)
    # on a gateway host (xcbench.gateway.placement): its address, where it runs, its own pid
    addr: str | None = None
    slot: Any = field(default=None, repr=False)
    host_pid: int | None = None
    # its stdout and stderr: a file of root's in root's own dir (launch.out_dir), handed to the
    # daemon as a descriptor; never a name in the logs dir the xrootd user writes
    out: Path | None = None

    @property
    def pid(self) -> int | None:
        if self.host_pid:
            return self.host_pid
        return self.proc.pid if self.proc else None

    @property
    def host(self) -> str | None:
        """Name of the inventory host it runs on (None: this host, no inventory)."""
        return self.slot.host.name if self.slot is not None else None


class CellTarget(Protocol):
    cell_id: str


class GatewayLike(Protocol):
    """A started gateway as readiness and placement see it (xcbench.gateway.launch.Gateway)."""
    name: str
    addr: str
    client_env: dict[str, str]
    servers: list[Server]

    @property
    def target(self) -> CellTarget: ...

    @property
    def origins(self) -> list[Server]: ...
