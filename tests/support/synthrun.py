"""Synthetic but realistic run directories, with a known bottleneck per cell.

A cell's chain rate at concurrency c is min(c x per_stream, gateway, 0.95 x fio bandwidth,
0.95 x fio IOPS x stripe unit, 0.95 x network) x ec_factor (optionally with idle gaps on the
client between transfers); the generator then writes what a real run would hold: transfers
(FTS fields, slot scheduling with a ramp-up, lognormal noise, a few failures), 1 s timelines,
campaigns, fio probes, telemetry samples with the telemetry engineer's metric names
(proc.cpu_seconds.rate, cpu.busy, pool.client_write_ops_per_s, pool.bytes_used, pool.stored,
...), an iperf3 baseline, findings and a gap, and a manifest with settings and fingerprints.

    from tests.support.synthrun import make_run, mixed_cells
    run_path, truth = make_run(tmp_path, mixed_cells())   # truth: {cell_id: verdict at top level}

The plan engineer may reuse it: ``make_run(store, cells, ...)`` returns (path, truth).
``write="store"`` goes through RunDir.append + finalize (the real path); ``write="parquet"``
writes the Parquet files directly (fast, for the 1 M-row benchmark).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.matrix import cell_id as _cell_id
from xcbench.store.rundir import RunDir

MIB, GIB = float(1 << 20), float(1 << 30)
T0 = 1_760_000_000.0  # run start (epoch s)
CORES = 8


@dataclass
class SynthCell:
    backend: str
    layout: tuple[int, int, int] | None = None  # stripe_unit, stripe_count, object_size
    pool: str | None = None  # rep1 | rep3 | ec2+1 | ec4+2
    mode: str = "push"
    origins: int = 1
    concurrency: tuple[int, ...] = (1, 2, 4, 8)
    files: int = 48
    file_size: int = 256 << 20
    repeats: int = 2
    per_stream: float = 200 * MIB  # one transfer's rate when nothing else limits
    gateway: float = 1.0 * GIB  # gateway capacity (CPU-bound at it)
    fio_bw: float | None = None  # fio write ceiling of the layout/pool
    fio_iops: float | None = None  # fio write IOPS capacity
    iops_bs: int = 4096  # the IOPS job's block size: ops of about this size run at fio_iops
    ec_factor: float = 1.0  # extra EC slowdown on top of the min()
    client_gap: float = 0.0  # client idle seconds between two transfers of a slot
    raw_ratio: float | None = None  # measured raw/logical (defaults to the pool's)
    fail_rate: float = 0.01
    expect: str | None = None  # the verdict the attribution must give at the top level
    # more of the cell's fields (cores, streams, size_class, size_scale, direction, security,
    # gateway_settings, campaign): the cell is then named as a matrix names it
    cell_fields: dict[str, Any] = field(default_factory=dict)
    # role telemetry (RoleSampler rows): role -> (cores busy at the cell's peak rate, CPU limit in
    # cores or None for unknown, the limit's source); the host's busy CPU is then their sum + 0.1
    roles: dict[str, tuple[float, float | None, str]] | None = None

    def cell(self) -> Cell:
        lay = Layout(*self.layout) if self.layout else None
        pool = None
        if self.pool:
            if self.pool.startswith("rep"):
                pool = PoolSpec("replicated", size=int(self.pool[3:]))
            else:
                k, m = self.pool[2:].split("+")
                pool = PoolSpec("erasure", k=int(k), m=int(m))
        c = Cell(id="x", label="x", backend=self.backend, layout=lay, pool=pool,
                 tmpfs_size=(1 << 30) if self.backend == "tmpfs" else None, origins=self.origins,
                 mode=self.mode, concurrency=tuple(self.concurrency), file_size=self.file_size,
                 files=self.files, repeats=self.repeats, source="synthetic.yaml")
        parts = [self.backend]
        if lay:
            parts.append(lay.label)
        if pool:
            parts.append(pool.label)
        parts += [f"o{self.origins}", self.mode]
        from dataclasses import replace
        if self.cell_fields:
            from xcbench.matrix.expand import _finish
            return _finish(replace(c, **self.cell_fields))
        return replace(c, id=_cell_id(c.settings()), label=" ".join(parts))

    def rate(self, c: int, network: float) -> float:
        caps = [c * self.per_stream, self.gateway, 0.95 * network]
        if self.fio_bw:
            caps.append(0.95 * self.fio_bw)
        if self.fio_iops and self.layout:
            caps.append(0.95 * self.fio_iops * self.layout[0])
        return min(caps) * self.ec_factor


def mixed_cells() -> list[SynthCell]:
    """One cell per verdict the generator can construct (network needs its own run)."""
    M4 = 4 << 20
    return [
        # the gateway ceiling itself: CPU-saturated at 8 transfers
        SynthCell("tmpfs", expect="gateway"),
        # storage fast and plentiful: the chain runs into the same gateway limit
        SynthCell("cephfs", (M4, 1, M4), "rep3", fio_bw=6 * GIB, fio_iops=20000, expect="gateway"),
        # fio ceiling 800 MiB/s under the gateway's 1 GiB/s
        SynthCell("cephfs", (M4, 1, M4), "rep1", fio_bw=800 * MIB, fio_iops=2200,
                  expect="storage-bandwidth"),
        # EC 2+1 of the same layout: 0.6 x the gateway-limited rate, ~80 % of rep1; fio on the
        # EC pool allows far more, so the cost is EC's, not the disks' bandwidth
        SynthCell("cephfs", (M4, 1, M4), "ec2+1", fio_bw=1.5 * GIB, fio_iops=900, ec_factor=0.6,
                  raw_ratio=1.52, expect="ec-overhead"),
        # 64 KiB stripe unit: one op per 64 KiB, the pool sits at its IOPS capacity
        # (fio's IOPS job moves 64 KiB an IO: the same IO size as the chain's ops)
        SynthCell("rados", (64 << 10, 1, M4), "rep1", fio_bw=450 * MIB, fio_iops=2200,
                  iops_bs=64 << 10, file_size=64 << 20, expect="storage-iops"),
        # client idles 1.5 s between transfers of a slot: slots free while files are queued
        SynthCell("rados", (M4, 1, M4), "rep3", fio_bw=5 * GIB, fio_iops=20000, client_gap=1.5,
                  file_size=64 << 20, expect="client"),
        # slow per-transfer rate, nothing near a ceiling, no idle slots, flat in concurrency
        SynthCell("cephfs", (M4, 2, 8 << 20), "rep3", fio_bw=5 * GIB, fio_iops=20000,
                  per_stream=20 * MIB, concurrency=(8,), files=64, file_size=64 << 20,
                  expect="inconclusive"),
    ]


HOST8 = "host cores (8; no CFS quota or cpuset below them)"


def _cg(role: str, quota: int) -> str:
    return f"cgroup v1 cpu.cfs_quota_us={quota}/100000 at /sys/fs/cgroup/cpu/xcb-synth-{role}"


def role_cells() -> list[SynthCell]:
    """One cell per role rule: a role at its cgroup limit, or the shared host's CPU running out."""
    M4 = 4 << 20
    gw = {"gateway": (0.25, 0.25, _cg("gateway", 25000)), "client": (0.3, 8.0, HOST8)}
    return [
        # a quarter-core gateway on tmpfs: the gateway's limit, in a tmpfs cell too
        SynthCell("tmpfs", gateway=0.3 * GIB, roles=gw, expect="gateway"),
        # the same capped gateway on CephFS with plenty of storage
        SynthCell("cephfs", (M4, 1, M4), "rep3", gateway=0.3 * GIB, fio_bw=6 * GIB, fio_iops=20000,
                  roles={**gw, "osd": (0.5, 8.0, HOST8)}, expect="gateway"),
        # the driver capped at half a core: client
        SynthCell("rados", (M4, 1, M4), "rep3", gateway=4 * GIB, per_stream=40 * MIB, fio_bw=5 * GIB,
                  fio_iops=20000, file_size=64 << 20,
                  roles={"client": (0.5, 0.5, _cg("client", 50000)), "gateway": (0.4, 8.0, HOST8)},
                  expect="client"),
        # OSDs capped at one core: storage, bandwidth by the probe figures
        SynthCell("cephfs", (M4, 1, M4), "rep1", gateway=4 * GIB, fio_bw=200 * MIB, fio_iops=20000,
                  roles={"osd": (1.0, 1.0, _cg("osd", 100000)), "gateway": (0.3, 8.0, HOST8)},
                  expect="storage-bandwidth"),
        # nothing capped, everything on one 8-core box that is 97 % busy: host-cpu
        SynthCell("cephfs", (M4, 2, 8 << 20), "rep3", fio_bw=5 * GIB, fio_iops=20000,
                  per_stream=20 * MIB, concurrency=(8,), files=64, file_size=64 << 20,
                  roles={"gateway": (3.0, 8.0, HOST8), "client": (2.5, 8.0, HOST8),
                         "osd": (1.5, 8.0, HOST8), "mount": (0.4, 8.0, HOST8),
                         "mds": (0.3, None, "unknown (cannot read /proc/77/cgroup: PermissionError)")},
                  expect="host-cpu"),
    ]


