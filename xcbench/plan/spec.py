"""Cluster and gateway specs (YAML or flags) and the planning assumptions, validated.

A cluster spec file (see xcbench/plan/examples/*.yaml)::

    name: tier1-hdd-ec8+3
    hosts: 40
    network:
      public:  {nics: 2, speed: 25Gb/s}
      cluster: {nics: 2, speed: 25Gb/s}   # optional; without it shard traffic shares the public NICs
    drives: {per_host: 24, kind: hdd, size: 18TB, iops: 200, bandwidth: 250MB/s}
    flash: {per_host: 2, size: 3.84TB}     # optional: BlueStore DB/WAL devices
    protection: ec8+3                      # or rep3, or {kind: erasure, k: 8, m: 3}
    write: {object_size: 4M, stripe_unit: 4M, op_size: 4M}
    failure_domain: host
    gateway: {...}                         # optional, same fields as a gateway spec

A bad spec is one XcbError line naming the file (or ``--set``) and the field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from xcbench.cell import SECURITY_MODES
from xcbench.cell.layout import Layout
from xcbench.cell.protection import Protection
from xcbench.errors import XcbError
from xcbench.figures.units import parse_capacity, parse_rate, parse_size
from xcbench.plan.published import parse_published
from xcbench.plan.reader import Reader, protection_of
from xcbench.system.userfiles import read_yaml

# a gateway host runs each origin as an xrootd of its own on a port of its own: more than this is
# a typo, not a plan
MAX_ORIGINS = 1024

@dataclass(frozen=True)
class ClusterSpec:
    name: str
    hosts: int
    nics: int
    nic_speed: float  # bytes/s per NIC (public network)
    cluster_nics: int  # 0 = replica/shard traffic shares the public NICs
    cluster_nic_speed: float
    drives_per_host: int
    drive_kind: str  # hdd | ssd | nvme
    drive_size: float  # bytes
    drive_iops: float  # write ops/s per drive
    drive_bandwidth: float  # write bytes/s per drive
    drive_read_iops: float
    drive_read_bandwidth: float
    flash_per_host: int
    flash_size: float
    protection: Protection
    object_size: int
    stripe_unit: int
    op_size: int  # bytes per client RADOS write op
    failure_domain: str = "host"
    source: str = ""
    drives_total: int = 0  # 0 = hosts x drives per host; else the spec'd cluster's data drives
    published: tuple = ()  # published figures of this cluster (xcbench.plan.published)
    description: str = ""

    @property
    def osds(self) -> int:
        return self.drives_total or self.hosts * self.drives_per_host

    @property
    def has_db_flash(self) -> bool:
        return self.drive_kind != "hdd" or self.flash_per_host > 0


@dataclass(frozen=True)
class GatewaySpec:
    nics: int = 2
    nic_speed: float = 25e9 / 8
    internal_nics: int = 0  # 0 = external and Ceph-side traffic share the NICs
    internal_nic_speed: float = 25e9 / 8
    cores: int = 32
    core_rate: float = 1e9  # bytes/s of transfer one core moves through xrootd
    checksum_rate: float = 2e9  # bytes/s of adler32 one core computes
    checksum: str = "on-the-fly"  # on-the-fly | read-back
    mode: str = "push"  # push | tpc
    security: str = "none"  # none | tls | scitokens | macaroons: the measured CPU/GB it sizes from
    origins_per_host: int = 1
    origin_rate: float = math.inf  # bytes/s one xrootd process moves (inf = not limiting)
    source: str = "defaults"


def _a(help: str, *, lo: float | None = None, hi: float | None = None,
       choices: tuple[str, ...] = ()) -> dict:
    return {"help": help, "lo": lo, "hi": hi, "choices": choices}


@dataclass(frozen=True)
class Assumptions:
    """Planning assumptions; each is a flag (``--nic-saturation 0.8``) and is printed in reports."""
    nic_saturation: float = field(default=0.7, metadata=_a(
        "fraction of NIC line rate a gateway or storage host is planned to carry", lo=0.01, hi=1))
    headroom: float = field(default=1.25, metadata=_a(
        "the target is multiplied by this before sizing (bursts, growth, degraded running)", lo=1))
    drive_utilisation: float = field(default=0.8, metadata=_a(
        "fraction of datasheet drive IOPS/bandwidth planned to be used (queueing beyond)", lo=0.01, hi=1))
    balance: float = field(default=0.95, metadata=_a(
        "mean/max OSD load: the busiest OSD sets the pace (upmap balancer: ~0.95)", lo=0.01, hi=1))
    cpu_utilisation: float = field(default=0.7, metadata=_a(
        "fraction of gateway cores planned to be busy", lo=0.01, hi=1))
    max_fill: float = field(default=0.8, metadata=_a(
        "fraction of usable capacity planned to be filled (Ceph nearfull is 0.85)", lo=0.01, hi=1))
    gateway_spares: int = field(default=1, metadata=_a(
        "gateways added beyond the rate-driven count (N+1 for a failed or drained host)", lo=0))
    metadata_ops_without_flash: float = field(default=1.0, metadata=_a(
        "extra HDD ops per shard write when BlueStore DB/WAL share the HDD (no flash)", lo=0))
    ops_per_file: float = field(default=3.0, metadata=_a(
        "client metadata ops per written file (create/lock, checksum xattr, close)", lo=0))
    drive_limits: str = field(default="auto", metadata=_a(
        "min: drive IOPS and bandwidth are separate ceilings; additive: an op's seek and transfer "
        "time add up (small/deferred writes); streaming: large shard writes go straight to "
        "sequentially allocated space, transfer time only; auto: for HDDs streaming when a shard "
        "write is >= --prefer-deferred-size, else additive; min for SSD/NVMe",
        choices=("auto", "min", "additive", "streaming")))
    prefer_deferred_size: int = field(default=65536, metadata=_a(
        "bytes: BlueStore defers (WAL) HDD writes smaller than this (bluestore_prefer_deferred_size_hdd, "
        "Ceph default 64 KiB)", lo=0))
    read_checksum: str = field(default="stored", metadata=_a(
        "source checksum of reads: stored (xattr) or read-back (the gateway reads the file again)",
        choices=("stored", "read-back")))
    tpc_cpu_factor: float = field(default=1.0, metadata=_a(
        "gateway CPU per byte in TPC mode relative to push (the gateway runs the transfer client)", lo=0.1))
    retention_years: float = field(default=1.0, metadata=_a(
        "years of the target's annual volume the cluster must hold", lo=0))

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        return [{"name": f.name, "flag": "--" + f.name.replace("_", "-"), "default": f.default,
                 **f.metadata} for f in fields(cls)]

    def check(self) -> Assumptions:
        for f in fields(self):
            v, md, flag = getattr(self, f.name), f.metadata, "--" + f.name.replace("_", "-")
            if md["choices"] and v not in md["choices"]:
                raise XcbError(f"{flag}: {v!r} is not one of {', '.join(md['choices'])}")
            if not md["choices"] and (not isinstance(v, (int, float)) or not math.isfinite(v)
                                      or (md["lo"] is not None and v < md["lo"])
                                      or (md["hi"] is not None and v > md["hi"])):
                rng = f"[{md['lo']}, {md['hi'] if md['hi'] is not None else 'inf'}]"
                raise XcbError(f"{flag}: {v!r} is outside {rng}")
        return self


def _nic(r: Reader, key: str, required: bool) -> tuple[int, float]:
    s = r.sub(key, required)
    if s is None:
        return 0, 0.0
    out = s.number("nics", integer=True, lo=1), s.conv("speed", parse_rate)
    s.done()
    return out


def cluster_from_dict(data: Any, source: str, overridden: frozenset = frozenset()) -> ClusterSpec:
    r = Reader(data, source, overridden=overridden)
    net = r.sub("network")
    assert net is not None  # required: sub() failed otherwise
    nics, speed = _nic(net, "public", True)
    cnics, cspeed = _nic(net, "cluster", False)
    net.done()
    d = r.sub("drives")
    assert d is not None  # required: sub() failed otherwise
    drive = dict(per_host=d.number("per_host", integer=True, lo=1),
                 kind=d.choice("kind", ("hdd", "ssd", "nvme"), "hdd"),
                 size=d.conv("size", parse_capacity), iops=d.number("iops", strict=True),
                 bw=d.conv("bandwidth", parse_rate))
    rd_iops = d.number("read_iops", None, strict=True)
    rd_bw = d.conv("read_bandwidth", parse_rate, None)
    total = d.number("total", 0, integer=True, lo=1)
    d.done()
    f = r.sub("flash", False)
    flash = (0, 0.0)
    if f is not None:
        flash = (f.number("per_host", integer=True), f.conv("size", parse_capacity, 0.0, positive=False))
        f.done()
    w = r.sub("write", False) or Reader({}, source, "write", overridden)
    obj = w.conv("object_size", parse_size, 4 << 20)
    su = w.conv("stripe_unit", parse_size, obj)
    op = w.conv("op_size", parse_size, su)
    for fieldname, why in Layout(su, 1, obj).problems():
        w.fail(fieldname, why)
    w.done()
    prot = protection_of(r)
    hosts = r.number("hosts", integer=True, lo=1)
    fd = r.choice("failure_domain", ("host", "osd"), "host")
    if fd == "host" and prot.shards > hosts:
        r.fail("protection", f"{prot.label} puts {prot.shards} shards on distinct hosts but the "
                             f"spec has hosts: {hosts} (add hosts or use failure_domain: osd)")
    if fd == "osd" and prot.shards > hosts * drive["per_host"]:
        r.fail("protection", f"{prot.label} needs {prot.shards} OSDs, the spec has "
                             f"{hosts * drive['per_host']}")
    name = r.raw("name", Path(source).stem if source not in ("", "--set") else "cluster")
    r.raw("gateway", None)  # read by gateway_from_dict
    desc = str(r.raw("description", ""))
    pub = parse_published(r.raw("published", None), r)
    r.done()
    return ClusterSpec(
        name=str(name), hosts=hosts, nics=nics, nic_speed=speed, cluster_nics=cnics,
        cluster_nic_speed=cspeed, drives_per_host=drive["per_host"], drive_kind=drive["kind"],
        drive_size=drive["size"], drive_iops=drive["iops"], drive_bandwidth=drive["bw"],
        drive_read_iops=rd_iops or drive["iops"], drive_read_bandwidth=rd_bw or drive["bw"],
        flash_per_host=flash[0], flash_size=flash[1], protection=prot, object_size=obj,
        stripe_unit=su, op_size=op, failure_domain=fd, source=source, drives_total=total,
        published=pub, description=desc)


def gateway_from_dict(data: Any, source: str, overridden: frozenset = frozenset(),
                      path: str = "") -> GatewaySpec:
    r = Reader(data or {}, source, path, overridden)
    d = GatewaySpec()
    internal = r.sub("internal", False)
    inics, ispeed = 0, d.internal_nic_speed
    if internal is not None:
        inics, ispeed = internal.number("nics", integer=True, lo=1), internal.conv("speed", parse_rate)
        internal.done()
    out = GatewaySpec(
        nics=r.number("nics", d.nics, integer=True, lo=1),
        nic_speed=r.conv("speed", parse_rate, d.nic_speed),
        internal_nics=inics, internal_nic_speed=ispeed,
        cores=r.number("cores", d.cores, integer=True, lo=1),
        core_rate=r.conv("core_rate", parse_rate, d.core_rate),
        checksum_rate=r.conv("checksum_rate", parse_rate, d.checksum_rate),
        checksum=r.choice("checksum", ("on-the-fly", "read-back"), d.checksum),
        mode=r.choice("mode", ("push", "tpc"), d.mode),
        security=r.choice("security", SECURITY_MODES, d.security),
        origins_per_host=r.number("origins_per_host", d.origins_per_host, integer=True, lo=1,
                                  hi=MAX_ORIGINS),
        origin_rate=r.conv("origin_rate", parse_rate, d.origin_rate),
        source=source)
    r.done()
    return out


# --- files and --set overrides ---------------------------------------------------------------

def load_yaml(path: str | Path) -> dict:
    p = Path(path)
    data = read_yaml(p)
    if not isinstance(data, dict):
        raise XcbError(f"{p}: (top): must be a mapping of fields")
    return data


def apply_sets(data: dict, sets: Sequence[str], section: str) -> tuple[dict, frozenset]:
    """Apply ``--set section.a.b=value`` items to a copy of ``data``; returns (data, paths set)."""
    import copy
    out, paths = copy.deepcopy(data), set()
    for item in sets or ():
        key, eq, value = item.partition("=")
        if not eq or "." not in key:
            raise XcbError(f"--set {item!r}: write section.field=value, e.g. cluster.hosts=20")
        head, rest = key.split(".", 1)
        if head not in ("cluster", "gateway"):
            raise XcbError(f"--set {item!r}: the section is cluster or gateway, not {head!r}")
        if head != section:
            continue
        node = out
        parts = rest.split(".")
        for p in parts[:-1]:
            if not isinstance(node.get(p), dict):
                node[p] = {}
            node = node[p]
        node[parts[-1]] = yaml.safe_load(value) if value.strip() else None
        paths.add(rest)
    return out, frozenset(paths)


def load_cluster(path: str | Path | None, sets: Sequence[str] = ()) -> tuple[ClusterSpec, dict]:
    """(ClusterSpec, the raw gateway section or {}) from a file (default: the example Tier-1 spec)."""
    if path is None:
        path = example_path("tier1-hdd-ec8+3")
    data = load_yaml(path)
    data, paths = apply_sets(data, sets, "cluster")
    gw = data.get("gateway") or {}
    return cluster_from_dict(data, str(path), paths), gw


def load_gateway(path: str | Path | None, embedded: dict | None, embedded_source: str,
                 sets: Sequence[str] = ()) -> GatewaySpec:
    if path is not None:
        data, source, prefix = load_yaml(path), str(path), ""
        if set(data) == {"gateway"}:
            data, prefix = data["gateway"], "gateway"
    else:
        data, source, prefix = dict(embedded or {}), embedded_source, "gateway"
    data, paths = apply_sets(data or {}, sets, "gateway")
    return gateway_from_dict(data, source, frozenset(f"{prefix}.{p}" if prefix else p for p in paths),
                             path=prefix)


def example_path(name: str) -> Path:
    from importlib import resources
    p = Path(str(resources.files("xcbench.plan").joinpath("examples", f"{name}.yaml")))
    if not p.exists():
        raise XcbError(f"no example spec {name!r} in xcbench/plan/examples/")
    return p


def examples() -> list[str]:
    from importlib import resources
    d = Path(str(resources.files("xcbench.plan").joinpath("examples")))
    return sorted(p.stem for p in d.glob("*.yaml"))
