"""fio: the command line, the run, and the JSON+ parser that turns fio's output into PROBE rows.

fio is run with ``--output-format=json+ --output=FILE``; FILE is kept as the raw record. json+
adds the full latency histograms (``bins``) to the JSON, which is what lets the aggregate of a
client/server run have exact percentiles: merging the hosts' bins and walking them the way fio
does (first bin whose cumulative count reaches p% of N) gives fio's own figures for one host.

Row figures come straight from fio's JSON (per job and data direction, ``group_reporting`` on):
iops = ``iops``, bw = ``bw_bytes`` (bytes/s), runtime_s = ``runtime``/1000, latency from
``lat_ns`` (total latency: the templates set ``lat_percentiles=1``; ``clat_ns`` percentiles are
the fallback), errors = ``total_err`` (counted under ``continue_on_error``) or 1 if the job
stopped on an error, ss_reached = ``steadystate.attained`` (None when no steady state was asked),
engine/direct = the job's ``ioengine``/``direct`` options.

Hosts: a local run gives host "local"; a client/server run gives one row per server
("ip:port", as fio reports it) plus an aggregate row with host "all".
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.figures.units import parse_size
from xcbench.system import proc
from xcbench.system.fsutil import write_file
from xcbench.system.xrootd_user import run_as

DEFAULT_PORT = 8765  # fio --server's default port
LOCAL = "local"
ALL = "all"
_DDIRS = ("read", "write", "trim")
# which data directions a job's rw= setting drives
_RW_DDIRS = {"read": ("read",), "randread": ("read",), "write": ("write",),
             "randwrite": ("write",), "trim": ("trim",), "randtrim": ("trim",),
             "rw": ("read", "write"), "readwrite": ("read", "write"),
             "randrw": ("read", "write"), "trimwrite": ("trim", "write")}
PERCENTILES = (50.0, 99.0, 99.9)
_NONFINITE = re.compile(r'"(?:[^"\\]|\\.)*"|([:\[,]\s*)(-?nan|-?inf)\b')  # strings skipped
_JSON_NONFINITE = {"nan": "NaN", "-nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


# --- the command --------------------------------------------------------------------------

def client_arg(host: str) -> str:
    """``host[:port]`` as the user writes it -> fio's ``--client`` form ``host[,port]``."""
    host = host.strip()
    name, sep, port = host.rpartition(":")
    if sep and port.isdigit() and name and ":" not in name:
        return f"{name},{port}"
    if not host or ":" in host:
        raise XcbError(f"--fio-hosts: {host!r} is not host or host:port")
    return host


def check_fio(engine: str | None = None) -> str:
    """fio's version string; XcbError if fio is missing or lacks ``engine`` (e.g. "rados")."""
    proc.which("fio")
    version = proc.run(["fio", "--version"], timeout=30).stdout.strip()
    if engine:
        cp = proc.run(["fio", f"--enghelp={engine}"], timeout=30, check=False)
        if cp.returncode != 0:
            raise XcbError(f"fio: this fio ({version}) has no {engine} ioengine "
                           f"(Debian's fio package has it)")
    return version


def command(jobfiles: Sequence[str | os.PathLike], *, output: str | os.PathLike,
            hosts: Sequence[str] | None = None, sections: Sequence[str] = ()) -> list[str]:
    """fio's argv. With ``hosts``: ``--client=h1 job1 --client=h2 job2`` (one job file per host,
    so each host writes its own files/objects). ``sections``: run only these jobs of the file."""
    cmd = ["fio", "--output-format=json+", f"--output={output}"] + [f"--section={s}" for s in sections]
    if not hosts:
        if len(jobfiles) != 1:
            raise ValueError("a local fio run takes one job file")
        return cmd + [str(jobfiles[0])]
    if len(hosts) != len(jobfiles):
        raise ValueError("one job file per host")
    for host, jf in zip(hosts, jobfiles, strict=True):
        cmd += [f"--client={client_arg(host)}", str(jf)]
    return cmd


