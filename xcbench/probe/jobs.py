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

The cell's ``probe`` settings (matrix: runtime, ramp, iodepth, numjobs, size, bs, ss, ss_dur,
ss_ramp, patterns) fill the templates; what is missing comes from DEFAULTS. Before fio runs,
a missing fio, a pool that does not exist or a target dir that is gone is a one-line XcbError.
Afterwards everything fio wrote is removed, whatever happened: objects by their exact names
(fio's rados engine deletes a job's objects when the job ends, but not when fio is killed),
files by their prefix.
"""

from __future__ import annotations

import errno
import functools
import math
import mmap
import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from xcbench.backends.base import backend_class
from xcbench.errors import XcbError
from xcbench.figures.units import parse_size
from xcbench.probe import dirowner, fio
from xcbench.probe import levels as level_probes
from xcbench.system import proc
from xcbench.system.templates import render

PATTERNS = ("randwrite", "write", "read")
DEFAULTS = {"runtime": 10, "ramp": 0, "iodepth": 16, "numjobs": 1, "direct": True}
PREFIX = "xcb-probe"
MAX_BS = 64 << 20  # below Ceph's osd_max_write_size (90 MiB): larger object-sized writes fail
DEFAULT_BS = 4 << 20  # bandwidth block size when the cell has no layout (tmpfs)
MIN_IOPS_OBJECTS = 16  # 4 KiB random writes spread over at least this many objects per job
PREFILL_CHUNK = 8 << 20
READ_JOBS = ("read", "randread")  # jobs whose objects xcbench writes first (rados)
ALIGN = 4096  # O_DIRECT block alignment
DEFAULT_ACCESS = 64 << 10  # a random/readv access without a size reads 64 KiB pieces (campaign.access)
TEMPLATES = "xcbench.fio_jobs"

Sink = Callable[[str, list[dict]], None]
DeviceCounter = Callable[[], tuple[int, int]]  # cumulative (write IOs, write bytes) of a device


def settings(cell, patterns: Sequence[str] | None = None) -> dict[str, Any]:
    """The cell's probe settings with defaults filled in and checked."""
    p = {**DEFAULTS, **dict(cell.probe or {})}
    where = f"cell {cell.id}: probe"
    pats = list(patterns if patterns is not None else p.get("patterns") or PATTERNS)
    if isinstance(pats, str):
        pats = [x.strip() for x in pats.split(",")]
    for x in pats:
        if x not in PATTERNS:
            raise XcbError(f"{where}: patterns: {x!r} is not one of {', '.join(PATTERNS)}")
    if not pats:
        raise XcbError(f"{where}: patterns: empty")
    direction = getattr(cell, "direction", None) or "write"
    if direction in ("read", "mixed") and "read" not in pats:
        pats.append("read")  # the read ceiling of a reading cell
    p["patterns"] = [x for x in PATTERNS if x in pats]  # fixed order: writes before reads
    for key in ("runtime", "iodepth", "numjobs"):
        if not isinstance(p[key], int) or isinstance(p[key], bool) or p[key] < 1:
            raise XcbError(f"{where}: {key}: {p[key]!r} is not a positive integer")
    p["size"] = int(p.get("size") or cell.file_size)
    lay = cell.layout
    p["object_size"] = lay.object_size if lay else p["size"]
    if p.get("bs"):
        p["bw_bs"] = int(p["bs"])
    else:  # object-sized, within what one OSD op and one file (or object) can take
        room = backend_class(cell.backend).probe_room(p["object_size"], p["size"])
        p["bw_bs"] = min(lay.object_size if lay else DEFAULT_BS, MAX_BS, room)
    p["rr_bs"] = _randread_bs(cell, direction, where, p)
    p["jobs"] = p["patterns"] + (["randread"] if p["rr_bs"] else [])
    if p.get("ss"):
        ramp = p.get("ss_ramp", 0)
        p["ss_spec"] = {"ss": p["ss"], "ss_ramp": ramp,
                        "ss_dur": p.get("ss_dur", max(1, p["runtime"] - ramp)
                                        if isinstance(ramp, int) else p["runtime"])}
    else:
        p["ss_spec"] = None
    return p


