"""The Backend interface: prepare(cell) -> Target, verify(target), cleanup(target), describe()."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcbench.errors import XcbError

if TYPE_CHECKING:
    from xcbench.cell import Cell, Layout
    from xcbench.ceph.cluster import Cluster
    from xcbench.proc import ProcessSet


@dataclass
class Target:
    """What a backend prepared for one cell.

    ``path``: the local directory a plain xrootd exports (tmpfs dir, CephFS layout dir on the
    mount) or a fio file target; None for rados. ``oss``: what the gateway config needs
    (e.g. {"localroot": path} or {"osslib": ..., "ceph_user": ..., "pool": ...}).
    ``created``: everything prepare created, so cleanup removes exactly that.
    """
    cell_id: str
    backend: str
    path: str | None = None
    pool: str | None = None
    layout: Layout | None = None
    oss: dict[str, Any] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


class Backend(ABC):
    name: str = ""

    def __init__(self, cluster: Cluster | None, workdir: Path, procs: ProcessSet | None = None):
        self.cluster = cluster
        self.workdir = Path(workdir)
        self.procs = procs

    @abstractmethod
    def prepare(self, cell: Cell) -> Target: ...

    @abstractmethod
    def verify(self, target: Target) -> dict[str, Any]:
        """Check the target is what the cell asked for; return the evidence, raise XcbError if not."""

    @abstractmethod
    def cleanup(self, target: Target) -> None: ...

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name}


def get_backend(name: str) -> type[Backend]:
    if name not in ("tmpfs", "cephfs", "rados"):
        raise XcbError(f"backend: unknown backend {name!r} (tmpfs, cephfs, rados)")
    mod = importlib.import_module(f"xcbench.backends.{name}")
    return mod.BACKEND