def _schedule(rng, n: int, c: int, size: np.ndarray, slot_rate: float, gap: float, t0: float):
    """Start/finish of n transfers on c slots (file i on slot i % c), ramp-up 0.25 s/slot."""
    dur = size / slot_rate * rng.lognormal(0.0, 0.06, n)
    slot = np.arange(n) % c
    busy = dur + gap
    order = np.lexsort((np.arange(n), slot))
    cum = pd.Series(busy[order]).groupby(slot[order]).cumsum().to_numpy() - busy[order]
    start = np.empty(n)
    start[order] = cum
    start += t0 + slot * 0.25
    return start, start + dur


def _timeline(start: np.ndarray, finish: np.ndarray, moved: np.ndarray, ok: np.ndarray, t0: float):
    """1 s buckets, computed independently of figures.steady: each transfer's bytes are split
    over the buckets it overlaps; active = transfers in flight at the bucket's end."""
    s, e = start - t0, finish - t0
    nb = int(math.ceil(e.max()))
    b0, b1 = np.floor(s).astype(int), np.minimum(np.floor(e).astype(int), nb - 1)
    span = b1 - b0 + 1
    idx = np.repeat(np.arange(s.size), span)
    bucket = np.repeat(b0, span) + (np.arange(idx.size) - np.repeat(np.cumsum(span) - span, span))
    overlap = np.minimum(e[idx], bucket + 1.0) - np.maximum(s[idx], bucket)
    bytes_ = np.bincount(bucket, weights=overlap * moved[idx] / (e - s)[idx], minlength=nb)
    edges = np.arange(1, nb + 1, dtype=float)
    active = np.searchsorted(np.sort(s), edges, side="right") - np.searchsorted(np.sort(e), edges, side="right")
    done = np.searchsorted(np.sort(e[ok]), edges, side="right")
    failed = np.searchsorted(np.sort(e[~ok]), edges, side="right")
    t = np.arange(1, nb + 1, dtype=float)  # a bucket is labelled by its end, as a run records it
    return pd.DataFrame({"t": t, "wall": t0 + t, "bytes": bytes_, "rate": bytes_, "active": active,
                         "done": done, "failed": failed})