def _randread_bs(cell, direction: str, where: str, p: dict[str, Any]) -> int | None:
    """Block size of the random-read job: the campaign's access size (random or readv reads),
    else None (no random-read job)."""
    access = (cell.campaign or {}).get("access") if direction in ("read", "mixed") else None
    if isinstance(access, str):
        access = {"pattern": access}
    if not isinstance(access, dict) or access.get("pattern") not in ("random", "readv"):
        return None
    size = access.get("size")
    try:
        bs = int(parse_size(size)) if size is not None else DEFAULT_ACCESS
    except (TypeError, ValueError) as e:
        raise XcbError(f"{where}: campaign.access.size: {access.get('size')!r}: {e}") from None
    if bs < 1:
        raise XcbError(f"{where}: campaign.access.size: {bs} is not a positive size")
    if p.get("direct", True):
        bs = -(-bs // ALIGN) * ALIGN
    return min(bs, p["object_size"], p["size"])


def _hosts(hosts: Sequence[str] | str | None) -> list[str]:
    if isinstance(hosts, str):
        hosts = hosts.split(",")
    out = [h.strip() for h in hosts or () if h.strip()]
    for h in out:
        fio.client_arg(h)  # one-line error for a malformed host
    return out


def direct_io_supported(directory: str | os.PathLike) -> bool:
    """Whether the file system under ``directory`` takes O_DIRECT (tmpfs refuses it: EINVAL).
    Asked by the directory's owner when that is another user (root never writes in it)."""
    owner = dirowner.owner_of(directory)
    if owner is not None:
        return dirowner.direct_io_as_owner(directory, owner)
    # a new file of an unpredictable name, never through a link
    path = Path(directory) / f".{PREFIX}-odirect-{secrets.token_hex(8)}"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_WRONLY | os.O_DIRECT, 0o600)
    except OSError as e:
        if e.errno == errno.EINVAL:
            path.unlink(missing_ok=True)
            return False
        raise XcbError(f"{directory}: cannot create a file ({e.strerror})") from e
    try:
        buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
        try:
            os.write(fd, buf)
            return True
        except OSError:
            return False
        finally:
            buf.close()
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)


def check_target(cell, target, cluster=None) -> None:
    """One-line errors before anything runs."""
    where = f"cell {cell.id}"
    if target.fio_engine == "rados":
        fio.check_fio("rados")
        if cluster is None:
            raise XcbError(f"{where}: probe: the rados engine needs a Ceph cluster")
        if not target.pool:
            raise XcbError(f"{where}: probe: the target names no pool")
        if not cluster.rados().pool_exists(target.pool):
            raise XcbError(f"{where}: pool: {target.pool} does not exist in the cluster "
                           f"({cluster.conf})")
    else:
        fio.check_fio()
        if not target.path or not Path(target.path).is_dir():
            raise XcbError(f"{where}: probe: target dir {target.path} is gone "
                           f"(was the {target.backend} target cleaned up or unmounted?)")


def _probe_conf(cluster, workdir: Path) -> str:
    """The ceph.conf fio's rados engine reads. fio has no keyring option and reads only the
    conf file: when the cluster handle carries a keyring the conf does not name, write a copy
    that names it in the client's section."""
    conf = Path(cluster.conf)
    keyring = getattr(cluster, "keyring", None)
    if not keyring:
        return str(conf)
    found = proc.run(["ceph-conf", "-c", conf, "--name", f"client.{cluster.client_id}",
                      "--lookup", "keyring"], check=False, timeout=30).stdout.strip()
    if Path(found).resolve() == Path(keyring).resolve():  # the conf already names it
        return str(conf)
    text = conf.read_text()
    section = f"[client.{cluster.client_id}]"
    line = f"\tkeyring = {keyring}\n"
    lines = text.splitlines(keepends=True)
    for i, ln in enumerate(lines):
        if ln.strip() == section:
            lines.insert(i + 1, line)
            break
    else:
        lines += ["\n", section + "\n", line]
    out = workdir / "probe-ceph.conf"
    out.write_text("".join(lines))
    return str(out)


def _prefixes(cell, hosts: list[str], run: str = "") -> list[str]:
    """Object/file name prefixes of one probe: per cell, per ``run`` (a token of this probe, so
    two hosts probing the same cell of the same matrix in one pool never take, or delete, each
    other's objects) and per fio host."""
    base = f"{PREFIX}.{cell.id}" + (f".{run}" if run else "")
    return [f"{base}.h{i}" for i in range(len(hosts))] if hosts else [base]


def _rados_objects(p: dict[str, Any]) -> tuple[int, int]:
    """(objects per bandwidth job, objects per IOPS job)."""
    bw = max(1, math.ceil(p["size"] / p["object_size"]))
    return bw, max(bw, MIN_IOPS_OBJECTS)


