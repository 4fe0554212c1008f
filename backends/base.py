"""The Backend interface and the Target it prepares (see the package docstring for the list)."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcbench.cell import BACKENDS
from xcbench.errors import XcbError
from xcbench.store.findings import plain_gateway_findings

if TYPE_CHECKING:
    from xcbench.cell import Cell, Layout
    from xcbench.ceph.cluster import Cluster
    from xcbench.system.proc import ProcessSet


@dataclass
class Target:
    """What a backend prepared for one cell, and all a gateway or a probe needs to know about it.

    ``path``: the local directory a plain xrootd exports (tmpfs dir, CephFS layout dir on the
    mount) or a fio file target; None for rados. ``oss``: the backend's OSS parameters
    (e.g. {"localroot": path} or {"ceph_user": ..., "pool": ..., striping}).
    ``created``: everything prepare created, so cleanup removes exactly that.

    The gateway/probe fields below default to what the backend class declares
    (:attr:`Backend.target_defaults`), so a Target built by hand for a known backend is complete:
    ``osslib`` (ofs.osslib library; None: a POSIX export with oss.localroot), ``gateway_env``
    (environment of the gateway's processes), ``ceph_conf_env`` (the gateway is a Ceph client:
    CEPH_CONF names a conf the xrootd user can read), ``client_env`` (what a client of the gateway
    must run with), ``shared_store`` (origins behind a redirector see one store: cms.dfs; else
    each origin gets its own subdir), ``gateway_defaults`` (tunables under the cell's),
    ``fio_engine`` ("files": fio in ``path``; "rados": fio's rados engine on ``pool``).
    """
    cell_id: str
    backend: str
    path: str | None = None
    pool: str | None = None
    layout: Layout | None = None
    oss: dict[str, Any] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    osslib: str | None = None
    gateway_env: dict[str, str] | None = None
    ceph_conf_env: bool | None = None
    client_env: dict[str, str] | None = None
    shared_store: bool | None = None
    gateway_defaults: dict[str, Any] | None = None
    fio_engine: str | None = None

    @property
    def backend_type(self) -> type[Backend]:
        """The backend that prepared this target (its class: gateways and probes ask it)."""
        return backend_class(self.backend)

    def origin_path(self, i: int) -> str | None:
        """Where origin ``i`` (1-based) of a redirected gateway keeps its files: its own subdir
        of ``path`` (so files can be counted per origin), or None with a shared store."""
        if self.shared_store or not self.path:
            return None
        return f"{self.path.rstrip('/')}/origin-{i}"

    def __post_init__(self) -> None:
        defaults = backend_class(self.backend).target_defaults if self.backend in BACKENDS \
            else Backend.target_defaults
        for key, value in defaults.items():
            if getattr(self, key) is None:
                setattr(self, key, dict(value) if isinstance(value, dict) else value)


class Backend(ABC):
    """One storage backend. Subclasses set ``name`` and ``target_defaults`` and implement
    prepare/verify/cleanup; the class methods have defaults that fit a POSIX export."""

    name: str = ""
    needs_cluster = False  # a storage target under Ceph (tmpfs: the gateway ceiling, no storage)
    # where the gateway's writes land: a file system ("mount") or RADOS objects ("pool"); the
    # level probe of that kind is the one on the chain's path
    gateway_writes_to = "mount"
    verify_needs_gateway = False  # verify() writes through a gateway (the session gives it one)
    # a gateway on a host reached over ssh (xcbench.gateway.agent): how the agent there makes the
    # data path: "mount" (prepare() run there: its own mount of the target's size), "client" (a
    # Ceph client: nothing to mount, the conf and key are sent), or None: refused with the reason
    remote_gateway: str | None = None
    remote_gateway_refusal = "its target is prepared on this machine only"
    # what every Target of this backend says to gateways and probes (see Target)
    target_defaults: Mapping[str, Any] = {
        "osslib": None, "gateway_env": {}, "ceph_conf_env": False, "client_env": {},
        "shared_store": False, "gateway_defaults": {}, "fio_engine": "files"}

    def __init__(self, cluster: Cluster | None, workdir: Path, procs: ProcessSet | None = None):
        if self.needs_cluster and cluster is None:
            raise XcbError(f"backend {self.name}: needs a Ceph cluster (--ceph-conf, or the "
                           "embedded one)")
        self.cluster = cluster
        self.workdir = Path(workdir)
        self.procs = procs

    @abstractmethod
    def prepare(self, cell: Cell) -> Target: ...

    @abstractmethod
    def verify(self, target: Target, gateway: Any = None) -> dict[str, Any]:
        """Check the target is what the cell asked for; return the evidence, raise XcbError if
        not. ``gateway``: the cell's started gateway (None: check without one, where the
        backend can; a backend that can only check through a gateway raises)."""

    @abstractmethod
    def cleanup(self, target: Target) -> None: ...

    def close(self) -> None:
        """Release what the instance holds beyond its targets (a mount); cleanup does it after
        the last target, this is for an instance whose targets were never prepared."""
        return None

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name}

    def layout_evidence(self, target: Target) -> dict[str, Any] | None:
        """The layout as applied, for the cell's fingerprint (None: the backend has none)."""
        lay = target.layout
        if lay is None:
            return None
        return {"stripe_unit": lay.stripe_unit, "object_size": lay.object_size,
                "stripe_count": lay.stripe_count, "source": "xrdceph striper"}

    # ---- pure, per class: used by gateways, probes and findings without an instance ----------
    @classmethod
    def gateway_oss(cls, target: Target, tunables: Mapping[str, Any]) -> dict[str, Any] | None:
        """The ofs.osslib directive of the gateway config ({"lib", "params", "cksio",
        "xattrlib"}), or None for a POSIX export (oss.localroot = the target's path)."""
        return None

    @classmethod
    def probe_room(cls, object_size: int, file_size: int) -> int:
        """The largest block a bandwidth probe job may write (one file here)."""
        return file_size

    @classmethod
    def findings(cls, cell_id: str, tunables: Mapping[str, Any],
                 facts: Mapping[str, Any]) -> list[dict]:
        """FINDING rows specific to this backend (xcbench.store.findings has the common ones).
        ``tunables``: the effective gateway tunables; ``facts``: object_size,
        osd_max_object_size, client, mode (those known; missing ones are None)."""
        return plain_gateway_findings(cell_id, tunables)


def backend_class(name: str) -> type[Backend]:
    if name not in BACKENDS:
        raise XcbError(f"backend: unknown backend {name!r} ({', '.join(BACKENDS)})")
    mod = importlib.import_module(f"xcbench.backends.{name}")
    return mod.BACKEND


get_backend = backend_class
