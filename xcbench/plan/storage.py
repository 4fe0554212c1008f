"""Storage model: what a Ceph cluster spec can sustain for a given external load.

Load. The gateways turn each external byte into ``W`` bytes written to and ``R`` bytes read from
Ceph (W = write fraction; R = read fraction, plus the checksum read-back when the gateway
computes the checksum after the write). Every ceiling below is in *external* bytes/s.

Data protection p (replication r, or EC k+m):
- raw bytes per byte written  a = r, or (k+m)/k (or the measured pool_raw/pool_stored ratio);
- shards per write op         r, or k+m;        per read op: 1, or k;
- primary fan-out per byte written  r-1, or (k+m-1)/k  (to the other OSDs, over the network);
- primary fan-in per byte read      0,   or (k-1)/k    (gathering data shards).
The client talks only to the primary OSD; shards sit on distinct hosts (failure domain host).

Ceilings (the smallest binds):
- network: every host NIC is full duplex; with one (public) network a host's ingress carries
  the client bytes *and* the fan-out, in = W(1+fan-out) + R fan-in, out = W fan-out + R(1+fan-in);
  with a separate cluster network the public one carries W in / R out and the cluster one the
  fan-out/fan-in. ceiling = hosts x NICs x speed / bytes per external byte.
- drive bandwidth: disk bytes per external byte = W a + R;
  ceiling = OSDs / (W a / bw_write + R / bw_read).
- drive IOPS: a file of F bytes is ceil(F / op_size) client ops (+ metadata ops per file on
  write); each write op costs (shards x ops per shard write) drive ops, each read op k (EC) or 1;
  an HDD without flash for BlueStore's DB/WAL pays extra ops per shard write.
  ceiling = OSDs / (write drive ops / iops_write + read drive ops / iops_read).
HDD write paths (--drive-limits auto picks one per plan and says which and why; write_path()):
- streaming: a shard write of at least bluestore_prefer_deferred_size_hdd (Ceph default 64 KiB;
  --prefer-deferred-size) goes directly to newly allocated space; on a fresh HDD the allocator hands
  out space in order, so concurrent shard writes land next to each other and cost transfer time
  only, no seek per op. The metadata commit goes to the DB/WAL flash; without flash it lands on
  the same HDD (--metadata-ops-without-flash seeks per shard write).
- additive (small writes): a shard write below that size is deferred: BlueStore logs it in the WAL
  (on flash if there is some, else on the HDD: its bytes are written twice) and later applies it
  in place, a random write: its seek and its transfer take the same head, so drive-seconds add
  up: one "drives" ceiling = OSDs / (IOPS term + bandwidth term). Reads are costed this way too
  (shards of different objects are not adjacent on disk).
SSD/NVMe have no head: IOPS and bandwidth are separate ceilings (min).
Shard size: op_size / k for EC (each of the k+m OSDs gets one contiguous op/k piece), op_size
for replication.
Failure domain osd on few hosts: ~1/hosts of the other shards stay on the primary's host and
never reach a NIC, so the network fan-out/fan-in is scaled by (hosts - 1) / hosts.
Datasheet ceilings are derated (NIC saturation; drive utilisation x balance); measured numbers
are used as measured; an efficiency carried over from another cluster replaces the derates.
Everything scales linearly with hosts, which gives hosts (and OSDs) needed for a rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xcbench.figures.units import Figure, fmt_capacity, fmt_rate
from xcbench.plan.spec import Assumptions, ClusterSpec


@dataclass
class StorageInputs:
    """The numbers a calibration may replace (defaults: the spec's datasheet)."""
    label: str = "datasheet"
    drive_iops: float | None = None
    drive_read_iops: float | None = None
    drive_bandwidth: float | None = None
    drive_read_bandwidth: float | None = None
    amplification: float | None = None  # raw/logical for the disk bytes per byte written
    capacity_amplification: float | None = None  # raw/logical for usable capacity
    ops_per_shard_write: float | None = None
    measured_drives: bool = False  # measured per-OSD numbers: no datasheet derate
    efficiency: float | None = None  # achieved/theoretical carried over: replaces the derates
    chain: dict | None = None  # achieved, achieved_from, dev_theoretical, dev, because
    notes: list[str] = field(default_factory=list)


@dataclass
class StorageResult:
    label: str
    figures: list[Figure]
    ceilings: list[dict]  # resource, theoretical, derate, usable (external bytes/s)
    theoretical: float
    usable: float
    binding: str
    per_host: float  # usable external bytes/s per host
    usable_capacity: float
    min_hosts: int
    notes: list[str]
    write_path: dict = field(default_factory=dict)
    network_theoretical: float = math.inf  # the lowest network ceiling at line rate

    def fig(self, key: str) -> Figure:
        return next(f for f in self.figures if f.key == key)

    def hosts_for_rate(self, rate: float, headroom: float) -> int:
        return max(self.min_hosts, ceil_count(rate * headroom / self.per_host))

    def hosts_for_volume(self, volume: float, hosts: int) -> int:
        return max(self.min_hosts, ceil_count(volume / (self.usable_capacity / hosts)))


def ceil_count(x: float) -> int:
    """ceil that forgives float noise (10.000000000001 -> 10)."""
    if not math.isfinite(x):
        return 0 if x < 0 else 10 ** 9
    return max(0, math.ceil(x - 1e-9 * max(1.0, abs(x))))


def shard_write_size(spec: ClusterSpec) -> int:
    """Bytes one OSD writes per client write op: op/k for EC, the op for replication."""
    p = spec.protection
    return max(1, spec.op_size // p.k) if p.kind == "erasure" else spec.op_size


def write_path(spec: ClusterSpec, a: Assumptions) -> dict:
    """Which drive model applies to writes, and why (printed in every plan)."""
    shard, thr = shard_write_size(spec), a.prefer_deferred_size
    flash = spec.has_db_flash
    where = "DB/WAL on flash" if flash else "DB/WAL on the HDD itself (no flash)"
    if a.drive_limits != "auto":
        model = a.drive_limits
        why = f"--drive-limits {model} (chosen, not derived)"
    elif spec.drive_kind != "hdd":
        model, why = "min", f"{spec.drive_kind}: no head, IOPS and bandwidth are separate limits"
    elif shard >= thr:
        model = "streaming"
        why = (f"shard writes of {_kib(shard)} >= bluestore_prefer_deferred_size_hdd {_kib(thr)}: "
               "BlueStore writes them directly to newly allocated, sequential space (no seek per "
               f"op); {where}")
    else:
        model = "additive"
        why = (f"shard writes of {_kib(shard)} < bluestore_prefer_deferred_size_hdd {_kib(thr)}: "
               f"deferred through the WAL ({'flash' if flash else 'on the HDD: bytes written twice'}), "
               "then applied in place, a random write: seek + transfer add up")
    deferred = model == "additive" and shard < thr and spec.drive_kind == "hdd"
    return {"model": model, "shard_size": shard, "prefer_deferred_size": thr, "db_flash": flash,
            "deferred": deferred, "why": why}


def _kib(n: int) -> str:
    return f"{n / 1024:g} KiB" if n < (1 << 20) else f"{n / (1 << 20):g} MiB"


def remote_share(spec: ClusterSpec) -> float:
    """Share of the other shards that sit on another host (and so cross a NIC)."""
    if spec.failure_domain == "host":
        return 1.0
    return (spec.hosts - 1) / spec.hosts


def storage_model(spec: ClusterSpec, W: float, R: float, file_size: int, a: Assumptions,
                  inp: StorageInputs | None = None) -> StorageResult:
    inp = inp or StorageInputs()
    p = spec.protection
    notes = list(inp.notes)
    figs: list[Figure] = []

    def add(key, label, value, unit, formula, **inputs):
        figs.append(Figure(key, label, value, unit, formula, {k: str(v) for k, v in inputs.items()}))
        return value

    if spec.drives_total:
        osds = add("osds", "OSDs (one per data drive)", spec.osds, "count", "drives.total of the spec",
                   total=spec.drives_total, hosts=spec.hosts)
    else:
        osds = add("osds", "OSDs (one per data drive)", spec.osds, "count", "hosts x drives per host",
                   hosts=spec.hosts, drives_per_host=spec.drives_per_host)
    iops_w = inp.drive_iops or spec.drive_iops
    iops_r = inp.drive_read_iops or spec.drive_read_iops
    bw_w = inp.drive_bandwidth or spec.drive_bandwidth
    bw_r = inp.drive_read_bandwidth or spec.drive_read_bandwidth
    amp = inp.amplification or p.raw_ratio
    wp = write_path(spec, a)
    meta_seeks = 0.0 if spec.has_db_flash else a.metadata_ops_without_flash
    if inp.ops_per_shard_write is not None:
        opsw = inp.ops_per_shard_write
        meta_seeks = opsw - 1.0
    else:
        opsw = 1.0 + meta_seeks
        if not spec.has_db_flash:
            notes.append(f"HDDs without DB/WAL flash: {opsw:g} drive ops per small shard write "
                         f"(--metadata-ops-without-flash {a.metadata_ops_without_flash:g})")
    notes.append(f"write model: {wp['model']} -- {wp['why']}")
    src = "measured per OSD" if inp.measured_drives else "datasheet"
    raw_iops = add("raw_iops", "raw drive write IOPS", osds * iops_w, "ops", "OSDs x write IOPS per drive",
                   OSDs=osds, iops_per_drive=f"{iops_w:,.0f} ({src})")
    add("client_write_ops", "client write ops/s after protection", raw_iops / (p.shards * opsw), "ops",
        "raw IOPS / (shards per op x drive ops per shard write)", raw_iops=f"{raw_iops:,.0f}",
        shards=f"{p.shards} ({p.label})", ops_per_shard_write=f"{opsw:g}")
    add("raw_bandwidth", "raw drive write bandwidth", osds * bw_w, "rate",
                 "OSDs x write bandwidth per drive", OSDs=osds, bandwidth_per_drive=f"{fmt_rate(bw_w)} ({src})")
    raw_cap = add("raw_capacity", "raw capacity", osds * spec.drive_size, "capacity", "OSDs x drive size",
                  OSDs=osds, drive_size=fmt_capacity(spec.drive_size))
    camp = inp.capacity_amplification or amp
    usable_cap = add("usable_capacity", "usable capacity", raw_cap / camp * a.max_fill, "capacity",
                     "raw capacity / raw-per-logical x max fill", raw_capacity=fmt_capacity(raw_cap),
                     raw_per_logical=f"{camp:.4g}", max_fill=f"{a.max_fill:g} (--max-fill)")
    if spec.drive_kind == "hdd" and spec.flash_per_host:
        ratio = spec.flash_per_host * spec.flash_size / (spec.drives_per_host * spec.drive_size)
        if ratio < 0.01:
            notes.append(f"DB/WAL flash is {ratio:.2%} of HDD capacity per host: below ~1 % RocksDB "
                         "spills onto the HDDs and the 'flash' benefit shrinks")

    # network
    share = remote_share(spec)
    fo, fi = p.fanout_write * share, p.fanin_read * share
    if share < 1.0:
        notes.append(f"failure domain osd on {spec.hosts} host(s): {share:.3g} of the other shards "
                     "are on another host; fan-out and fan-in scaled by it")
    ceilings: list[dict] = []
    pub_cap = spec.hosts * spec.nics * spec.nic_speed
    net_derate = inp.efficiency or a.nic_saturation
    io = f"W={W:.3g} R={R:.3g}"
    if spec.cluster_nics == 0:
        lin, lout = W * (1 + fo) + R * fi, W * fo + R * (1 + fi)
        ceilings += [
            _ceil("network in (public, shared)", pub_cap, lin, net_derate,
                  "hosts x NICs x speed / (W(1+fan-out) + R fan-in)", io, fo, fi),
            _ceil("network out (public, shared)", pub_cap, lout, net_derate,
                  "hosts x NICs x speed / (W fan-out + R(1+fan-in))", io, fo, fi)]
    else:
        cl_cap = spec.hosts * spec.cluster_nics * spec.cluster_nic_speed
        ceilings += [
            _ceil("public network in", pub_cap, W, net_derate, "hosts x NICs x speed / W", io, fo, fi),
            _ceil("public network out", pub_cap, R, net_derate, "hosts x NICs x speed / R", io, fo, fi),
            _ceil("cluster network", cl_cap, W * fo + R * fi, net_derate,
                  "hosts x cluster NICs x speed / (W fan-out + R fan-in)", io, fo, fi)]
    # drives
    drive_derate = inp.efficiency or (1.0 if inp.measured_drives else a.drive_utilisation * a.balance)
    n_ops = math.ceil(file_size / spec.op_size)
    w_ops = W * (n_ops + a.ops_per_file) / file_size * p.shards * opsw
    r_ops = R * n_ops / file_size * p.read_shards
    t_iops = w_ops / iops_w + r_ops / iops_r  # drive-seconds per external byte
    wal_copy = 2.0 if wp["deferred"] and not spec.has_db_flash else 1.0
    t_bw = W * amp * wal_copy / bw_w + R / bw_r
    # streaming: the data write costs no seek; what still seeks is the metadata commit when it
    # lands on the HDD (no flash) and the per-file metadata ops; reads stay seek + transfer
    s_ops = (W * (n_ops * meta_seeks + a.ops_per_file * opsw) / file_size * p.shards / iops_w
             + r_ops / iops_r)
    ops_txt = (f"ceil(F/op)={n_ops} (F={file_size}, op={spec.op_size}); metadata ops/file="
               f"{a.ops_per_file:g}; shards={p.shards}; ops/shard write={opsw:g}; read shards={p.read_shards}")
    iops_c = _ceil("drive IOPS", osds, t_iops, drive_derate,
                   "OSDs / (W (ceil(F/op)+meta)/F x shards x ops per shard / iops_w + "
                   "R ceil(F/op)/F x read shards / iops_r)", io, fo, fi, ops=ops_txt,
                   iops=f"write {iops_w:,.0f}, read {iops_r:,.0f} per drive ({src})")
    bw_c = _ceil("drive bandwidth", osds, t_bw, drive_derate,
                 "OSDs / (W a / bw_w + R / bw_r)", io, fo, fi, a=f"{amp:.4g}",
                 bandwidth=f"write {fmt_rate(bw_w)}, read {fmt_rate(bw_r)} per drive ({src})")
    if wp["model"] == "streaming":
        both = _ceil("drives (streaming: transfer + metadata seeks)", osds, t_bw + s_ops, drive_derate,
                     "OSDs / (W a / bw_w [sequential transfer] + metadata seeks / iops_w + reads "
                     "(seek + transfer))", io, fo, fi,
                     ops=f"ceil(F/op)={n_ops}; metadata seeks per shard write={meta_seeks:g}; metadata "
                         f"ops/file={a.ops_per_file:g} x {opsw:g}; shards={p.shards}",
                     a=f"{amp:.4g}", iops=iops_c["inputs"]["iops"], bandwidth=bw_c["inputs"]["bandwidth"])
        ceilings.append(both)
        notes.append(f"streaming writes: a seek per op is not charged; the additive model (seek + "
                     f"transfer per shard write) would give {fmt_rate(osds / (t_iops + t_bw) * drive_derate)} "
                     "usable -- it applies to small writes below --prefer-deferred-size")
    elif wp["model"] == "additive":
        both = _ceil("drives (IOPS + bandwidth time)", osds, t_iops + t_bw, drive_derate,
                     "OSDs / (drive-seconds per byte for ops [IOPS term] + for transfer [bandwidth term])",
                     io, fo, fi, ops=ops_txt, a=f"{amp:.4g}", iops=iops_c["inputs"]["iops"],
                     bandwidth=bw_c["inputs"]["bandwidth"])
        ceilings.append(both)
        notes.append(f"drive IOPS and bandwidth time add up per op (--drive-limits {a.drive_limits}, "
                     f"{spec.drive_kind}); IOPS alone: {fmt_rate(iops_c['usable'])}, bandwidth alone: "
                     f"{fmt_rate(bw_c['usable'])}" + ("; deferred writes without flash: bytes written "
                                                      "twice (WAL + in place)" if wal_copy > 1 else ""))
    else:
        ceilings += [iops_c, bw_c]
    for c in ceilings:
        if inp.efficiency:
            c["derate_source"] = "carried-over efficiency"
        elif c["resource"].startswith(("drive", "drives")):
            c["derate_source"] = "measured" if inp.measured_drives else "--drive-utilisation x --balance"
        else:
            c["derate_source"] = "--nic-saturation"
    bind = min(ceilings, key=lambda c: c["usable"])
    theo = min(c["theoretical"] for c in ceilings)
    if inp.efficiency:
        notes.append(f"efficiency {inp.efficiency:.3f} carried over: usable = theoretical x efficiency")
    add("theoretical_rate", "theoretical ceiling (line rate, no derate)", theo, "rate",
        "min over ceilings", binding=min(ceilings, key=lambda c: c["theoretical"])["resource"])
    add("usable_rate", "usable rate (planned)", bind["usable"], "rate",
        "min over ceilings of theoretical x derate", binding=bind["resource"])
    per_host = add("usable_rate_per_host", "usable rate per host", bind["usable"] / spec.hosts, "rate",
                   "usable rate / hosts", hosts=spec.hosts)
    min_hosts = p.shards if spec.failure_domain == "host" else math.ceil(p.shards / spec.drives_per_host)
    net_theo = min((c["theoretical"] for c in ceilings if "network" in c["resource"]), default=math.inf)
    return StorageResult(inp.label, figs, ceilings, theo, bind["usable"], bind["resource"], per_host,
                         usable_cap, min_hosts, notes, wp, net_theo)


def _ceil(resource: str, capacity: float, per_byte: float, derate: float, formula: str, io: str,
          fo: float, fi: float, **more: str) -> dict:
    theo = capacity / per_byte if per_byte > 0 else math.inf
    inputs = {"load": io, "fan-out": f"{fo:.4g}", "fan-in": f"{fi:.4g}", **more}
    if resource.startswith(("network", "public", "cluster")):
        inputs["capacity"] = fmt_rate(capacity)
    return {"resource": resource, "theoretical": theo, "derate": derate, "usable": theo * derate,
            "per_byte": per_byte, "formula": formula, "inputs": inputs}