def object_names(cell, p: dict[str, Any], prefixes: list[str]) -> list[str]:
    """Every object name the rados jobs of this probe use (fio: <prefix>.$jobname.$jobnum.$filenum)."""
    bw, iops = _rados_objects(p)
    names = []
    for pre in prefixes:
        for job in p.get("jobs", p["patterns"]):
            n = iops if job == "randwrite" else bw
            names += [f"{pre}.{job}.{j}.{f}" for j in range(p["numjobs"]) for f in range(n)]
    return names


def render_jobs(cell, target, p: dict[str, Any], *, prefixes: list[str], conf: str | None = None,
                client_id: str | None = None, direct: bool = True) -> list[str]:
    """One job file text per host (per prefix)."""
    common = {"cell_id": cell.id, "label": cell.label, "patterns": p["patterns"],
              "runtime": p["runtime"], "ramp": p["ramp"], "numjobs": p["numjobs"],
              "bw_bs": p["bw_bs"], "ss": p["ss_spec"], "rr_bs": p.get("rr_bs")}
    out = []
    for pre in prefixes:
        if target.fio_engine == "rados":
            bw, iops = _rados_objects(p)
            out.append(render(TEMPLATES, "rados.fio.j2", **common, conf=conf, client_id=client_id,
                              pool=target.pool, prefix=pre, iodepth=p["iodepth"], objects=bw,
                              iops_objects=iops, object_size=p["object_size"]))
        else:
            out.append(render(TEMPLATES, "files.fio.j2", **common, directory=target.path,
                              prefix=pre, ioengine="libaio" if direct else "psync",
                              direct=int(direct), iodepth=p["iodepth"] if direct else 1,
                              file_size=p["size"]))
    return out


def _prefill(cluster, pool: str, names: list[str], object_size: int) -> None:
    """Write the objects the read job reads (fio's rados engine cannot lay them out)."""
    io = cluster.ioctx(pool)
    chunk = os.urandom(min(object_size, PREFILL_CHUNK))
    for name in names:
        off = 0
        while off < object_size:
            n = min(len(chunk), object_size - off)
            io.write(name, chunk[:n], off)
            off += n


def remove_objects(cluster, pool: str, names: list[str]) -> int:
    """Remove the named objects (absent ones are fine); returns how many existed."""
    import rados
    io = cluster.ioctx(pool)
    removed = 0
    for name in names:
        try:
            io.remove_object(name)
            removed += 1
        except rados.ObjectNotFound:
            pass
    return removed


def remove_files(directory: str | os.PathLike, prefixes: list[str]) -> int:
    """What fio left in ``directory`` (``<prefix>.*``), removed without following a link."""
    return dirowner.remove_files(directory, prefixes)


POLL = 0.1  # s between reads of the device's counters while a write job runs
WRITE_JOBS = ("randwrite", "write")  # the jobs counted at the device, each alone


def active_rate(samples: Sequence[tuple[float, int, int]]) -> tuple[float, float] | None:
    """(IOs/s, bytes/s) over the span in which the IO counter moved: from the last reading
    before it first rose to the first reading after it last rose (``samples``: (monotonic s,
    IOs, bytes), cumulative). fio's start (connecting, laying out objects) and end are thus not
    counted as idle time, nor is a burst at either end spread over a shorter runtime. None:
    the counter never moved."""
    up = [i for i in range(1, len(samples)) if samples[i][1] > samples[i - 1][1]]
    if not up:
        return None
    (t0, n0, b0), (t1, n1, b1) = samples[up[0] - 1], samples[up[-1]]
    return ((n1 - n0) / (t1 - t0), (b1 - b0) / (t1 - t0)) if t1 > t0 else None


def _counted(device: DeviceCounter, run: Callable[[], dict[str, Any]]
             ) -> tuple[dict[str, Any], tuple[float, float] | None]:
    """``run()`` (one fio job) with the device's counters read every POLL s meanwhile."""
    samples = [(time.monotonic(), *device())]
    done = threading.Event()

    def poll() -> None:
        while not done.wait(POLL):
            samples.append((time.monotonic(), *device()))
    t = threading.Thread(target=poll, name="xcb-probe-device", daemon=True)
    t.start()
    try:
        data = run()
    finally:
        done.set()
        t.join()
    samples.append((time.monotonic(), *device()))
    return data, active_rate(samples)


