"""Slurm's own client commands (sinfo, squeue, scontrol, scancel), their answers parsed strictly.

Every query asks for a fixed ``-o`` format of ``|``-separated fields (the free-text field last)
and every line must have that shape: an answer that does not parse is one XcbError line naming
the command, never a guess. No Slurm library: the CLI is what every site has, at every version
(its ``--json`` output changes shape between releases; these formats have not).

    ping()                           XcbError (one line) when no controller answers
    partitions()                     {name: {"default", "state", "nodes"}}
    job(jobid) / jobs_named(name)    JobInfo (state, reason, nodes) or None once gone
    steps(jobid)                     [StepInfo] (step id, name, nodes)
    node_addresses(names)            {node: address} (NodeAddr, resolved to an IP)
    hostnames(expr)                  "sn[1-3]" -> ["sn1", "sn2", "sn3"]
    cancel(ids)                      scancel, quietly (a job already gone is no error)
"""

from __future__ import annotations

import getpass
import ipaddress
import re
import shutil
import socket
from dataclasses import dataclass

from xcbench.errors import XcbError
from xcbench.system import proc

TIMEOUT = 30.0  # s a query may take (a busy controller answers within MessageTimeout)
JOB_RE = re.compile(r"^\d+$")
STEP_RE = re.compile(r"^\d+\.(\d+|batch|extern|interactive)$")
NODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
# job states squeue prints with %T (long form); anything else is not an answer of squeue
STATES = frozenset((
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE", "FAILED",
    "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "RESV_DEL_HOLD", "REQUEUE_FED",
    "REQUEUE_HOLD", "REQUEUED", "RESIZING", "REVOKED", "RUNNING", "SIGNALING", "SPECIAL_EXIT",
    "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT"))
ENDED = frozenset(("BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
                   "OUT_OF_MEMORY", "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT"))
TOOLS = ("srun", "salloc", "squeue", "sinfo", "scontrol", "scancel")


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    name: str
    state: str
    reason: str  # squeue's %r: why a job waits ("Resources", "Priority", "PartitionDown"...)
    nodes: str  # the node list expression ("sn[1-3]"), "" while pending
    partition: str

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"

    @property
    def ended(self) -> bool:
        return self.state in ENDED


@dataclass(frozen=True)
class StepInfo:
    step_id: str  # "12.3"
    name: str
    nodes: str


def missing() -> str | None:
    """Why Slurm's client commands cannot be used here (None: they are all on the PATH)."""
    gone = [t for t in TOOLS if shutil.which(t) is None]
    if gone:
        return (f"no Slurm here: {', '.join(gone)} not found (Slurm's client commands, Debian "
                f"package slurm-client; on a cluster: the login node's PATH or `module load slurm`)")
    return None


def _run(argv: list[str], what: str, *, check: bool = True) -> proc.Completed:
    why = missing()
    if why:
        raise XcbError(why)
    out = proc.run(argv, check=False, timeout=TIMEOUT)
    if check and out.returncode != 0:
        lines = [ln.strip() for ln in (out.stderr or out.stdout).splitlines() if ln.strip()]
        raise XcbError(f"Slurm: {what}: `{' '.join(argv[:2])}` failed (exit {out.returncode}): "
                       f"{lines[-1] if lines else 'no message'}")
    return out