def run_fio(jobfiles: Sequence[str | os.PathLike], *, output: str | os.PathLike,
            hosts: Sequence[str] | None = None, timeout: float | None = None,
            env: Mapping[str, str] | None = None, sections: Sequence[str] = (),
            user: tuple[int, int] | None = None) -> dict[str, Any]:
    """Run fio, keep its JSON+ output in ``output``, return the decoded JSON.

    ``user``: (uid, gid) a local fio runs as (the owner of the directory it writes in,
    xcbench.probe.dirowner), isolated as xcbench.system.xrootd_user.run_as starts it; it reads
    the job file on stdin and writes its JSON to stdout, and we keep that in ``output``.

    A non-zero exit with usable JSON is not an error here: fio exits 2 when a job hit an I/O
    error, and that is recorded in the rows' ``errors``. No JSON at all is an XcbError."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)  # never parse an earlier run's output as this one's
    if user is not None:
        if hosts or len(jobfiles) != 1:
            raise ValueError("fio as another user: one local job file")
        cmd = ["fio", "--output-format=json+", *(f"--section={s}" for s in sections), "-"]
        cp = run_as(user, cmd, timeout=timeout, check=False, input=Path(jobfiles[0]).read_text())
        write_file(output, cp.stdout, new=True)
    else:
        cmd = command(jobfiles, output=output, hosts=hosts, sections=sections)
        cp = proc.run(cmd, timeout=timeout, check=False, env=env)
    try:
        return load_output(output.read_text())
    except (OSError, ValueError) as e:
        why = proc._last_line(cp.stderr) or proc._last_line(cp.stdout) or str(e)
        raise XcbError(f"fio {Path(jobfiles[0]).name}: no JSON output (exit {cp.returncode}): "
                       f"{why}") from e


def load_output(text: str) -> dict[str, Any]:
    """The JSON object in fio's output. In client/server mode fio writes the servers' text
    lines ("<host> Starting 1 process") before the JSON, and error lines may follow it."""
    start = 0 if text.startswith("{") else text.find("\n{")
    if start < 0:
        raise ValueError("no JSON object in fio output")
    # fio prints C's nan/inf bare (e.g. a steady-state "slope" : -nan): not JSON
    body = _NONFINITE.sub(lambda m: m.group(1) + _JSON_NONFINITE[m.group(2)] if m.group(2)
                          else m.group(0), text[start:].lstrip())
    data, _ = json.JSONDecoder().raw_decode(body)
    if not isinstance(data, dict) or not ("jobs" in data or "client_stats" in data):
        raise ValueError("fio output has neither 'jobs' nor 'client_stats'")
    return data


def load_file(path: str | os.PathLike) -> dict[str, Any]:
    try:
        return load_output(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise XcbError(f"{path}: not fio JSON output ({e})") from e


# --- the parser ---------------------------------------------------------------------------

def percentile_from_bins(bins: Mapping[Any, int], pct: float) -> int | None:
    """fio's own rule over a json+ histogram: the first bin value whose cumulative count
    reaches pct/100 of all samples."""
    items = sorted((int(k), int(v)) for k, v in bins.items())
    total = sum(v for _, v in items)
    if not total:
        return None
    acc = 0
    for value, count in items:
        acc += count
        if acc >= pct / 100.0 * total:
            return value
    return items[-1][0]


def _pct(percentiles: Mapping[str, Any] | None, pct: float) -> float | None:
    for key, value in (percentiles or {}).items():
        if abs(float(key) - pct) < 1e-6:
            return float(value)
    return None


def _latency(stats: Mapping[str, Any]) -> tuple[dict, str]:
    """The latency block to report: total latency if fio computed its percentiles, else clat."""
    lat = stats.get("lat_ns") or {}
    if "percentile" in lat or "percentile" not in (stats.get("clat_ns") or {}):
        return lat, "lat_ns"
    return stats["clat_ns"], "clat_ns"


def _opt(job: Mapping[str, Any], glob: Mapping[str, Any], key: str, default: Any = None) -> Any:
    opts = job.get("job options") or {}
    return opts.get(key, glob.get(key, default))


def jobfile_options(text: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(global options, {job name: options}) of a fio job file. In client/server mode fio's JSON
    omits "job options" for all but the first group, so the parser takes them from here."""
    glob: dict[str, str] = {}
    jobs: dict[str, dict[str, str]] = {}
    cur: dict[str, str] | None = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("[") and line.endswith("]"):
            name = line[1:-1].strip()
            cur = glob if name == "global" else jobs.setdefault(name, {})
            continue
        if cur is not None:
            key, _, value = line.partition("=")
            cur[key.strip()] = value.strip() if _ else "1"
    return glob, jobs


