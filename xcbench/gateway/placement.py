"""Gateways on gateway hosts: each origin on a host of the inventory.

    gw = start_gateway(target, workdir=wd, cluster=c, origins=2, hosts=inventory)

Origin i (0-based) runs on gateway host ``i mod n``; with several origins the redirector (cmsd
manager + its xrootd) runs on the inventory's redirector host, else on the first gateway host.
Every daemon is started through its host's Transport and listens on that host's address only
(pre-bound by xcbench.system.sdlisten inside the host's network namespace; never a wildcard). What the
daemons read (configs, TLS, the gateway's ceph.conf and keyring copy) stays where it is when the
host shares this machine's files (local, netns: same files, same mounts, so tmpfs mounts and
ceph-fuse made in the root namespace are what the origin sees). When a host of the placement is
reached over ssh nothing is assumed shared: every part of the gateway then runs through a gateway
agent on its host (:func:`uses_agents`; xcbench.gateway.remote, xcbench.gateway.agent), which makes
there what the daemons read. A backend the agent cannot serve there is refused with one line
saying what it would need (Backend.remote_gateway_refusal).
A Ceph-client gateway (rados) on a netns host needs the cluster on an address that host reaches
(`xcbench cluster up --bind <bridge address>`): a loopback-only cluster is refused.

The pids of a netns host's daemons are pids of this machine: ``Server.pid`` is the daemon's own
pid (found below the spawned one), so the gateway sampler and the roles device read its CPU and
RSS, and xcbench.system.limits finds the host's cgroup quota as its limit.

:func:`origin_load` gives the per-origin evidence (files and bytes each origin received: from its
own directory when it has one, else from its own ``kXR_query stats``), and
:func:`origin_findings` a FINDING for an origin that got none.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psutil

from xcbench.cell import Cell
from xcbench.ceph import conf as cephconf
from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError
from xcbench.gateway.types import GatewayLike
from xcbench.hosts import transport_for
from xcbench.store.findings import finding
from xcbench.system import proc
from xcbench.system.ports import is_wildcard
from xcbench.telemetry.xrdreport import parse_report

if TYPE_CHECKING:
    from xcbench.backends.base import Target

# ports of emulated hosts are chosen here, not by binding in this namespace (a host's address
# is not one of this namespace's): a taken one makes sdlisten exit 98 and the start retry
PORT_RANGE = (20000, 29999)
SHARED_FS = ("local", "netns")


@dataclass(frozen=True)
class Slot:
    """Where one daemon of a placed gateway runs."""
    host: Any  # xcbench.hosts.Host
    transport: Any  # its Transport

    @property
    def addr(self) -> str:
        return str(self.host.address)


@dataclass
class Placement:
    """Hosts of a gateway's daemons: ``front`` (the standalone xrootd or the redirector) and
    one slot per origin; ``allow``: the hosts that may connect (xrd.allow)."""
    front: Slot
    origins: list[Slot]
    allow: tuple[str, ...]

    def slot(self, role: str, index: int) -> Slot:
        """The slot of a daemon: ``index`` is the origin's number (1-based; 0 = the front)."""
        return self.origins[index - 1] if role == "server" and index > 0 else self.front

    def port(self, used: set[int]) -> int:
        while True:
            p = random.randint(*PORT_RANGE)
            if p not in used:
                used.add(p)
                return p


def is_placed(hosts: Any) -> bool:
    """True when an inventory puts a gateway anywhere but this host's loopback (a local-only
    inventory keeps today's path unchanged)."""
    if hosts is None:
        return False
    return any(h.transport != "local" or h.address not in ("127.0.0.1", "localhost")
               for h in hosts.gateways)