def _fields(text: str, n: int, what: str) -> list[list[str]]:
    """Each non-empty line split into exactly ``n`` fields (the last one may hold '|')."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", n - 1)
        if len(parts) != n:
            raise XcbError(f"Slurm: {what}: an answer line not of {n} fields: {line[:120]!r}")
        rows.append([p.strip() for p in parts])
    return rows


def ping() -> None:
    """XcbError (one line) unless a Slurm controller answers."""
    out = _run(["scontrol", "ping"], "controller", check=False)
    text = (out.stdout + out.stderr).strip()
    if out.returncode != 0 or " is UP" not in text:
        last = text.splitlines()[-1] if text else f"exit {out.returncode}"
        raise XcbError(f"Slurm: no controller answers (`scontrol ping`: {last})")


def partitions() -> dict[str, dict]:
    """{partition: {"default": bool, "state": "up"|..., "nodes": int}}"""
    out = _run(["sinfo", "-h", "-o", "%P|%a|%D"], "partitions")
    found: dict[str, dict] = {}
    for name, avail, count in _fields(out.stdout, 3, "sinfo partitions"):
        default = name.endswith("*")
        name = name.rstrip("*")
        if not NAME_RE.match(name) or not count.isdigit():
            raise XcbError(f"Slurm: sinfo: {name!r} / {count!r} is not a partition and a node count")
        entry = found.setdefault(name, {"default": False, "state": avail, "nodes": 0})
        entry["default"] = entry["default"] or default
        entry["nodes"] += int(count)
    return found


_JOB_FORMAT = "%i|%T|%P|%N|%r|%j"  # the name (free text) last


def _jobs(argv: list[str], what: str) -> list[JobInfo]:
    out = _run(["squeue", "-h", *argv, "-o", _JOB_FORMAT], what, check=False)
    if out.returncode != 0:
        if "Invalid job id" in out.stderr:
            return []  # gone from the controller's memory: ended
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        raise XcbError(f"Slurm: {what}: squeue failed (exit {out.returncode}): "
                       f"{lines[-1] if lines else 'no message'}")
    jobs = []
    for jid, state, part, nodes, reason, name in _fields(out.stdout, 6, what):
        if not JOB_RE.match(jid) or state not in STATES:
            raise XcbError(f"Slurm: {what}: {jid!r} in state {state!r} is not a job squeue lists")
        jobs.append(JobInfo(jid, name, state, reason, nodes, part))
    return jobs


def job(job_id: str) -> JobInfo | None:
    """The job ``job_id`` (None: the controller no longer knows it: it ended)."""
    if not JOB_RE.match(str(job_id)):
        raise XcbError(f"Slurm: {job_id!r} is not a job id")
    found = [j for j in _jobs(["-j", str(job_id), "--states=all"], f"job {job_id}")
             if j.job_id == str(job_id)]
    return found[0] if found else None


def jobs_named(name: str) -> list[JobInfo]:
    """This user's jobs named ``name`` that are not over."""
    return _jobs(["-n", name, "-u", getpass.getuser()], f"jobs named {name}")


def steps(job_id: str) -> list[StepInfo]:
    """The running steps of job ``job_id``."""
    out = _run(["squeue", "-h", "-s", "-j", str(job_id), "-o", "%i|%N|%j"], f"steps of job {job_id}",
               check=False)
    if out.returncode != 0:
        return []  # the job is gone, and its steps with it
    found = []
    for sid, nodes, name in _fields(out.stdout, 3, f"steps of job {job_id}"):
        if not STEP_RE.match(sid):
            raise XcbError(f"Slurm: squeue: {sid!r} is not a step id")
        found.append(StepInfo(sid, name, nodes))
    return found


def hostnames(expr: str) -> list[str]:
    """A node list expression expanded ("sn[1-3],gw1" -> [sn1, sn2, sn3, gw1])."""
    out = _run(["scontrol", "show", "hostnames", expr], f"node list {expr}")
    names = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
    for n in names:
        if not NODE_RE.match(n):
            raise XcbError(f"Slurm: scontrol show hostnames: {n!r} is not a node name")
    return names


def node_addresses(names: list[str]) -> dict[str, str]:
    """{node: IP address} from each node's NodeAddr (a host name there is resolved here)."""
    out = _run(["sinfo", "-h", "-N", "-n", ",".join(names), "-o", "%N|%o"], "node addresses")
    found: dict[str, str] = {}
    for node, addr in _fields(out.stdout, 2, "sinfo node addresses"):
        if node in names:
            found[node] = _ip(node, addr)
    lost = [n for n in names if n not in found]
    if lost:
        raise XcbError(f"Slurm: sinfo does not list node {lost[0]}")
    return found


def _ip(node: str, addr: str) -> str:
    try:
        return str(ipaddress.ip_address(addr))
    except ValueError:
        pass
    try:
        return str(socket.getaddrinfo(addr, None, type=socket.SOCK_STREAM)[0][4][0])
    except (OSError, IndexError):
        raise XcbError(f"Slurm: node {node}: its NodeAddr {addr!r} does not resolve here") from None


def cancel(ids: list[str], *, signal: str | None = None) -> None:
    """scancel each id (a job or a step); one already gone is not an error."""
    ids = [i for i in ids if JOB_RE.match(i) or STEP_RE.match(i)]
    if ids:
        _run(["scancel", "-Q", *([f"--signal={signal}"] if signal else []), *ids], "scancel",
             check=False)