def _counted_jobs(jobfiles: list[Path], output: Path, jobs: list[str], timeout: float,
                  device: DeviceCounter, user: tuple[int, int] | None = None
                  ) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
    """Each write job alone (the IOPS job, then the bandwidth job) with the storage device's
    write IOs and bytes counted while it runs, then the other jobs: (fio's JSON of all jobs,
    job -> the device's (write IO/s, write bytes/s) during it: :func:`active_rate`). The IOPS
    job's figures are the device's IO-count ceiling as fio's 4 KiB writes reach it, the
    bandwidth job's its bytes ceiling as large writes reach it (analysis.verdicts.rules)."""
    data: dict[str, Any] = {}
    found: dict[str, tuple[float, float]] = {}
    parts = []
    for job in (j for j in jobs if j in WRITE_JOBS):
        got, rate = _counted(device, functools.partial(
            fio.run_fio, jobfiles, output=output.with_suffix(f".{job}.json"), timeout=timeout,
            sections=[job], user=user))
        parts.append(got)
        if rate is not None:
            found[job] = rate
    rest = [j for j in jobs if j not in WRITE_JOBS]
    if rest:
        parts.append(fio.run_fio(jobfiles, output=output, timeout=timeout, sections=rest,
                                 user=user))
    data = dict(parts[0]) if parts else {}
    data["jobs"] = [j for part in parts for j in part.get("jobs") or []]
    return data, found


def run_probe(cell, target, *, cluster=None, workdir: Path, sink: Sink | None,
              raw_dir: Path | None = None, hosts: Sequence[str] | str | None = None,
              patterns: Sequence[str] | None = None, device: DeviceCounter | None = None,
              levels: Sequence[int] = ()) -> list[dict]:
    """Run the cell's fio probe against ``target``; write PROBE rows (and a FINDING when direct
    I/O is not possible) to ``sink``; keep the job files and fio's JSON+ in ``raw_dir``.

    ``device``: the storage device's cumulative (write IOs, write bytes), where the caller can
    count them (the OSDs' device, e.g. their blkio group). Each write job then runs alone and its
    row carries ``device_write_iops``/``device_write_Bps``: what it made the device do, the
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
    prefixes = _prefixes(cell, hosts, run=secrets.token_hex(4))
    findings: list[dict] = []
    rados_engine = target.fio_engine == "rados"
    # a local fio writing in another user's dir runs as that user (xcbench.probe.dirowner)
    owner = None if rados_engine or hosts else dirowner.owner_of(target.path)
    direct = True
    names: list[str] = []
    conf = _probe_conf(cluster, workdir) if cluster is not None and target.pool else None
    if rados_engine:
        texts = render_jobs(cell, target, p, prefixes=prefixes, conf=conf,
                            client_id=cluster.client_id)
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
    for pre, text in zip(_prefixes(cell, hosts), texts, strict=True):
        jf = raw_dir / f"{pre}.fio"
        jf.write_text(text)
        jobfiles.append(jf)
    output = raw_dir / f"{PREFIX}.{cell.id}.json"
    per_job = p["runtime"] + (p["ramp"] if isinstance(p["ramp"], int) else 0)
    timeout = len(p["jobs"]) * per_job + 300
    names += level_probes.pool_objects(cell, target, levels, prefixes[0]) if conf else []
    level_rows: list[dict] = []
    try:
        if rados_engine and any(j in READ_JOBS for j in p["jobs"]):
            _prefill(cluster, target.pool, [n for n in names if n.split(".")[-3] in READ_JOBS],
                     p["object_size"])
        dev: dict[str, tuple[float, float]] = {}
        if device is not None and not hosts and any(j in WRITE_JOBS for j in p["jobs"]):
            data, dev = _counted_jobs(jobfiles, output, p["jobs"], timeout, device, owner)
        elif p["jobs"]:
            data = fio.run_fio(jobfiles, output=output, hosts=hosts or None, timeout=timeout,
                               user=owner)
        else:
            data = {"jobs": []}
        if levels:
            last = [float(j.get("write", {}).get("bw_bytes") or 0) for j in data.get("jobs") or []]
            level_rows = level_probes.run_levels(
                cell, target, levels, cluster=cluster, raw_dir=raw_dir, prefix=prefixes[0],
                conf=conf, client_id=getattr(cluster, "client_id", None),
                prev_bw=max(last) if last else None)
    finally:
        if names:
            remove_objects(cluster, target.pool, names)
        if not rados_engine:
            remove_files(target.path, prefixes)
    rows = fio.parse(data, cell_id=cell.id, jobfile=texts[0])
    for r in rows:
        r["device_write_iops"], r["device_write_Bps"] = dev.get(r["job"], (math.nan, math.nan))
    rows += level_rows
    if sink is not None:
        if findings:
            sink("findings", findings)
        sink("probes", rows)
    return rows
