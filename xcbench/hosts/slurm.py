"""Nodes from Slurm: an inventory's ``slurm:`` section, the allocation it asks for (or the one
this command runs in), and its nodes as the run's hosts (transport ``slurm``: job steps,
xcbench.hosts.steps).

    slurm: {partition: batch, nodes: 4, time: "1:00:00", account: ska, constraint: ib,
            cpus_per_task: 8, gateways: 1, start_timeout: 10m}

- Inside an allocation (``SLURM_JOB_ID`` set, e.g. under ``salloc``), xcbench takes that
  allocation's nodes (the first ``nodes`` of them when the section says how many); else it asks
  for one with ``salloc`` and gives it back at the end.
- Roles: the first ``gateways`` nodes are gateway hosts (an origin on each, every origin's step
  under ``cpus_per_task``), the others client hosts. With no gateway node (the default) the
  gateway runs on this machine, at the address it reaches the nodes from.
- Nothing left: the allocation's job name and the steps' name prefix are written to
  ``<state>/slurm/<pid>.json`` before salloc or any step starts, the nodes and the run's scratch
  tag before the first step (xcbench.hosts.slurm_sweep); a salloc of ours holds the allocation
  only as long as this command's pipe to it is open (a kill -9 of the coordinator gives it
  back); the run cleans its nodes' scratch when it ends, and the next xcbench command
  (slurm_sweep.sweep) cancels what a killed one left and cleans its nodes.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.hosts import slurm_cli as cli
from xcbench.hosts.checks import check_versions
from xcbench.hosts.inventory import Host, Inventory
from xcbench.hosts.slurm_spec import SlurmRequest
from xcbench.hosts.slurm_sweep import Record, clean_nodes, cleaned_line, failed_line, gone
from xcbench.system import proc

LOCAL_GATEWAY = "coordinator"  # this machine (the gateway's host when no node has the role)


# --- the allocation -------------------------------------------------------------------------------
@dataclass
class Allocation:
    """A Slurm job whose nodes are the run's hosts; ``ours``: xcbench asked for it (and gives it
    back); ``steps``: every step launched in it (the manifest's ``slurm.steps``)."""
    job_id: str
    nodes: list[str]
    ours: bool
    prefix: str  # every step's name starts with it ("xcb-<tag>-")
    request: SlurmRequest
    addresses: dict[str, str] = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)
    holder: proc.Proc | None = None  # our salloc, holding the allocation while its stdin is open
    partition: str | None = None  # the job's (squeue's %P)
    lost: set[str] = field(default_factory=set)  # nodes lost mid-run: cleaned by a later command
    # the run's mark on what its agents make on a node (xcbench.system.scratch): every step has it
    scratch: str = field(default_factory=lambda: secrets.token_hex(8))
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _n: int = 0

    def step_name(self, node: str, what: str) -> str:
        """A new step's name (recorded for the manifest)."""
        with self.lock:
            self._n += 1
            name = f"{self.prefix}{re.sub(r'[^A-Za-z0-9_.-]', '', what)[:24]}-{node}-{self._n}"
            self.steps.append({"name": name, "node": node, "what": what, "started": time.time()})
            return name

    def entry(self) -> dict[str, Any]:
        """What the record holds of it before the first step (xcbench.hosts.slurm_sweep)."""
        return {"job": self.job_id, "ours": self.ours, "prefix": self.prefix,
                "nodes": list(self.nodes), "scratch": self.scratch, "partition": self.partition,
                "account": self.request.account, "xcbench": list(node_xcbench(self.request))}

    def describe(self) -> dict[str, Any]:
        with self.lock:
            return {"job_id": self.job_id, "ours": self.ours, "nodes": list(self.nodes),
                    "addresses": dict(self.addresses), "step_prefix": self.prefix,
                    "scratch_tag": self.scratch, "lost": sorted(self.lost),
                    "partition": self.request.partition, "cpus_per_task": self.request.cpus_per_task,
                    "steps": [dict(s) for s in self.steps]}


def _tag() -> str:
    return f"xcb-{os.getpid()}-{secrets.token_hex(2)}-"


def node_xcbench(req: SlurmRequest) -> tuple[str, ...]:
    """How a node runs xcbench: the section's ``xcbench``, else this very installation (a
    shared filesystem, as at HPC sites)."""
    return req.xcbench or (sys.executable, "-m", "xcbench")