def _bs(job: Mapping, glob: Mapping, ddir: str) -> int | None:
    raw = _opt(job, glob, "bs", _opt(job, glob, "blocksize"))
    if raw is None:  # not in the options we have: fio's default, or what the I/O says
        st = job.get(ddir) or {}
        n, ios = int(st.get("io_bytes", 0)), int(st.get("total_ios", 0))
        return n // ios if ios and n % ios == 0 else 4096 if not ios else None
    parts = str(raw).split(",")
    idx = _DDIRS.index(ddir)
    try:
        return parse_size(parts[idx] if idx < len(parts) and parts[idx] else parts[0])
    except ValueError:
        return None  # a bs range such as 4k-16k


def _int_opt(job: Mapping, glob: Mapping, key: str, default: int) -> int:
    try:
        return int(_opt(job, glob, key, default))
    except (TypeError, ValueError):
        return default


def _errors(job: Mapping[str, Any]) -> int:
    if "total_err" in job:
        return int(job["total_err"]) or (1 if job.get("error") else 0)
    return 1 if job.get("error") else 0


def _ss(job: Mapping[str, Any]) -> bool | None:
    ss = job.get("steadystate")
    return None if ss is None else bool(ss.get("attained"))


def _ddirs(job: Mapping[str, Any], glob: Mapping[str, Any]) -> tuple[str, ...]:
    rw = _rw(job, glob)
    if rw in _RW_DDIRS:
        return _RW_DDIRS[rw]
    return tuple(d for d in _DDIRS if job.get(d, {}).get("total_ios")) or ("read",)


def _rw(job: Mapping, glob: Mapping) -> str | None:
    rw = _opt(job, glob, "rw", _opt(job, glob, "readwrite"))
    return None if rw is None else str(rw).split(":")[0]  # rw=randread:8 (offset modifier)


def _rw_label(job: Mapping, glob: Mapping, ddir: str, ndirs: int) -> str:
    rw = _rw(job, glob) or ddir
    return rw if ndirs == 1 else f"{rw}.{ddir}"


def _row(cell_id: str, job: Mapping, glob: Mapping, ddir: str, ndirs: int, host: str) -> dict:
    st = job[ddir]
    lat, _ = _latency(st)
    pcts = lat.get("percentile")
    ns_to_us = 1e-3

    def pus(p: float) -> float | None:
        v = _pct(pcts, p)
        return None if v is None else v * ns_to_us

    return {
        "cell_id": cell_id, "job": job["jobname"], "host": host,
        "rw": _rw_label(job, glob, ddir, ndirs), "bs": _bs(job, glob, ddir),
        "iodepth": _int_opt(job, glob, "iodepth", 1), "numjobs": _int_opt(job, glob, "numjobs", 1),
        "iops": float(st["iops"]), "bw": int(st["bw_bytes"]),
        "lat_mean_us": float(lat.get("mean", 0.0)) * ns_to_us if lat.get("N") else None,
        "lat_p50_us": pus(50.0), "lat_p99_us": pus(99.0), "lat_p999_us": pus(99.9),
        "runtime_s": st["runtime"] / 1000.0, "errors": _errors(job), "ss_reached": _ss(job),
        "engine": str(_opt(job, glob, "ioengine", "psync")),
        "direct": str(_opt(job, glob, "direct", "0")).lower() in ("1", "true"),
        # filled by the probe where the storage device's writes were counted during the job
        "device_write_iops": math.nan, "device_write_bytes_per_s": math.nan,
        # filled by a level probe (xcbench.probe.levels); None/NaN for the cell's own jobs
        "concurrency": None, "target": None, "bw_steady": math.nan, "bw_cv": math.nan,
        "bw_n": 0, "bw_rel_se": math.nan, "host_busy": math.nan, "host_cores": None,
        "osd_cores": math.nan, "wall_s": math.nan, "settle_s": math.nan, "settled": None,
        "settle_rate": math.nan, "objects_per_job": None, "objects_ran_out": None,
    }