def plan(hosts: Any, target: Target, cluster: Cluster | None, origins: int, bind: str | None,
         report_addr: str | None = None) -> Placement:
    """The placement of a gateway of ``origins`` origins on ``hosts``; XcbError (one line,
    naming the inventory and host) for what cannot run there, before anything starts."""
    where = getattr(hosts, "source", "hosts")
    gws = list(hosts.gateways)
    if not gws:
        raise XcbError(f"{where}: no host has the role gateway (cell {target.cell_id} needs one)")
    if bind is not None and is_wildcard(bind):
        raise XcbError(f"cell {target.cell_id}: gateway.bind: {bind} with gateway hosts; origins "
                       "listen on their host's address, never on a wildcard")
    front_host, used = _used(hosts, origins)
    for h in used:
        _check_host(where, h, target, cluster)
        if report_addr and h.transport != "local" and \
                report_addr.rpartition(":")[0].strip("[]").startswith(("127.", "localhost", "::1")):
            # the host's own loopback: its reports would be lost without a word
            raise XcbError(f"{where}: host {h.name}: xrd.report to {report_addr} would stay on "
                           "that host; bind the run's listener where it reaches "
                           "(xcbench.telemetry.gateway.report_listener(hosts))")
    slots = {h.name: Slot(h, transport_for(h)) for h in used}
    # who may connect (xrd.allow takes IP literals): every host of the inventory and the bridge
    allow = {"localhost", *(str(h.address) for h in hosts.hosts)}
    bridge = _bridge_addr(hosts)
    if bridge:
        allow.add(bridge)
    return Placement(slots[front_host.name],
                     [slots[gws[i % len(gws)].name] for i in range(origins)], tuple(sorted(allow)))


def _used(hosts: Any, origins: int) -> tuple[Any, list[Any]]:
    """The front host (the redirector's, or the standalone xrootd's) and every host used."""
    gws = list(hosts.gateways)
    front_host = (hosts.redirector or gws[0]) if origins > 1 else gws[0]
    used = [front_host] + [gws[i % len(gws)] for i in range(origins)] if origins > 1 else [gws[0]]
    return front_host, used


def uses_agents(hosts: Any, origins: int) -> bool:
    """True when a gateway of ``origins`` origins has a daemon on a host reached over ssh: then
    every part of it runs through a gateway agent (xcbench.gateway.remote)."""
    if not is_placed(hosts) or not list(hosts.gateways):
        return False
    return any(h.transport not in SHARED_FS for h in _used(hosts, origins)[1])


def _bridge_addr(hosts: Any) -> str | None:
    b = getattr(hosts, "bridge", None)
    return str(b.ip) if b is not None else None


def _check_host(where: str, h: Any, target: Target, cluster: Cluster | None) -> None:
    kind = target.backend_type  # what a gateway agent can make there (Backend.remote_gateway)
    if h.transport not in SHARED_FS and kind.remote_gateway is None:
        need = kind.remote_gateway_refusal
        raise XcbError(f"{where}: host {h.name}: transport {h.transport}: a {target.backend} "
                       f"gateway (cell {target.cell_id}) runs on local and netns hosts only: "
                       f"{need}; give the gateway role to a local or netns host")
    if target.ceph_conf_env and cluster is not None and h.transport != "local":
        mon = _mon_host(cluster)
        if mon and all(a.startswith("127.") for a in _mon_addrs(mon)):
            raise XcbError(f"{where}: host {h.name}: the Ceph cluster listens on loopback only "
                           f"({mon}): a {target.backend} gateway there cannot reach it; start the "
                           "mini cluster on the bridge address (`xcbench cluster up --bind "
                           "10.77.0.1`) or give a cluster every host reaches")


def _mon_host(cluster: Cluster | None) -> str:
    if cluster is None:
        return ""
    info = getattr(cluster, "info", None) or {}
    if info.get("mon_host"):
        return str(info["mon_host"])
    try:
        g = cephconf.parse_conf(cluster.conf.read_text()).get("global", {})
        return str(g.get("mon_host") or g.get("mon host") or "")
    except (OSError, XcbError, AttributeError):
        return ""


def _mon_addrs(mon: str) -> list[str]:
    """IPs in a mon host string ("[v2:10.77.0.1:3300,v1:10.77.0.1:6789]", "a:6789,b")."""
    out = []
    for part in mon.replace("[", ",").replace("]", ",").replace(" ", ",").split(","):
        part = part.split(":", 1)[1] if part.startswith(("v1:", "v2:")) else part
        host = part.rsplit(":", 1)[0] if part.count(":") == 1 else part
        if host:
            out.append(host)
    return out


def python_on(slot: Slot) -> str:
    """The Python that runs xcbench.system.sdlisten on the host (the same files on a netns host)."""
    return sys.executable


