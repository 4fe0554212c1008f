"""A gateway whose daemons run on gateway hosts over ssh, through gateway agents.

    gw = start_remote_gateway(target, workdir=wd, cluster=c, origins=2, hosts=inventory, ...)
    gw.root_url, gw.http_url, gw.origins, gw.servers   # as a local xcbench.gateway.Gateway
    gw.stop()

When a gateway host of the placement (xcbench.gateway.placement) is reached over ssh, every part
of the gateway runs through an agent (``xcbench gateway-agent``, xcbench.gateway.agent) started by
the host's transport: one for a standalone xrootd, else one for the redirector and one per origin.
The agent renders the configs, makes the TLS material, the admin dir and the backend's data path
on its host (a tmpfs of its own; for XrdCeph the ceph.conf and the key, sent on its stdin),
pre-binds the ports on its host's address and starts the daemons; this side waits for "ready",
builds the same Server list a local gateway has, and keeps each agent's stream:
- CPU seconds and bytes written per daemon: :meth:`RemoteGateway.server_counters` asks each
  agent for a fresh sample (the gateway CPU meter's level start and end), and
  :meth:`agent_role_sample` gives the roles device the gateway's cores, RSS and limit;
- the configs, the daemons' log tails and the raw stream are kept in ``keep_dir``.
``stop()`` (or the coordinator's death: the ssh client's stdin closes, the TIED watcher closes
the agent's) makes each agent stop its daemons and remove everything it made.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from xcbench import __version__
from xcbench.cell import Cell
from xcbench.cell.layout import Layout
from xcbench.ceph import conf as cephconf
from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError
from xcbench.gateway import agent_replies as replies
from xcbench.gateway import placement as placement_mod
from xcbench.gateway.agent import AGENT_SECURITY, TARGET_FIELDS
from xcbench.gateway.config import effective_tunables, url_host_for
from xcbench.gateway.launch import START_TIMEOUT, Gateway, Server, keep_dir
from xcbench.gateway.misconfig import findings_for
from xcbench.gateway.security import RunSecurity
from xcbench.system import proc
from xcbench.system.agentstream import parse_message, read_lines
from xcbench.system.fsutil import write_file
from xcbench.system.xrootd_user import user_name

AGENT_SLACK = 60.0  # s on top of the daemons' start timeout: ssh, a tmpfs mount, a certificate
SAMPLE_WAIT = 10.0  # s a fresh sample may take (a loaded host)
STOP_WAIT = 30.0  # s an agent gets to stop its daemons and remove what it made
TLS_KEPT = "tls-cert.pem"  # the front's certificate in the kept dir (no agent's file takes it)


def agent_argv(transport: Any) -> list[str]:
    return [*transport.xcbench_argv(), "gateway-agent"]


AGENT_LOG_CAP = 16 << 20  # bytes kept of an agent's stderr (ssh's too): another host writes it


class Part:
    """One agent: its host (slot), process, stream reader and what it said."""

    def __init__(self, role: str, index: int, slot: placement_mod.Slot, raw: Path):
        self.role, self.index, self.slot, self.raw = role, index, slot, raw
        self.host = slot.host.name
        self.p: proc.Proc | None = None
        self.msgs: dict[str, Any] = {}  # last message of each kind
        self.error: str | None = None
        self.refused = False  # it said something outside agent_replies: nothing more is taken
        self.done = threading.Event()
        self.cond = threading.Condition()
        self.reader: threading.Thread | None = None
        self.start_s: float | None = None  # from spawning the agent to its "ready"
        self.t0 = 0.0

    def start(self, request: dict[str, Any], procs: proc.ProcessSet | None) -> None:
        self.t0 = time.monotonic()
        try:
            self.p = self.slot.transport.spawn(agent_argv(self.slot.transport),
                                               name=f"gateway-agent-{self.host}-{self.role}{self.index or ''}",
                                               log=self.raw.with_suffix(".log"), procs=procs, pipe=True,
                                               log_cap=AGENT_LOG_CAP)
        except (OSError, XcbError) as e:
            raise XcbError(f"gateway: host {self.host}: the gateway agent did not start: {e}") from None
        self.reader = threading.Thread(target=self._read, daemon=True, name=f"xcb-gwagent-{self.host}")
        self.reader.start()
        self.say(json.dumps(request, default=str) + "\n")  # the key travels here, never in argv

    def say(self, text: str) -> None:
        stdin = getattr(self.p.popen, "stdin", None) if self.p else None
        if stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            stdin.write(text.encode())
            stdin.flush()

    def _read(self) -> None:
        """The agent's stream, each line bounded and each message checked (agent_replies): one
        it may not send fails this part, and nothing more of it is taken (only drained)."""
        assert self.p is not None and self.p.popen.stdout is not None
        kept = 0
        with open(self.raw, "a", encoding="utf-8") as raw:
            try:
                for text in read_lines(self.p.popen.stdout, replies.MAX_LINE):
                    if self.refused:
                        continue
                    if text is None:
                        self._refuse(f"a line longer than {replies.MAX_LINE >> 20} MiB")
                        continue
                    msg = parse_message(text)
                    if msg is None:
                        continue  # not the stream's (the agent keeps stdout for it)
                    why = replies.check(msg)
                    if why is not None:
                        self._refuse(why)
                        continue
                    if kept + len(text) <= replies.RAW_CAP:
                        # samples too: each level's CPU figure traces back to them
                        raw.write(text)
                        raw.flush()
                        kept += len(text)
                    kind, body = next(iter(msg.items()))
                    with self.cond:
                        if kind == "error":
                            self.error = self.error or replies.one_line(body)
                        self.msgs[kind] = body
                        self.cond.notify_all()
            except (OSError, ValueError) as e:
                self.error = self.error or f"reading its stream: {e}"
            finally:
                with self.cond:
                    self.done.set()
                    self.cond.notify_all()

    def _refuse(self, why: str) -> None:
        with self.cond:
            self.refused = True
            self.error = self.error or \
                f"the gateway agent sent a message xcbench does not take ({replies.one_line(why, 300)})"
            self.cond.notify_all()

    def wait(self, kind: str, timeout: float, newer_than: int | None = None) -> Any:
        """The message ``kind`` (a sample: one with seq > ``newer_than``); XcbError naming the
        host when the agent failed, ended or took longer than ``timeout``."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                body = self.msgs.get(kind)
                if body is not None and (newer_than is None or int(body.get("seq", 0)) > newer_than):
                    return body
                if self.error:
                    raise XcbError(f"gateway: host {self.host}: {self.error}")
                left = deadline - time.monotonic()
                if self.done.is_set() or left <= 0:
                    rc = self.p.popen.poll() if self.p else None
                    tail = self.p.tail(3) if self.p is not None and self.p.log else ""
                    why = "ended" if self.done.is_set() else f"did not say {kind} in {timeout:.0f} s"
                    said = replies.one_line(" | ".join(tail.splitlines()), 600)
                    raise XcbError(f"gateway: host {self.host}: the gateway agent {why} (exit {rc})"
                                   f"{': ' + said if said else ''}")
                self.cond.wait(min(left, 0.5))

    def fresh_sample(self) -> dict[str, Any] | None:
        seq = int((self.msgs.get("sample") or {}).get("seq", 0))
        self.say("sample\n")
        try:
            return self.wait("sample", SAMPLE_WAIT, newer_than=seq)
        except XcbError:
            return None


