"""Level probes: at each campaign level, fio writes the way the gateway does, and the result is
that level's storage ceiling with its own noise.

    run_levels(cell, target, levels, *, cluster, raw_dir, prefix, conf, ceph_id) -> PROBE rows

Per level c (``fio-jobs/level.fio.j2``):
- ``mount`` (files targets: tmpfs, CephFS): c fio jobs, psync (or libaio with direct I/O when
  the matrix asks for it), each writing NEW files of the campaign's file size in the gateway's
  write size (the campaign client's chunk size): created on open, written once, closed and
  unlinked every loop, as a transfer creates, writes, closes and (delete_after_verify) removes
  its file;
- ``pool`` (where the target has a pool: CephFS's data pool, the rados backend's pool): c jobs
  of fio's rados engine writing NEW objects of the layout's object size on the pool, as
  XrdCeph's striper writes a file (stripe_count 1: one object after the other; n: n at a time,
  a stripe unit each in turn; in the striper's IO size, the stripe unit or the gateway's write
  size if smaller), measured apart from the mount. For a rados cell that is the path the
  gateway takes (XrdCeph on the pool). No object is written twice: each job has
  :func:`objects_per_job` objects, enough for its runtime at HEADROOM x its share of the best
  pool rate measured so far, and is not time-based: it ends at its steady state, its runtime or
  its last object, whichever comes first (``objects_ran_out`` says the last). What fio's rados
  engine does not do as the striper does: its objects are made (empty) as the job starts,
  outside its timed writes, and named ``<prefix>.pool-c<level>.<job>.<n>`` (the striper's are
  ``<file>.%016x``; a name only places an object, both spread over the PGs alike), and it takes
  no lock and sets no layout xattr on a file's first object (per-file ops of the gateway's,
  counted on the chain's side).
Each job ends when fio sees its bandwidth steady (``steadystate``), else at LEVEL_RUNTIME.
Before each job a settle step: the previous job's writes flushed (``sync``) and the OSDs' write
rate back to idle (xcbench.probe.settle). During each job the host's CPU and the OSDs' CPU are
read (xcbench.probe.cpu). fio's per-interval bandwidth log gives the ceiling and its relative
standard error (xcbench.probe.noise).
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.figures.units import parse_size
from xcbench.probe import cpu, dirowner, fio, noise, settle
from xcbench.system.templates import render

TEMPLATES = "xcbench.fio_jobs"
WRITE_SIZE = 4 << 20  # the campaign client's write size when the cell sets none (CampaignSpec.chunk_size)
MAX_BS = 64 << 20  # below Ceph's osd_max_write_size (90 MiB)
LEVEL_RUNTIME = 12  # s: the most a level job runs when fio does not see it steady sooner
# fio's steady state: bandwidth within 10 % of its mean (the campaign's own steady tolerance in
# layouts/quick.yaml) for 3 s after a ~1 s ramp; the matrix's probe ss/ss_dur/ss_ramp override.
# fio reads the steady state on a 1-s tick and takes the first reading after ss_ramp as the
# window's start: with ss_ramp=1 the window began at ~1.9 s (fio 3.33, ss_dur 2: stopped at
# 3.89 s), with 500ms at ~0.9 s (2.89 s), the 1 s meant
STEADY = {"ss": "bw:10%", "ss_dur": 3, "ss_ramp": "500ms"}
LOG_MSEC = 500  # fio's bandwidth log interval: the samples of the probe's noise
RAMP_S = 1.0  # samples of the first second are left out of the ceiling (the ramp STEADY means)
# new objects a pool job has: new_seconds of writing at HEADROOM x the rate one job may reach,
# per_job: no more than the fastest job of an earlier pool level, nor than GROWTH x the best
# pool total so far shared by its level's jobs (before the first level: the larger of the
# cell's own probe and FIRST_BYTES_PER_S). A job that writes them all before its steady state ends
# there, said so (objects_ran_out): its figure is what it did in that time
HEADROOM = 1.25
GROWTH = 2.0  # the most a pool's total grows from one level to the next (levels double, at most x2)
FIRST_BYTES_PER_S = 400e6  # B/s, a pool level's jobs together: the reference box's pool (~350-400 MB/s, notes)
RAN_OUT = 0.99  # a pool level whose jobs wrote this share of their objects' bytes ran out of them


def write_size(cell) -> int:
    """The gateway's write size: the campaign client's chunk size, capped by the file size."""
    raw = (cell.campaign or {}).get("chunk_size", WRITE_SIZE)
    try:
        bs = int(parse_size(raw))
    except (TypeError, ValueError) as e:
        raise XcbError(f"cell {cell.id}: campaign.chunk_size: {raw!r}: {e}") from None
    return max(1, min(bs, int(cell.file_size), MAX_BS))


def steady(cell) -> dict[str, Any]:
    p = dict(cell.probe or {})
    return {"ss": p.get("ss") or STEADY["ss"], "ss_dur": p.get("ss_dur") or STEADY["ss_dur"],
            "ss_ramp": p.get("ss_ramp") if p.get("ss_ramp") is not None else STEADY["ss_ramp"]}


def targets(target) -> list[str]:
    """What a level is probed on: the mount (a files target) and the pool, where there is one."""
    out = ["mount"] if target.fio_engine == "files" else []
    return out + (["pool"] if target.pool else [])


def runtime(cell) -> int:
    return max(LEVEL_RUNTIME, int((cell.probe or {}).get("runtime") or 0))


def _seconds(v: Any) -> float:
    """fio's time: 3, "500ms", "2s"."""
    s = str(v).strip()
    return float(s[:-2]) / 1000 if s.endswith("ms") else float(s[:-1] if s.endswith("s") else s)