def take(req: SlurmRequest, job_id: str, record: Record) -> Allocation:
    """The allocation this command runs in (``SLURM_JOB_ID``)."""
    if not cli.JOB_RE.match(job_id):
        raise XcbError(f"SLURM_JOB_ID={job_id!r} is not a job id")
    info = cli.job(job_id)
    if info is None or not info.running:
        state = f"{info.state} ({info.reason})" if info else "not known to the controller"
        raise XcbError(f"{req.source}: slurm: the allocation this command runs in (job {job_id}) "
                       f"is {state}, not running")
    nodes = cli.hostnames(info.nodes)
    if req.nodes is not None and req.nodes > len(nodes):
        raise XcbError(f"{req.source}: slurm: nodes: {req.nodes} asked, the allocation (job "
                       f"{job_id}) has {len(nodes)} ({info.nodes})")
    nodes = nodes[:req.nodes] if req.nodes else nodes
    alloc = Allocation(job_id, nodes, False, _tag(), req, partition=info.partition or None)
    record.add(**alloc.entry())  # before any step starts
    return alloc


def make(req: SlurmRequest, record: Record, procs: proc.ProcessSet | None = None,
         log: Path | None = None) -> Allocation:
    """Ask Slurm for an allocation (salloc) and wait until it starts, at most ``start_timeout``
    s: else it is cancelled and the one line says why it waits (squeue's reason)."""
    parts = cli.partitions()
    if req.partition is not None and req.partition not in parts:
        raise XcbError(f"{req.source}: slurm: partition: {req.partition!r} is not a partition of "
                       f"this cluster (sinfo lists {', '.join(sorted(parts)) or 'none'})")
    prefix = _tag()
    name = prefix.rstrip("-")
    record.add(name=name, ours=True, prefix=prefix)  # before salloc: the next command finds it
    # the allocation lives while this pipe is open: salloc's command ends at its EOF, and
    # salloc then gives the allocation back (also when this process is killed with -9)
    hold = ["sh", "-c", 'echo "xcb-granted $SLURM_JOB_ID"; exec cat >/dev/null']
    p = proc.spawn(["salloc", f"--job-name={name}", *req.salloc_options(), "--", *hold],
                   name="salloc", log=log, procs=procs, pipe=True, stdin=True)
    try:
        job_id = _wait_granted(p, name, req)
        info = cli.job(job_id)
        nodes = cli.hostnames(info.nodes) if info else []
        if not nodes:
            raise XcbError(f"{req.source}: slurm: job {job_id} started with no node")
    except BaseException:
        _give_back(p, name, procs)
        raise
    alloc = Allocation(job_id, nodes, True, prefix, req, holder=p,
                       partition=(info.partition if info else None) or req.partition)
    record.add(**alloc.entry())  # before any step starts
    return alloc


def _wait_granted(p: proc.Proc, name: str, req: SlurmRequest) -> str:
    assert p.popen.stdout is not None
    got: dict[str, str] = {}

    def read() -> None:
        line = p.popen.stdout.readline().decode(errors="replace") if p.popen.stdout else ""
        got["line"] = line

    reader = threading.Thread(target=read, daemon=True, name="xcb-salloc")
    reader.start()
    deadline = time.monotonic() + req.start_timeout
    last = None
    while time.monotonic() < deadline:
        reader.join(timeout=1.0)
        if "line" in got:
            words = got["line"].split()
            if len(words) == 2 and words[0] == "xcb-granted" and cli.JOB_RE.match(words[1]):
                return words[1]
            break
        jobs = cli.jobs_named(name)
        last = jobs[0] if jobs else last
        if not p.alive():
            break
    if "line" in got or not p.alive():
        why = p.tail(1) or f"salloc exit {p.popen.poll()}"
        raise XcbError(f"{req.source}: slurm: no allocation: {why.removeprefix('salloc: ')}")
    where = f"partition {last.partition}" if last else "its partition"
    state = f"{last.state}, reason {last.reason}" if last else "not even queued"
    raise XcbError(f"{req.source}: slurm: the allocation ({where}) did not start within "
                   f"{req.start_timeout:g} s: squeue says {state}; cancelled")


def _give_back(p: proc.Proc, name: str, procs: proc.ProcessSet | None) -> None:
    with contextlib.suppress(OSError, ValueError):
        if p.popen.stdin:
            p.popen.stdin.close()
    with contextlib.suppress(XcbError):
        cli.cancel([j.job_id for j in cli.jobs_named(name)])
    proc.stop(p, timeout=10)
    if procs is not None:
        procs.discard(p)