class RemoteGateway(Gateway):
    """A started gateway on ssh gateway hosts: a xcbench.gateway.Gateway to the runner and the
    campaigns (URLs, servers, origins, stop); what its daemons read lives on their hosts."""

    def __init__(self, name: str, target: Any, keep: Path, findings: list[dict],
                 procs: proc.ProcessSet | None, security: str = "none"):
        self.name, self.target, self.keep_dir, self.findings = name, target, keep, findings
        self.client_env: dict[str, str] = dict(target.client_env or {})
        self.security, self._procs = security, procs
        self.parts: list[Part] = []
        self.servers: list[Server] = []
        self._part_of: dict[str, Part] = {}
        self.config_paths: list[Path] = []
        self.log_paths: list[Path] = []
        self.tls_cert = keep / TLS_KEPT
        self.start_seconds = 0.0
        self.agent_seconds: dict[str, float] = {}
        self.stopped = False
        self.addr = self.url_host = ""
        self.root_url = self.http_url = self.https_url = ""

    # --- the interface of a local Gateway (url, origins, __enter__/__exit__: inherited) ----
    @property
    def pids(self) -> list[int]:
        """The daemons' pids on their hosts (not this machine's: the agents measure them)."""
        return [s.pid for s in self.servers if s.pid]

    def restart(self) -> None:
        raise XcbError(f"gateway {self.name}: a gateway on ssh gateway hosts is not restarted "
                       "in place (stop it and start a new one)")

    def state(self) -> dict[str, Any]:
        return {"name": self.name, "cell_id": self.target.cell_id, "root_url": self.root_url,
                "http_url": self.http_url, "keep_dir": str(self.keep_dir), "remote": True,
                "servers": [{"daemon": s.daemon, "role": s.role, "name": s.name, "pid": s.pid,
                             "port": s.port, "host": s.host} for s in self.servers]}

    def __repr__(self) -> str:
        return f"<RemoteGateway {self.name} {self.root_url} origins={len(self.origins)}>"

    def agent_of(self, server: Any) -> dict[str, Any] | None:
        """The agent that runs ``server``: its host, version, pid there, and the seconds from
        its start to its "ready" (ssh, xcbench's start, the tmpfs, TLS, the daemons)."""
        part = self._part_of.get(_key(server))
        if part is None:
            return None
        hello = part.msgs.get("hello") or {}
        ready = part.msgs.get("ready") or {}
        return {"host": part.host, "role": part.role, "version": hello.get("version"),
                "pid": hello.get("pid"), "start_s": part.start_s,
                "daemons_start_s": ready.get("seconds"), "storage": ready.get("storage")}

    # --- measured by the agents ----------------------------------------------------------
    def server_counters(self, servers: list[Any]) -> tuple[float, int | None] | None:
        """(CPU seconds, bytes written) of ``servers``' process trees, summed, from a fresh
        sample of each agent concerned (None when one is not known)."""
        parts = {id(p): p for s in servers if (p := self._part_of.get(_key(s))) is not None}
        got = {pid: p.fresh_sample() for pid, p in parts.items()}
        cpu, wchar = 0.0, 0
        known = True
        for s in servers:
            part = self._part_of.get(_key(s))
            entry = ((got.get(id(part)) or {}).get("servers") or {}).get(_key(s)) if part else None
            if not entry or entry.get("cpu_s") is None:
                return None
            cpu += float(entry["cpu_s"])
            if entry.get("wchar") is None:
                known = False
            else:
                wchar += int(entry["wchar"])
        return cpu, wchar if known else None

    def agent_role_sample(self) -> dict[str, Any]:
        """The gateway role as its agents last saw it: cores busy, RSS, and the limit (the
        hosts' limits summed, one per host)."""
        samples = [(p.host, p.msgs.get("sample") or {}) for p in self.parts]
        cores = [s.get("cores") for _, s in samples]
        limits: dict[str, dict] = {}
        for host, s in samples:
            if s.get("limit"):
                limits.setdefault(host, s["limit"])
        known = len(limits) == len({h for h, _ in samples}) and \
            all(v.get("cores") is not None for v in limits.values())
        return {"cores": sum(cores) if cores and all(c is not None for c in cores) else None,
                "rss": sum(int(s.get("rss") or 0) for _, s in samples),
                "limit_cores": sum(float(v["cores"]) for v in limits.values()) if known else None,
                "limit_source": "gateway agent: " + "; ".join(f"{h}: {v.get('source')}"
                                                              for h, v in sorted(limits.items()))
                if limits else "unknown (no sample from the gateway agents yet)"}

    # --- stop ----------------------------------------------------------------------------
    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        for part in reversed(self.parts):  # origins first, the redirector last
            part.say("stop\n")
        for part in reversed(self.parts):
            part.done.wait(STOP_WAIT)
            for fname, text in ((part.msgs.get("end") or {}).get("logs") or {}).items():
                path = _kept(self.keep_dir, fname, text)
                if path is not None:
                    self.log_paths.append(path)
            self.log_paths.append(part.raw)
            err = part.raw.with_suffix(".log")  # the agent's stderr (ssh's too)
            if err.is_file() and err.stat().st_size:
                self.log_paths.append(err)
            if part.p is not None:
                with contextlib.suppress(OSError, ValueError):
                    if part.p.popen.stdin:
                        part.p.popen.stdin.close()
                proc.stop(part.p, timeout=10)
                if self._procs is not None:
                    self._procs.discard(part.p)
            if part.reader is not None:
                part.reader.join(timeout=5)


