"""A cell: one point of a matrix. Produced by xcbench.matrix, consumed by backends, gateways,
probes, campaigns and the run. Fields may be added (with defaults); do not rename them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BACKENDS = ("tmpfs", "cephfs", "rados")
MODES = ("push", "tpc-root", "tpc-http")


@dataclass(frozen=True)
class Layout:
    """CephFS dir layout, or the XrdCeph striper (stripe_count = nb_stripes). Bytes."""
    stripe_unit: int
    stripe_count: int
    object_size: int


@dataclass(frozen=True)
class PoolSpec:
    """A pool as the matrix asks for it; ``name`` is the Ceph pool xcbench creates/uses."""
    kind: str  # "replicated" | "erasure"
    size: int = 1  # replicated copies
    k: int = 0
    m: int = 0

    @property
    def name(self) -> str:
        return f"xcb-rep{self.size}" if self.kind == "replicated" else f"xcb-ec{self.k}-{self.m}"

    @property
    def profile(self) -> str | None:
        """EC profile name (erasure pools only)."""
        return f"xcb-ec{self.k}-{self.m}" if self.kind == "erasure" else None

    @property
    def raw_ratio(self) -> float:
        """Raw bytes written per logical byte, by construction."""
        return float(self.size) if self.kind == "replicated" else (self.k + self.m) / self.k

    @property
    def label(self) -> str:
        return f"rep{self.size}" if self.kind == "replicated" else f"ec{self.k}+{self.m}"


@dataclass(frozen=True)
class Cell:
    id: str  # stable: hash of the settings below (not of label or source)
    label: str  # readable, e.g. "cephfs su=4M sc=1 os=4M ec2+1 o1 push"
    backend: str  # one of BACKENDS
    layout: Layout | None = None  # cephfs and rados
    pool: PoolSpec | None = None  # cephfs and rados
    tmpfs_size: int | None = None  # tmpfs
    origins: int = 1  # data servers behind a cmsd redirector when > 1
    mode: str = "push"  # one of MODES
    concurrency: tuple[int, ...] = (4,)  # campaign levels run inside the cell
    file_size: int = 64 << 20  # mean file size of the campaign dataset
    files: int = 16  # files per campaign
    size_dist: str = "fixed"  # fixed | uniform | lognormal
    repeats: int = 1
    gateway: Mapping[str, Any] = field(default_factory=dict)  # tunables (async, buffers, ceph.*)
    probe: Mapping[str, Any] = field(default_factory=dict)  # fio: iodepth, numjobs, runtime, size
    campaign: Mapping[str, Any] = field(default_factory=dict)  # client, timeout, retries, checksum ...
    source: str = ""  # the matrix file it came from

    def settings(self) -> dict[str, Any]:
        """The settings the id is a hash of (JSON-able)."""
        from dataclasses import asdict
        d = asdict(self)
        for k in ("id", "label", "source"):
            d.pop(k)
        return d
