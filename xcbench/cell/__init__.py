"""A cell: one point of a matrix. Produced by xcbench.matrix, consumed by backends, gateways,
probes, campaigns and the run. Fields may be added (with defaults); do not rename them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from xcbench.cell.layout import Layout
from xcbench.cell.protection import PoolSpec, Protection

__all__ = ["BACKENDS", "DIRECTIONS", "MODES", "SECURITY_MODES", "Cell", "Layout", "PoolSpec", "Protection"]

BACKENDS = ("tmpfs", "cephfs", "rados")
MODES = ("push", "tpc-root", "tpc-http")
SECURITY_MODES = ("none", "tls", "scitokens", "macaroons")  # how a gateway is reached
DIRECTIONS = ("write", "read", "mixed")  # into the gateway, out of it, both (campaign.read_fraction)
CHOICES = {"backend": BACKENDS, "mode": MODES, "direction": DIRECTIONS, "security": SECURITY_MODES}


@dataclass(frozen=True)
class Cell:
    id: str  # stable: hash of the settings below (not of label or source)
    label: str  # readable, e.g. "cephfs su=4M sc=1 os=4M ec2+1 o1 push"
    backend: str  # one of BACKENDS
    layout: Layout | None = None  # cephfs and rados
    pool: Protection | None = None  # cephfs and rados
    tmpfs_size: int | None = None  # tmpfs
    origins: int = 1  # data servers behind a cmsd redirector when > 1
    mode: str = "push"  # one of MODES
    concurrency: tuple[int, ...] = (4,)  # campaign levels run inside the cell
    file_size: int = 64 << 20  # mean file size of the campaign dataset
    files: int = 16  # files per campaign
    size_dist: str = "fixed"  # fixed | uniform | lognormal
    repeats: int = 1
    # the gateway's tunables (async, buffers, ceph.*, bind): the matrix's and the stored
    # settings' key "gateway" (settings()); a running gateway is an xcbench.gateway.Gateway
    gateway_settings: Mapping[str, Any] = field(default_factory=dict)
    probe: Mapping[str, Any] = field(default_factory=dict)  # fio: iodepth, numjobs, runtime, size
    campaign: Mapping[str, Any] = field(default_factory=dict)  # client, timeout, retries, checksum ...
    source: str = ""  # the matrix file it came from
    # dimensions added later: None = not set, left out of settings() so older ids stay stable
    streams: int | None = None  # parallel TCP streams per transfer (overrides campaign.streams)
    size_class: str | None = None  # small | medium | large (xcbench.cell.classes)
    size_scale: int | None = None  # size_class sizes divided by this (a small target)
    cores: float | None = None  # CPU quota of each origin (xrootd), cgroup cfs quota
    direction: str = "write"  # one of DIRECTIONS; "write" is left out of settings() (old ids)
    security: str = "none"  # one of SECURITY_MODES; "none" is left out of settings() (old ids)

    OPTIONAL = ("streams", "size_class", "size_scale", "cores")

    def settings(self) -> dict[str, Any]:
        """The settings the id is a hash of (JSON-able)."""
        from dataclasses import asdict
        d = asdict(self)
        for k in ("id", "label", "source"):
            d.pop(k)
        for k in self.OPTIONAL:
            if d[k] is None:
                d.pop(k)
        if d["direction"] == "write":
            d.pop("direction")
        if d["security"] == "none":
            d.pop("security")
        d["gateway"] = d.pop("gateway_settings")  # the name the ids and stored runs have
        return d

    def differs(self, other: Cell) -> list[str]:
        """The settings (settings()'s keys, sorted) in which ``other`` differs from this cell."""
        a, b = self.settings(), other.settings()
        return [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], *, id: str = "", label: str = "",
                      source: str = "") -> Cell:
        """The cell whose settings() these are (as a run's manifest stores them, JSON lists
        and all): settings() inverted. A key left out is the field's default, as settings()
        leaves it out; ValueError naming the field for one this cell has not, or of a wrong
        shape."""
        names = {f.name for f in fields(cls)} - {"id", "label", "source", "gateway_settings"}
        d = dict(settings)
        unknown = sorted(set(d) - names - {"gateway"})
        if unknown:
            raise ValueError(f"{unknown[0]}: not a setting of a cell")
        if "backend" not in d:
            raise ValueError("backend: missing")
        for key, allowed in CHOICES.items():
            if key in d and d[key] not in allowed:
                raise ValueError(f"{key}: {d[key]!r} is not one of {', '.join(allowed)}")
        for key, typed in (("layout", Layout.of), ("pool", Protection.parse)):
            if d.get(key) is not None:
                try:
                    d[key] = typed(d[key])
                except (AttributeError, KeyError, TypeError, ValueError) as e:
                    raise ValueError(f"{key}: {d[key]!r} is not a {key} ({e})") from None
        if "concurrency" in d:
            d["concurrency"] = tuple(d["concurrency"])
        if "gateway" in d:
            d["gateway_settings"] = d.pop("gateway")
        return cls(id=id, label=label, source=source, **d)