def spawn(slot: Slot, cmd: list[str], *, cwd: str, name: str, log: Any, env: dict,
          procs: Any) -> proc.Proc:
    """Start a daemon on its host (``env -C``: the transport takes no working directory)."""
    return slot.transport.spawn(["env", "-C", cwd, *cmd], name=name, log=log, env=env,
                                procs=procs)


def resolve_pids(gw: GatewayLike) -> None:
    """Each server's own pid: the spawned one, or the process below it whose command line
    names the server's config (a transport may start it through a wrapper)."""
    for s in gw.servers:
        if s.proc is None or s.slot is None:
            continue
        s.host_pid = daemon_pid(s.proc.pid, str(s.config), s.daemon)


def daemon_pid(top: int, config: str, daemon: str) -> int | None:
    try:
        p = psutil.Process(top)
        for c in [p, *p.children(recursive=True)]:
            argv = c.cmdline()
            if argv and argv[0].rsplit("/", 1)[-1] == daemon and config in argv:
                return c.pid
    except psutil.Error:
        return None
    return None


# --- per-origin evidence -----------------------------------------------------------------------

def origin_load(gw: GatewayLike) -> list[dict]:
    """Files and bytes each origin received: counted in its own directory when it has one
    (tmpfs/cephfs origins behind a redirector), else from its own counters (``kXR_query
    stats``: xrootd.ops.open and link.in) for a shared store (rados, one pool)."""
    out = []
    agent_of = getattr(gw, "agent_of", None)  # a gateway on ssh hosts (xcbench.gateway.remote)
    for i, s in enumerate(gw.origins, 1):
        host = s.slot.host.name if s.slot is not None else "local"
        row: dict[str, Any] = {"origin": s.name, "index": i, "host": host,
                               "addr": s.addr or gw.addr, "port": s.port}
        if agent_of is not None:
            row["agent"] = agent_of(s)
        if s.localroot and len(gw.origins) > 1:
            files, size = _count_dir(s.localroot)
            row.update(files=files, bytes=size, source=f"files under {s.localroot}")
        else:
            stats = origin_stats(s.addr or gw.addr, s.port, gw.client_env)
            row.update(files=int(stats.get("xrootd.ops.open", 0)),
                       bytes=int(stats.get("link.in", 0)),
                       source="xrootd kXR_query stats (opens, bytes in)")
        out.append(row)
    return out


def _count_dir(root: str) -> tuple[int, int]:
    import os
    files = size = 0
    for d, _dirs, names in os.walk(root):
        for n in names:
            try:
                size += os.lstat(os.path.join(d, n)).st_size
                files += 1
            except OSError:
                continue
    return files, size


def origin_stats(addr: str, port: int, env: dict | None = None) -> dict[str, float]:
    """An origin's own summary counters (the xrd.report XML, asked over its xroot port)."""
    host = f"[{addr}]" if ":" in addr else addr
    res = proc.run(["xrdfs", f"root://{host}:{port}", "query", "stats", "a"], env=env or {},
                   timeout=30, check=False)
    if res.returncode != 0:
        return {}
    try:
        return parse_report(res.stdout).values
    except XcbError:
        return {}


def origin_findings(gw: GatewayLike, load: list[dict]) -> list[dict]:
    """A FINDING for each origin that got no file: the redirector did not spread the load."""
    if len(load) < 2:
        return []
    idle = [r for r in load if not r.get("files")]
    if not idle:
        return []
    names = ", ".join(f"{r['origin']} on {r['host']}" for r in idle)
    spread = "; ".join(f"{r['origin']}@{r['host']}: {r['files']} files" for r in load)
    return [finding(gw.target.cell_id, f"origin got no files: {names}",
                    f"the cmsd redirector sent every file elsewhere ({spread}); the cell measured "
                    f"{len(load) - len(idle)} of {len(load)} origins",
                    "check the idle origin's cmsd log (logged in? space?) and run more files or "
                    "more concurrency than origins", severity="warning")]


def refuse_cores(cell: Cell, hosts: Any) -> None:
    """The cores dimension moves origins into their own quota groups: with gateway hosts that
    would take them out of their host's group (its ``cores``), so a cell asking both is refused."""
    if is_placed(hosts):
        raise XcbError(f"cell {cell.id}: cores: with gateway hosts the CPU limit of an origin is "
                       f"its host's `cores` in {hosts.source}; drop the cell's cores")