def _samples(rng, cid: str, sc: SynthCell, pool: str | None, tl: pd.DataFrame, w0: float,
             w1: float, raw_ratio: float) -> pd.DataFrame:
    wall = np.arange(math.floor(w0), math.ceil(w1) + 1, dtype=float)
    rate = np.zeros(wall.size)
    if len(tl):
        pos = np.searchsorted(wall, tl["wall"].to_numpy())
        ok = pos < wall.size
        np.add.at(rate, pos[ok], tl["rate"].to_numpy()[ok])
    n = wall.size
    noise = rng.normal(1.0, 0.02, n)
    gw_cores = np.clip(CORES * 0.97 * rate / sc.gateway * noise, 0.02, CORES)
    osd = 0.0 if not pool else 0.3 * rate / (sc.fio_bw or 1e12) * CORES
    host = np.clip((gw_cores + osd + 0.3) / CORES, 0, 1)
    cols = []
    if sc.roles:
        load = rate / rate.max() if rate.max() > 0 else rate
        total = np.zeros(n)
        for role, (peak, limit, source) in sc.roles.items():
            cpu = np.clip(peak * load * rng.normal(1.0, 0.02, n), 0, limit or CORES)
            total += cpu
            cols.append(pd.DataFrame({"wall": wall, "mono": wall - T0 + 1000.0, "sampler": "roles",
                                      "metric": "role_cpu_cores", "value": cpu,
                                      "labels": json.dumps({"role": role})}))
            cols.append(pd.DataFrame({"wall": wall, "mono": wall - T0 + 1000.0, "sampler": "roles",
                                      "metric": "role_cpu_limit_cores",
                                      "value": math.nan if limit is None else limit,
                                      "labels": json.dumps({"role": role, "source": source})}))
        host = np.clip((total + 0.1) / CORES, 0, 1)

    def add(sampler, metric, values, labels):
        cols.append(pd.DataFrame({"wall": wall, "mono": wall - T0 + 1000.0, "sampler": sampler,
                                  "metric": metric, "value": values, "labels": labels}))
    for i, pid in enumerate((4242, 4243)[: sc.origins + (1 if sc.origins > 1 else 0)]):
        share = 1.0 / max(1, sc.origins + (1 if sc.origins > 1 else 0))
        lab = f'{{"name": "xrootd", "pid": "{pid}"}}'
        add("gateway", "proc.cpu_seconds.rate", gw_cores * share, lab)
        add("gateway", "proc.cpu_seconds", np.cumsum(gw_cores * share), lab)
        add("gateway", "proc.rss_bytes", np.full(n, 400e6 + i), lab)
        add("gateway", "xrd.link.in.rate", rate * share, f'{{"gateway": "xcb", "pgm": "xrootd", "pid": {pid}}}')
    add("host", "cpu.busy", host, '{"cpu": "all"}')
    for k in range(2):
        add("host", "cpu.busy", np.clip(host * rng.normal(1, 0.03, n), 0, 1), f'{{"cpu": "cpu{k}"}}')
    add("host", "net.rx_bytes.rate", rate * 1.01, '{"iface": "lo"}')
    add("host", "mem.available", np.full(n, 20e9), '{"host": "synth"}')
    if pool:
        lab = f'{{"pool": "{pool}"}}'
        op = sc.layout[0] if sc.layout else 4 << 20
        add("ceph", "pool.client_write_bytes_per_s", rate, lab)
        add("ceph", "pool.client_write_ops_per_s", rate / op * noise, lab)
        stored = 1e9 + np.cumsum(rate)
        add("ceph", "pool.stored", stored, lab)
        add("ceph", "pool.bytes_used", 1e9 * raw_ratio + np.cumsum(rate) * raw_ratio, lab)
        add("ceph", "pool.raw_per_stored", np.full(n, raw_ratio), lab)
        add("ceph", "osd.commit_latency_ms", rng.gamma(2.0, 2.0, n), '{"osd": 0}')
    df = pd.concat(cols, ignore_index=True)
    df.insert(0, "cell_id", cid)
    return df