def new_seconds(cell) -> float:
    """How long a pool job's new objects last at its expected rate: its steady test's ramp and
    window (fio stops a steady job there) and a second, at most its runtime. fio's rados engine
    makes every object (and removes it) outside the job's timed writes, ~3.4 ms an object here:
    the fewer, the quicker the probe."""
    ss = steady(cell)
    return float(min(runtime(cell), _seconds(ss["ss_ramp"]) + _seconds(ss["ss_dur"]) + 1.0))


def per_job(level: int, best_total: float | None, best_job: float | None) -> float:
    """The rate one of a pool level's ``level`` jobs may reach (B/s): no more than the fastest
    job so far (``best_job``), nor GROWTH x the best total so far (``best_total``) shared by the
    level's jobs; before any pool level, FIRST_BYTES_PER_S (or the total given) shared by them."""
    total = best_total if best_total and math.isfinite(best_total) and best_total > 0 else FIRST_BYTES_PER_S
    if best_job is None:
        return total / level
    return min(best_job, GROWTH * total / level)


def objects_per_job(cell, level: int, rate: float) -> int:
    """New objects a pool job at ``rate`` (B/s, :func:`per_job`) gets: new_seconds at HEADROOM x it."""
    obj = cell.layout.object_size if cell.layout else write_size(cell)
    return max(1, math.ceil(HEADROOM * rate * new_seconds(cell) / obj))


def render_level(cell, target, level: int, kind: str, *, prefix: str, log_stem: Path,
                 direct: bool = False, conf: str | None = None,
                 ceph_id: str | None = None, objects: int = 1) -> str:
    """The job file of one level probe (``kind`` mount or pool; ``objects``: a pool job's new
    objects, :func:`objects_per_job`)."""
    bs = write_size(cell)
    lay = cell.layout
    obj = lay.object_size if lay else bs
    common = {"cell_id": cell.id, "label": cell.label, "jobs": int(level), "runtime": runtime(cell),
              "ss": steady(cell), "log_stem": str(log_stem), "log_msec": LOG_MSEC,
              "file_size": int(cell.file_size), "prefix": prefix}
    if kind == "pool":  # the striper's IO: a stripe unit, or the gateway's write if smaller
        return render(TEMPLATES, "level.fio.j2", **common, job=f"pool-c{level}", engine="rados",
                      conf=conf, ceph_id=ceph_id, pool=target.pool, directory=None,
                      ioengine="rados", direct=0, bs=min(bs, lay.stripe_unit if lay else obj, MAX_BS),
                      objects=int(objects), object_size=obj,
                      stripe_count=int(lay.stripe_count) if lay else 1)
    return render(TEMPLATES, "level.fio.j2", **common, job=f"write-c{level}", engine="files",
                  conf=None, ceph_id=None, pool=None, directory=target.path,
                  ioengine="libaio" if direct else "psync", direct=int(direct), bs=bs,
                  objects=1, object_size=obj, stripe_count=1)


