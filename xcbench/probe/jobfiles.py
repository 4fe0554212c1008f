"""A probe's fio job files for a cell's target, the objects and files they write, and their
removal: the target checked before fio runs, objects named exactly (fio's rados engine deletes a
job's objects when the job ends, but not when fio is killed), files by their prefix.
"""

from __future__ import annotations

import errno
import math
import mmap
import os
import secrets
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.probe import dirowner, fio
from xcbench.system import proc
from xcbench.system.templates import render

PREFIX = "xcb-probe"
MIN_IOPS_OBJECTS = 16  # 4 KiB random writes spread over at least this many objects per job
PREFILL_CHUNK = 8 << 20
READ_JOBS = ("read", "randread")  # jobs whose objects xcbench writes first (rados)
TEMPLATES = "xcbench.fio_jobs"


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


def probe_conf(cluster, workdir: Path) -> str:
    """The ceph.conf fio's rados engine reads. fio has no keyring option and reads only the
    conf file: when the cluster handle carries a keyring the conf does not name, write a copy
    that names it in the client's section."""
    conf = Path(cluster.conf)
    keyring = getattr(cluster, "keyring", None)
    if not keyring:
        return str(conf)
    found = proc.run(["ceph-conf", "-c", conf, "--name", f"client.{cluster.ceph_id}",
                      "--lookup", "keyring"], check=False, timeout=30).stdout.strip()
    if Path(found).resolve() == Path(keyring).resolve():  # the conf already names it
        return str(conf)
    text = conf.read_text()
    section = f"[client.{cluster.ceph_id}]"
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


def name_prefixes(cell, hosts: list[str], run: str = "") -> list[str]:
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
                ceph_id: str | None = None, direct: bool = True) -> list[str]:
    """One job file text per host (per prefix)."""
    common = {"cell_id": cell.id, "label": cell.label, "patterns": p["patterns"],
              "runtime": p["runtime"], "ramp": p["ramp"], "numjobs": p["numjobs"],
              "bw_bs": p["bw_bs"], "ss": p["ss_spec"], "rr_bs": p.get("rr_bs")}
    out = []
    for pre in prefixes:
        if target.fio_engine == "rados":
            bw, iops = _rados_objects(p)
            out.append(render(TEMPLATES, "rados.fio.j2", **common, conf=conf, ceph_id=ceph_id,
                              pool=target.pool, prefix=pre, iodepth=p["iodepth"], objects=bw,
                              iops_objects=iops, object_size=p["object_size"]))
        else:
            out.append(render(TEMPLATES, "files.fio.j2", **common, directory=target.path,
                              prefix=pre, ioengine="libaio" if direct else "psync",
                              direct=int(direct), iodepth=p["iodepth"] if direct else 1,
                              file_size=p["size"]))
    return out


def prefill(cluster, pool: str, names: list[str], object_size: int) -> None:
    """Write the objects the read job reads (fio's rados engine cannot lay them out)."""
    io = cluster.ioctx(pool)
    chunk = os.urandom(min(object_size, PREFILL_CHUNK))
    for name in names:
        off = 0
        while off < object_size:
            n = min(len(chunk), object_size - off)
            io.write(name, chunk[:n], off)
            off += n


AIO_BATCH = 256  # removals in flight at once (a level probe names thousands of objects)


def remove_objects(cluster, pool: str, names: list[str]) -> int:
    """Remove the named objects (absent ones are fine), AIO_BATCH at a time; returns how many
    existed."""
    io = cluster.ioctx(pool)
    removed = 0
    for i in range(0, len(names), AIO_BATCH):
        done = [io.aio_remove(n) for n in names[i:i + AIO_BATCH]]
        for c in done:
            c.wait_for_complete()
            removed += c.get_return_value() == 0  # -ENOENT: it was not there
    return removed


def remove_files(directory: str | os.PathLike, prefixes: list[str]) -> int:
    """What fio left in ``directory`` (``<prefix>.*``), removed without following a link."""
    return dirowner.remove_files(directory, prefixes)
