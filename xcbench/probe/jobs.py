"""Probes: fio jobs straight at a cell's target, the storage ceiling the gateway is compared with.

    run_probe(cell, target, *, cluster, workdir, sink, raw_dir, hosts, patterns) -> PROBE rows

The target says which engine (``Target.fio_engine``): "rados" gets ``fio-jobs/rados.fio.j2``
(ioengine=rados on the cell's pool), "files" (tmpfs, CephFS) gets ``fio-jobs/files.fio.j2`` in
the target dir. Patterns: ``randwrite`` (4 KiB
random writes: IOPS), ``write`` and ``read`` (object-sized sequential I/O: bandwidth). Given
the campaign's levels, a storage cell's bandwidth ceilings are instead one write probe per
level, written as the gateway writes (xcbench.probe.levels).

Reads: a cell whose ``direction`` is read or mixed always gets the sequential
``read`` job (its storage read bandwidth ceiling), and, when its campaign reads with
``access: {pattern: random | readv, size, count}``, a ``randread`` job of that size (its read
IOPS ceiling; a readv of ``count`` pieces costs the storage ``count`` random reads of ``size``,
so it is probed as random reads of ``size``). With direct I/O the size is rounded up to 4 KiB.

The cell's ``probe`` settings (job_settings) fill the templates (jobfiles). Before fio runs,
a missing fio, a pool that does not exist or a target dir that is gone is a one-line XcbError.
Afterwards everything fio wrote is removed, whatever happened: objects by their exact names
(fio's rados engine deletes a job's objects when the job ends, but not when fio is killed),
files by their prefix.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path

from xcbench.backends.base import backend_class
from xcbench.probe import dirowner, fio
from xcbench.probe import levels as level_probes
from xcbench.probe.device_count import WRITE_JOBS, DeviceCounter, counted_jobs
from xcbench.probe.job_settings import settings
from xcbench.probe.jobfiles import (
    PREFIX,
    READ_JOBS,
    check_target,
    direct_io_supported,
    name_prefixes,
    object_names,
    prefill,
    probe_conf,
    remove_files,
    remove_objects,
    render_jobs,
)

Sink = Callable[[str, list[dict]], None]


def _hosts(hosts: Sequence[str] | str | None) -> list[str]:
    if isinstance(hosts, str):
        hosts = hosts.split(",")
    out = [h.strip() for h in hosts or () if h.strip()]
    for h in out:
        fio.client_arg(h)  # one-line error for a malformed host
    return out


def run_probe(cell, target, *, cluster=None, workdir: Path, sink: Sink | None,
              raw_dir: Path | None = None, hosts: Sequence[str] | str | None = None,
              patterns: Sequence[str] | None = None, device: DeviceCounter | None = None,
              levels: Sequence[int] = ()) -> list[dict]:
    """Run the cell's fio probe against ``target``; write PROBE rows (and a FINDING when direct
    I/O is not possible) to ``sink``; keep the job files and fio's JSON+ in ``raw_dir``.

    ``device``: the storage device's cumulative (write IOs, write bytes), where the caller can
    count them (the OSDs' device, e.g. their blkio group). Each write job then runs alone and its
    row carries ``device_write_iops``/``device_write_bytes_per_s``: what it made the device do, the
    ceilings in the unit a chain of other ops can be held against (analysis.verdicts.rules).

    ``levels``: the campaign's levels; on a storage target (not tmpfs, fio run locally) each gets
    its own write probe, as the gateway writes at that level (xcbench.probe.levels), and these
    replace the cell's one sequential write job as its bandwidth ceilings."""
    p = settings(cell, patterns)
    hosts = _hosts(hosts)
    levels = [int(c) for c in levels] if not hosts and backend_class(target.backend).needs_cluster else []
    if levels and "write" in p["jobs"] and device is None:  # counted: the device's bytes ceiling
        p["jobs"] = [j for j in p["jobs"] if j != "write"]
        p["patterns"] = [j for j in p["patterns"] if j != "write"]
    check_target(cell, target, cluster)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    raw_dir = Path(raw_dir) if raw_dir is not None else workdir
    raw_dir.mkdir(parents=True, exist_ok=True)
    prefixes = name_prefixes(cell, hosts, run=secrets.token_hex(4))
    findings: list[dict] = []
    rados_engine = target.fio_engine == "rados"
    # a local fio writing in another user's dir runs as that user (xcbench.probe.dirowner)
    owner = None if rados_engine or hosts else dirowner.owner_of(target.path)
    direct = True
    names: list[str] = []
    conf = probe_conf(cluster, workdir) if cluster is not None and target.pool else None
    if rados_engine:
        texts = render_jobs(cell, target, p, prefixes=prefixes, conf=conf,
                            ceph_id=cluster.ceph_id)
        names = object_names(cell, p, prefixes)
    else:
        # direct: false in the matrix measures through the page cache, as a gateway writes
        direct = bool(p["direct"]) and direct_io_supported(target.path)
        if p["direct"] and not direct:
            findings.append({
                "cell_id": cell.id, "what": f"fio probe on {target.backend}: buffered I/O",
                "why": f"{target.path} does not take O_DIRECT (EINVAL), so the probe runs psync "
                       "with direct=0, iodepth 1: page-cache speed",
                "fix": "nothing for tmpfs (it is memory); elsewhere read the probe as an upper "
                       "bound", "severity": "info"})
        texts = render_jobs(cell, target, p, prefixes=prefixes, direct=direct)
    jobfiles = []  # named by cell (and host), as before: the run's token is in the objects only
    for pre, text in zip(name_prefixes(cell, hosts), texts, strict=True):
        jf = raw_dir / f"{pre}.fio"
        jf.write_text(text)
        jobfiles.append(jf)
    output = raw_dir / f"{PREFIX}.{cell.id}.json"
    per_job = p["runtime"] + (p["ramp"] if isinstance(p["ramp"], int) else 0)
    timeout = len(p["jobs"]) * per_job + 300
    level_rows: list[dict] = []
    level_names: list[str] = []  # the pool level jobs' objects, named before each job runs
    try:
        if rados_engine and any(j in READ_JOBS for j in p["jobs"]):
            prefill(cluster, target.pool, [n for n in names if n.split(".")[-3] in READ_JOBS],
                     p["object_size"])
        dev: dict[str, tuple[float, float]] = {}
        if device is not None and not hosts and any(j in WRITE_JOBS for j in p["jobs"]):
            data, dev = counted_jobs(jobfiles, output, p["jobs"], timeout, device, owner)
        elif p["jobs"]:
            data = fio.run_fio(jobfiles, output=output, hosts=hosts or None, timeout=timeout,
                               user=owner)
        else:
            data = {"jobs": []}
        if levels:
            last = [float(j.get("write", {}).get("bw_bytes") or 0) for j in data.get("jobs") or []]
            level_rows = level_probes.run_levels(
                cell, target, levels, cluster=cluster, raw_dir=raw_dir, prefix=prefixes[0],
                conf=conf, ceph_id=getattr(cluster, "ceph_id", None),
                prev_bw=max(last) if last else None, object_names=level_names)
    finally:
        if names or level_names:
            remove_objects(cluster, target.pool, names + level_names)
        if not rados_engine:
            remove_files(target.path, prefixes)
    rows = fio.parse(data, cell_id=cell.id, jobfile=texts[0])
    for r in rows:
        r["device_write_iops"], r["device_write_bytes_per_s"] = dev.get(r["job"], (math.nan, math.nan))
    rows += level_rows
    if sink is not None:
        if findings:
            sink("findings", findings)
        sink("probes", rows)
    return rows