def _aggregate(cell_id: str, parts: list[tuple[Mapping, Mapping]], ddir: str, ndirs: int) -> dict:
    """The 'all' row of one job over the hosts of a client/server run: rates add up,
    latency means are weighted by sample counts, percentiles come from the merged bins."""
    job0, glob = parts[0]
    row = _row(cell_id, job0, glob, ddir, ndirs, ALL)
    stats = [job[ddir] for job, _ in parts]
    lats = [_latency(st) for st in stats]
    n = sum(int(lat.get("N", 0)) for lat, _ in lats)
    bins: dict[int, int] = defaultdict(int)
    for lat, _ in lats:
        for k, v in (lat.get("bins") or {}).items():
            bins[int(k)] += int(v)
    pct = {p: percentile_from_bins(bins, p) for p in PERCENTILES} if bins else {}
    p50, p99, p999 = (pct.get(p) for p in (50.0, 99.0, 99.9))
    row.update(
        iops=sum(float(st["iops"]) for st in stats),
        bw=sum(int(st["bw_bytes"]) for st in stats),
        lat_mean_us=(sum(float(lat.get("mean", 0.0)) * int(lat.get("N", 0)) for lat, _ in lats)
                     / n * 1e-3) if n else None,
        lat_p50_us=None if p50 is None else p50 * 1e-3,
        lat_p99_us=None if p99 is None else p99 * 1e-3,
        lat_p999_us=None if p999 is None else p999 * 1e-3,
        runtime_s=max(st["runtime"] for st in stats) / 1000.0,
        errors=sum(_errors(job) for job, _ in parts),
        numjobs=sum(_int_opt(job, g, "numjobs", 1) for job, g in parts),
    )
    ss = [_ss(job) for job, _ in parts]
    row["ss_reached"] = None if all(s is None for s in ss) else all(bool(s) for s in ss)
    return row


def parse(data: Mapping[str, Any], *, cell_id: str, local_host: str = LOCAL,
          jobfile: str | None = None) -> list[dict]:
    """PROBE rows (xcbench.store.tables.PROBE) from fio's decoded JSON (local or client/server).
    ``jobfile``: the text of the job file, for options fio's JSON leaves out."""
    glob = dict(data.get("global options") or {})
    if jobfile is not None:
        fglob, fjobs = jobfile_options(jobfile)
        glob = {**fglob, **glob}
        data = _with_options(data, fjobs)
    rows: list[dict] = []
    if "client_stats" not in data:
        for job in data.get("jobs", []):
            dirs = _ddirs(job, glob)
            rows += [_row(cell_id, job, glob, d, len(dirs), local_host) for d in dirs]
        return rows
    by_job: dict[str, list[Mapping]] = defaultdict(list)
    for job in data["client_stats"]:
        if job.get("jobname") == "All clients":  # fio's sum over every group: not per job
            continue
        by_job[job["jobname"]].append(job)
    for jobs in by_job.values():
        dirs = _ddirs(jobs[0], glob)
        for d in dirs:
            for job in jobs:
                rows.append(_row(cell_id, job, glob, d, len(dirs),
                                 f"{job.get('hostname', '?')}:{job.get('port', DEFAULT_PORT)}"))
            rows.append(_aggregate(cell_id, [(j, glob) for j in jobs], d, len(dirs)))
    return rows


def _with_options(data: Mapping[str, Any], fjobs: Mapping[str, Mapping[str, str]]) -> dict:
    """A copy of ``data`` whose jobs carry the job file's options under fio's own."""
    out = dict(data)
    for key in ("jobs", "client_stats"):
        if key in data:
            out[key] = [{**job, "job options": {**fjobs.get(job.get("jobname"), {}),
                                                **(job.get("job options") or {})}}
                        for job in data[key]]
    return out


def summary(rows: Iterable[Mapping[str, Any]]) -> list[dict]:
    """One row per (cell, job, rw): the 'all' row of a client/server run, else the local row."""
    best: dict[tuple, Mapping] = {}
    for r in rows:
        key = (r["cell_id"], r["job"], r["rw"])
        if key not in best or r["host"] == ALL:
            best[key] = r
    return [dict(r) for r in best.values()]