def _kept(keep: Path, fname: Any, text: Any) -> Path | None:
    """A file an agent sent back (a config, a log tail), kept as a plain file name of the kept
    dir: written as a file of ours, never through a link; any other name is dropped."""
    name = Path(str(fname)).name
    if name in ("", ".", "..", TLS_KEPT) or not isinstance(text, str) or name.startswith("agent-"):
        return None
    return write_file(keep / name, text)


def _key(s: Any) -> str:
    return f"{s.name}-{s.daemon}"


def _target_request(target: Any) -> dict[str, Any]:
    out = {k: getattr(target, k) for k in TARGET_FIELDS}
    out["layout"] = asdict(Layout.of(target.layout)) if target.layout is not None else None
    # a tmpfs's size, and the namespace an XrdCeph gateway serves (xcbench.gateway.authz)
    info = target.info or {}
    out["info"] = {"size": info.get("size"), **({"name_prefix": info["name_prefix"]}
                                                 if info.get("name_prefix") else {})}
    return out


def _ceph_request(target: Any, cluster: Cluster | None) -> dict[str, Any] | None:
    """The [global] section and the gateway's key for an XrdCeph agent (over its stdin only)."""
    if not target.ceph_conf_env:
        return None
    if cluster is None:
        raise XcbError(f"gateway: {target.backend} target of cell {target.cell_id} needs a cluster")
    src = cluster.gateway_keyring or cluster._default_keyring(cluster.gateway_id)
    if src is None or not Path(src).exists():
        raise XcbError(f"{cluster.conf}: no keyring for the gateway's key client.{cluster.gateway_id}"
                       " (give --gateway-keyring PATH)")
    glob = cephconf.parse_conf(cluster.conf.read_text(), source=str(cluster.conf)).get("global", {})
    return {"global": dict(glob), "gateway_id": cluster.gateway_id,
            "keyring": Path(src).read_text()}