def release(alloc: Allocation, procs: proc.ProcessSet | None = None,
            wait: float = 25.0) -> list[str]:
    """Cancel the steps still running, clean every node's scratch (node-clean as a step on
    each: what an agent killed by Slurm left), and give the allocation back when it is ours.
    The nodes that could not be cleaned (said in one line; the record keeps them)."""
    pending = list(alloc.nodes)
    with contextlib.suppress(XcbError):
        left = [s.step_id for s in cli.steps(alloc.job_id) if s.name.startswith(alloc.prefix)]
        cli.cancel(left)
        gone(alloc.job_id, alloc.prefix, wait if left else 0)  # their agents' own cleanup first
        lost = sorted(alloc.lost)  # a node that died: the next command, once it is back
        entry = {**alloc.entry(), "nodes": [n for n in alloc.nodes if n not in alloc.lost]}
        done, failed = clean_nodes(entry, running=True,
                                   names=lambda node: alloc.step_name(node, "node-clean"))
        pending = [*lost, *failed]
        said = cleaned_line(done)
        if said or failed:
            print(f"xcbench: warning: Slurm job {alloc.job_id}: "
                  + (f"removed what the run's agents left on their nodes ({said})" if said else "")
                  + ("; " if said and failed else "")
                  + (f"could not clean {failed_line(failed)} (the next xcbench command tries "
                     "again)" if failed else ""),
                  file=sys.stderr, flush=True)
    if alloc.ours and alloc.holder is not None:
        _give_back(alloc.holder, alloc.prefix.rstrip("-"), procs)
    return pending


# --- the run's hosts --------------------------------------------------------------------------
def source_address(dest: str) -> str:
    """This machine's address on its route to ``dest`` (no packet is sent)."""
    with socket.socket(socket.AF_INET6 if ":" in dest else socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((dest, 9))
            return str(s.getsockname()[0])
        except OSError as e:
            raise XcbError(f"slurm: no route from this machine to node address {dest}: {e}") from e


def node_hosts(alloc: Allocation) -> list[Host]:
    """The allocation's nodes as hosts: the first ``gateways`` gateway hosts, the rest clients."""
    req = alloc.request
    if req.gateways >= len(alloc.nodes):
        raise XcbError(f"{req.source}: slurm: gateways: {req.gateways} of the allocation's "
                       f"{len(alloc.nodes)} nodes leaves no client node")
    alloc.addresses = cli.node_addresses(alloc.nodes)
    xcb = node_xcbench(req)
    return [Host(n, ("gateway",) if i < req.gateways else ("client",), "slurm",
                 alloc.addresses[n], xcbench=xcb, slurm=alloc) for i, n in enumerate(alloc.nodes)]


def with_nodes(inv: Inventory, alloc: Allocation) -> Inventory:
    """``inv`` with the allocation's nodes as hosts (and, when no host is a gateway host, the
    gateway on this machine at the address it reaches the nodes from)."""
    hosts = [*inv.hosts, *node_hosts(alloc)]
    taken = {h.name for h in inv.hosts}
    clash = next((h.name for h in hosts[len(inv.hosts):] if h.name in taken), None)
    if clash:
        raise XcbError(f"{inv.source}: host {clash}: also a node of the allocation (job "
                       f"{alloc.job_id}): rename the host")
    # this machine, at the address it reaches the nodes from: the gateway's host when no node
    # is one; else a host with no role, so that the gateways let it in (xrd.allow: it asks each
    # origin for its counters)
    first = next(h for h in hosts if h.transport == "slurm")
    roles = () if any("gateway" in h.roles for h in hosts) else ("gateway",)
    hosts.insert(0, Host(LOCAL_GATEWAY, roles, "local", source_address(first.address)))
    return replace(inv, hosts=tuple(hosts), allocation=alloc)


def kind_of(manifest: dict) -> str | None:
    """How a run got its Slurm nodes: "make" (an allocation xcbench asked for), "take" (the
    one it ran in), None (no nodes from Slurm)."""
    alloc = ((manifest.get("hosts") or {}).get("slurm") if isinstance(manifest, dict) else None)
    if not isinstance(alloc, dict):
        return None
    return "make" if alloc.get("ours") else "take"


@contextlib.contextmanager
def nodes_of(inv: Inventory | None, kind: str | None = None) -> Iterator[Inventory | None]:
    """``inv`` with its ``slurm:`` section resolved into nodes for as long as the block runs
    (the same xcbench checked on every host first); the steps cancelled and an allocation
    xcbench asked for given back after, on any exit. Without a section: ``inv`` as it is.
    ``kind`` ("make", "take": a replay of a run, :func:`kind_of`): the allocation the run had;
    None: the one this command runs in (``SLURM_JOB_ID``), else a new one."""
    req = inv.slurm if inv is not None else None
    if inv is None or req is None:
        yield inv
        return
    job = os.environ.get("SLURM_JOB_ID")
    if kind == "take" and not job:
        raise XcbError(f"{req.source}: slurm: the run took its nodes from the allocation it ran "
                       "in: replay it inside one too (salloc ... xcbench ...)")
    cli.ping()
    record = Record()
    procs = proc.ProcessSet()
    alloc: Allocation | None = None
    pending: list[str] = []
    try:
        alloc = take(req, job, record) if job and kind != "make" else make(req, record, procs)
        nodes = with_nodes(inv, alloc)
        check_versions(nodes)
        yield nodes
    finally:
        if alloc is not None:
            pending = release(alloc, procs)
        procs.stop_all()
        record.done(pending)