def run_levels(cell, target, levels, *, cluster=None, raw_dir: Path, prefix: str,
               conf: str | None = None, ceph_id: str | None = None, direct: bool = False,
               prev_bw: float | None = None, object_names: list[str] | None = None) -> list[dict]:
    """Every level probe of the cell, in level order (mount then pool at each level): PROBE
    rows (the caller removes what fio left: files by prefix, objects by the names each pool job
    is given, added to ``object_names`` before it runs)."""
    rows: list[dict] = []
    # the best pool rate so far: what a pool job's new objects are sized from (an earlier pool
    # level's; before the first, the cell's own probe's, FIRST_BYTES_PER_S at least: a small probe's
    # figure is no bound)
    best = max(prev_bw or 0.0, float(FIRST_BYTES_PER_S))
    best_job: float | None = None
    waiter = settle.Settle(cluster, target.pool) if cluster is not None and target.pool else None
    try:
        for level in levels:
            for kind in targets(target):
                if kind == "pool" and (cluster is None or conf is None):
                    continue
                job = f"{'pool' if kind == 'pool' else 'write'}-c{level}"
                stem = raw_dir / f"{prefix.rsplit('.', 1)[0]}.{job}"
                for old in noise.logs(stem):
                    old.unlink()
                # fio in another user's dir runs as that user (xcbench.probe.dirowner)
                owner = dirowner.owner_of(target.path) if kind == "mount" else None
                n = objects_per_job(cell, int(level), per_job(int(level), best, best_job)) \
                    if kind == "pool" else 0
                if n and object_names is not None:
                    object_names += pool_objects(prefix, int(level), n)
                with dirowner.log_dir(owner, stem, int(level)) as log_stem:
                    text = render_level(cell, target, level, kind, prefix=prefix,
                                        log_stem=log_stem, direct=direct, conf=conf,
                                        ceph_id=ceph_id, objects=max(1, n))
                    jf = raw_dir / f"{stem.name}.fio"
                    jf.write_text(text)
                    settled = settle.flush_and_wait(waiter, target.path, prev_bw)
                    with cpu.Meter(cluster) as meter:
                        t0 = time.monotonic()
                        data = fio.run_fio([jf], output=raw_dir / f"{stem.name}.json",
                                           timeout=LEVEL_RUNTIME + 300, user=owner)
                        wall = time.monotonic() - t0
                got = fio.parse(data, cell_id=cell.id, jobfile=text)
                # to the jobs' end: a write stall at the end logs no line (xcbench.probe.noise)
                end_ms = max((r["runtime_s"] for r in got), default=0.0) * 1000 or None
                stats = noise.from_logs(stem, LOG_MSEC, RAMP_S, end_ms)
                obj = cell.layout.object_size if cell.layout else write_size(cell)
                for r in got:
                    r.update(concurrency=int(level), target=kind, wall_s=round(wall, 2),
                             **stats, **meter.result(), **settled)
                    if kind == "pool":  # every object new; all of them written: the job ran out
                        written = float(r.get("bw") or 0) * float(r.get("runtime_s") or 0)
                        r.update(objects_per_job=n,
                                 objects_ran_out=bool(written >= RAN_OUT * n * int(level) * obj))
                        bw = float(r.get("bw") or 0)
                        best = max(best if best_job is not None else 0.0, bw)
                        best_job = max(best_job or 0.0, bw / int(level))
                    prev_bw = stats["bw_steady"] if math.isfinite(stats["bw_steady"]) else r["bw"]
                rows += got
    finally:
        if waiter is not None:
            with contextlib.suppress(Exception):
                waiter.close()
    return rows


def pool_objects(prefix: str, level: int, per_job: int) -> list[str]:
    """The object names one pool level's jobs write (fio: <prefix>.$jobname.$jobnum.$filenum)."""
    return [f"{prefix}.pool-c{level}.{j}.{f}" for j in range(int(level)) for f in range(int(per_job))]