def start_remote_gateway(target: Any, *, workdir: Path, cluster: Cluster | None = None, origins: int = 1,
                         tunables: dict[str, Any] | None = None, report_addr: str | None = None,
                         procs: proc.ProcessSet | None = None, name: str | None = None,
                         cell: Cell | None = None, hosts: Any = None, security: str = "none",
                         run_security: RunSecurity | None = None,
                         start_timeout: float = START_TIMEOUT, **_: Any) -> RemoteGateway:
    """Start ``target``'s gateway on the inventory's gateway hosts through gateway agents."""
    if security not in AGENT_SECURITY:
        raise XcbError(f"cell {target.cell_id}: security {security} on a gateway host reached "
                       "over ssh: its token issuer and the gateway's key cache live on this "
                       f"machine; a gateway agent serves {', '.join(AGENT_SECURITY)}; give the "
                       "gateway role to a local or netns host for token modes")
    if security != "none" and run_security is None:
        raise XcbError(f"gateway: security {security} needs the run's security material (RunSecurity)")
    t = effective_tunables(target, tunables)
    placement = placement_mod.plan(hosts, target, cluster, origins, t.pop("bind", None), report_addr)
    keep = keep_dir(workdir, name or f"gw-{target.cell_id or 'x'}")
    name = keep.name.removeprefix("gateway-")
    findings = findings_for(cell, target, t, bind=placement.front.addr, origins=origins)
    common = {"version": __version__, "name": name, "origins": origins,
              "allow": list(placement.allow), "tunables": t, "report_addr": report_addr,
              "target": _target_request(target), "ceph": _ceph_request(target, cluster),
              "start_timeout": start_timeout, "security": {"mode": "none"},
              "gateway_user": user_name()}  # the same uid on every gateway host
    gw = RemoteGateway(name, target, keep, findings, procs, security)
    if run_security is not None and security != "none":
        # the run's CA over the agents' stdin: each signs its own host's certificate
        common["security"] = {"mode": security, **run_security.ca_material()}
        gw.client_env["X509_CERT_DIR"] = str(run_security.cadir)
    t0 = time.monotonic()
    try:
        if origins == 1:
            _start(gw, common, "standalone", 0, placement.front, None, start_timeout)
        else:
            mgr = _start(gw, common, "manager", 0, placement.front, None, start_timeout)
            manager = mgr.msgs["ready"]["manager"]
            parts = [_launch_part(gw, common, "origin", i, slot, manager)
                     for i, slot in enumerate(placement.origins, 1)]
            for p in parts:
                _ready(gw, p, start_timeout)
            mgr.say(f"cluster {origins}\n")
            mgr.wait("cluster", start_timeout + AGENT_SLACK)
        gw.start_seconds = time.monotonic() - t0
        _urls(gw)
    except BaseException:
        gw.stop()
        raise
    return gw