def _probes(cid: str, sc: SynthCell) -> list[dict]:
    if sc.backend == "tmpfs":
        bw, iops = 6 * GIB, 650_000.0
    else:
        bw, iops = sc.fio_bw, sc.fio_iops
    rows = []
    if bw:
        rows.append({"job": "seq-write-4M", "rw": "write", "bs": "4M", "iops": bw / (4 << 20), "bw": bw})
        rows.append({"job": "seq-read-4M", "rw": "read", "bs": "4M", "iops": 1.3 * bw / (4 << 20), "bw": 1.3 * bw})
    if iops:
        k = sc.iops_bs >> 10 if sc.backend != "tmpfs" else 4
        rows.append({"job": f"rand-write-{k}K", "rw": "randwrite", "bs": f"{k}K", "iops": iops,
                     "bw": iops * k * 1024})
    for r in rows:
        r.update(cell_id=cid, host="127.0.0.1", iodepth=16, numjobs=1, lat_mean_us=800.0,
                 lat_p50_us=700.0, lat_p99_us=3000.0, lat_p999_us=9000.0, runtime_s=10.0,
                 errors=0, ss_reached=True)
    return rows


def make_run(store: str | Path, cells: list[SynthCell], *, network: float = 40e9 / 8,
             seed: int = 1, name: str = "synthetic", write: str = "store",
             scale: float = 1.0, finalize: bool = True) -> tuple[Path, dict[str, str]]:
    """Write a run dir into ``store``; returns (path, {cell_id: expected top-level verdict}).
    ``network``: the iperf3 baseline in B/s. ``scale`` multiplies every cell's file count.
    ``finalize`` False (``write="store"``): the records are left for the caller to add to, who
    finalizes the run."""
    rng = np.random.default_rng(seed)
    fp = {"versions": {"ceph": "16.2.15", "xrootd": "5.5.3", "fio": "3.33", "gfal2": "2.21.3",
                       "iperf3": "3.12", "xcbench": "0.1.0"},
          "host": {"hostname": "synth", "cpus": CORES, "cpus_usable": CORES, "mem_bytes": 64 << 30,
                   "os": "Debian GNU/Linux 12 (bookworm)", "kernel": "6.1.0"}}
    run = RunDir.create(store, name=name, fingerprint=fp,
                        matrix={"path": "layouts/synthetic.yaml", "name": "synthetic"})
    tables: dict[str, list] = {k: [] for k in ("transfers", "timeline", "campaigns", "probes",
                                               "samples", "findings", "gaps", "baseline")}
    truth, now = {}, T0 + 5
    tables["baseline"].append(pd.DataFrame([{"kind": "iperf3", "wall": T0 + 1, "streams": 1,
                                             "seconds": 3, "bits_per_second": network * 8,
                                             "retransmits": 0, "host": "127.0.0.1",
                                             "gateway": "127.0.0.1", "client": "127.0.0.1",
                                             "direction": "write"}]))
    cell_objs = [sc.cell() for sc in cells]
    run.register_cells(cell_objs)
    for sc, cell in zip(cells, cell_objs, strict=True):
        cid = cell.id
        if sc.expect:
            truth[cid] = sc.expect
        run.set_cell(cid, status="running")
        pool = cell.pool.name if cell.pool else None
        raw_ratio = sc.raw_ratio or (cell.pool.raw_ratio if cell.pool else 1.0)
        cell_start = now
        tables["probes"].append(pd.DataFrame(_probes(cid, sc)))
        now += 12
        nfiles = max(1, int(sc.files * scale))
        for c in sc.concurrency:
            for rep in range(sc.repeats):
                camp = f"{cid}-c{c}-r{rep}"
                size = np.full(nfiles, float(sc.file_size))
                r = sc.rate(c, network)
                start, finish = _schedule(rng, nfiles, c, size, r / c, sc.client_gap, now)
                ok = rng.random(nfiles) >= sc.fail_rate
                moved = np.where(ok, size, np.floor(size * rng.random(nfiles)))
                dur = finish - start
                tr = pd.DataFrame({
                    "cell_id": cid, "campaign_id": camp, "concurrency": c, "repeat": rep,
                    "transfer_id": camp + "-" + pd.Series(np.arange(nfiles)).astype(str),
                    "file_index": np.arange(nfiles), "retry": 0,
                    "source": "file:///dev/shm/xcb-src/f" + pd.Series(np.arange(nfiles)).astype(str),
                    "destination": f"root://127.0.0.1:1094//xcb/{cid}/f" + pd.Series(np.arange(nfiles)).astype(str),
                    "mode": sc.mode, "client": "gfal2", "nstreams": 1, "file_size": size,
                    "transferred": moved, "start_time": start, "finish_time": finish,
                    "tx_duration": dur, "throughput": moved / dur, "checksum_type": "adler32",
                    "checksum_source": "0a1b2c3d", "checksum_dest": np.where(ok, "0a1b2c3d", None),
                    "file_state": np.where(ok, "FINISHED", "FAILED"),
                    "error_code": np.where(ok, 0, 5), "error_scope": np.where(ok, None, "TRANSFER"),
                    "error_phase": np.where(ok, None, "TRANSFER"),
                    "reason": np.where(ok, None, "[ERROR] Operation expired"),
                    "direction": cell.direction,
                })
                tables["transfers"].append(tr)
                tl = _timeline(start, finish, moved, ok, now)
                tl.insert(0, "repeat", rep)
                tl.insert(0, "concurrency", c)
                tl.insert(0, "campaign_id", camp)
                tl.insert(0, "cell_id", cid)
                tables["timeline"].append(tl)
                end = float(finish.max())
                tables["campaigns"].append(pd.DataFrame([{
                    "cell_id": cid, "campaign_id": camp, "concurrency": c, "repeat": rep,
                    "mode": sc.mode, "client": "gfal2", "files": nfiles, "bytes": float(moved.sum()),
                    "start_time": now, "finish_time": end, "rate": float(moved.sum()) / (end - now),
                    "finished": int(ok.sum()), "failed": int((~ok).sum()),
                    "settings": f'{{"concurrency": {c}, "checksum": "both"}}',
                    "direction": cell.direction, "security": cell.security}]))
                now = end + 2.0
        cell_tl = pd.concat([t for t in tables["timeline"] if t["cell_id"].iat[0] == cid])
        tables["samples"].append(_samples(rng, cid, sc, pool, cell_tl, cell_start, now, raw_ratio))
        if sc.backend == "rados":
            tables["findings"].append(pd.DataFrame([{
                "cell_id": cid, "what": "XrdCeph pgread crash", "why": "xrdcp 5.5 reads with pgread",
                "fix": "XRD_CPUSEPGWRTRD=0 in the client env", "severity": "warning"}]))
        fpr = {"layout": dict(zip(("stripe_unit", "stripe_count", "object_size"), sc.layout, strict=True))
               if sc.layout else None,
               "pool": {"name": pool, "settings": {"size": cell.pool.size if cell.pool else None}} if pool else None,
               "configs": {"xrootd.cfg": f"{abs(hash((cid, 'cfg'))):064x}"[:64]}}
        run.set_cell_fingerprint(cid, **fpr)
        run.set_cell(cid, status="complete")
        now += 3
    if cells:
        tables["gaps"].append(pd.DataFrame([{"cell_id": cell_objs[0].id, "wall": T0 + 20,
                                             "sampler": "ceph", "error": "TimeoutError: mon command"}]))
    for t, parts in tables.items():
        if not parts:
            continue
        df = pd.concat(parts, ignore_index=True)
        if write == "store":
            recs = df.astype(object).where(df.notna(), None).to_dict("records")
            if t == "samples":  # samplers hand dicts to the sink; the store turns them to JSON
                for r in recs:
                    r["labels"] = json.loads(r["labels"])
            run.append(t, recs)
        else:
            df.to_parquet(run.path / f"{t}.parquet", index=False)
    if write == "store":
        if finalize:
            run.finalize("complete")
    else:
        run.state.status, run.state.end = "complete", "2025-10-09T09:00:00+00:00"
        run.save_manifest()
    return run.path, truth