def _launch_part(gw: RemoteGateway, common: dict, role: str, index: int,
                 slot: placement_mod.Slot, manager: str | None) -> Part:
    part = Part(role, index, slot, gw.keep_dir / f"agent-{role}{index or ''}-{slot.host.name}.jsonl")
    gw.parts.append(part)
    req = {**common, "role": role, "index": index, "addr": slot.addr, "manager": manager}
    part.start(req, gw._procs)
    return part


def _start(gw: RemoteGateway, common: dict, role: str, index: int, slot: placement_mod.Slot,
           manager: str | None, timeout: float) -> Part:
    part = _launch_part(gw, common, role, index, slot, manager)
    _ready(gw, part, timeout)
    return part


def _ready(gw: RemoteGateway, part: Part, timeout: float) -> None:
    """Wait for the agent's hello (same version) and ready; its servers join the gateway's."""
    hello = part.wait("hello", timeout + AGENT_SLACK)
    if hello.get("version") != __version__:
        raise XcbError(f"gateway: host {part.host}: xcbench {hello.get('version')} there, "
                       f"{__version__} here: install the same version on every host")
    ready = part.wait("ready", timeout + AGENT_SLACK)
    part.wait("sample", timeout)  # sent right after ready: the roles device's first tick has one
    part.start_s = round(time.monotonic() - part.t0, 3)
    gw.agent_seconds[f"{part.role}{part.index or ''}@{part.host}"] = part.start_s
    for fname, text in (ready.get("configs") or {}).items():
        path = _kept(gw.keep_dir, fname, text)
        if path is not None:
            gw.config_paths.append(path)
    if part.role != "origin" and ready.get("tls_cert"):
        write_file(gw.tls_cert, str(ready["tls_cert"]))
    for s in ready["servers"]:
        server = Server(s["daemon"], s["role"], s["name"], int(s["port"]), s.get("http_port"),
                        gw.keep_dir / Path(s["config"]).name, gw.keep_dir / Path(s["log"]).name,
                        None, addr=part.slot.addr, slot=part.slot, host_pid=s.get("pid"))
        gw.servers.append(server)
        gw._part_of[_key(server)] = part


def _urls(gw: RemoteGateway) -> None:
    front = next((s for s in gw.servers if s.daemon == "xrootd" and s.role != "server"), None)
    if front is None:
        raise XcbError(f"gateway {gw.name}: no gateway agent named a front xrootd among its servers")
    gw.addr = str(front.addr)
    gw.url_host = url_host_for(gw.addr)
    netloc = f"[{gw.url_host}]" if ":" in gw.url_host else gw.url_host
    secure = gw.security != "none"  # reached as sites reach theirs: roots:// and https://
    gw.root_url = f"{'roots' if secure else 'root'}://{netloc}:{front.port}"
    gw.http_url = f"{'https' if secure else 'http'}://{netloc}:{front.http_port}"
    gw.https_url = f"https://{netloc}:{front.http_port}"
