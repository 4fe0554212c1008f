"""The gateway agent: a gateway's daemons on a gateway host reached over ssh.

``xcbench gateway-agent`` (a hidden command, started on the gateway host through the host's
transport by xcbench.gateway.remote) makes everything the gateway reads on that host and streams
what it measures as JSON lines on stdout:

    {"hello": {"version", "pid", "clock", "host"}}        first, at once
    {"ready": {"servers": [...], "manager", "configs", "tls_cert", "made", "storage", "seconds"}}
    {"sample": {"seq", "wall", "servers": {name: {"pid", "cpu_s", "wchar", "rss"}},
                "cores", "rss", "limit": {"cores", "source"}}}     once a second, and on "sample"
    {"cluster": {"logged_in": N}}                          the answer to "cluster N" (a manager)
    {"end": {"logs": {file: tail}}} or {"error": "..."}    last

Its stdin gives ONE request line first (JSON: what to render, the port's address, the role
standalone | manager | origin, the target, and for XrdCeph the ceph.conf [global] and the key:
over stdin, never on a command line), then control lines: ``sample``, ``cluster N``, ``stop``.
Stdin's end is a stop (the coordinator or its ssh went away: the transport's TIED watcher closes
it), and so are SIGTERM, SIGHUP and SIGINT. Stopping stops the daemons, unmounts the tmpfs and
removes every dir and the key file the agent made. Everything is recorded on that host
(xcbench.system.orphans: the command is a guarded one) before it is made, so after a kill -9 of
the agent itself the next xcbench command there removes it.

The version of the coordinator comes in the request: a different xcbench here is refused with one
line (exit 2), as is a request that is not what this version reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import threading
import time
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import psutil

from xcbench import __version__
from xcbench.backends.base import BACKENDS, Target, backend_class
from xcbench.errors import XcbError
from xcbench.gateway.agent_parts import ROLES, SCRATCH, AgentCeph, start_part, wait_logged_in
from xcbench.gateway.security import RunSecurity
from xcbench.system import orphans, proc
from xcbench.system.agentstream import Stream, claim_stdout
from xcbench.system.fsutil import remove_tree
from xcbench.system.limits import cpu_limit
from xcbench.system.ports import is_wildcard
from xcbench.system.scratch import private_dir
from xcbench.system.signals import EXIT_CODE, StopFlag
from xcbench.system.xrootd_user import set_user, xrootd_ids
from xcbench.telemetry.roles import tree_counters

TARGET_FIELDS = tuple(f.name for f in fields(Target) if f.name not in ("created", "path"))
AGENT_SECURITY = ("none", "tls")  # tokens: the issuer and its key cache are this machine's
TICK = 1.0
LOG_TAIL = 200
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")  # a POSIX user name, as useradd takes it


def _bad(why: str) -> XcbError:
    return XcbError(f"gateway-agent: request: {why}")


def parse_request(line: str) -> dict[str, Any]:
    """The request, checked field by field (XcbError naming the field) before anything is made."""
    if not line.strip():
        raise _bad("none came on stdin (one JSON line)")
    try:
        req = json.loads(line)
    except ValueError as e:
        raise _bad(f"not JSON ({e}; it began {line[:40]!r})") from None
    if not isinstance(req, dict):
        raise _bad("not a JSON object")
    if req.get("version") != __version__:
        raise XcbError(f"gateway-agent: xcbench {__version__} here, {req.get('version')} on the "
                       "coordinator: install the same version on every host")
    for key, kind in (("name", str), ("role", str), ("addr", str), ("target", dict),
                      ("origins", int), ("index", int)):
        if not isinstance(req.get(key), kind) or isinstance(req.get(key), bool):
            raise _bad(f"{key}: {req.get(key)!r} is not a {kind.__name__}")
    if req["role"] not in ROLES:
        raise _bad(f"role: {req['role']!r} is not one of {', '.join(ROLES)}")
    if req["role"] == "origin" and not isinstance(req.get("manager"), str):
        raise _bad("manager: an origin needs the manager's address:port")
    if is_wildcard(req["addr"]) or not req["addr"].strip():
        raise _bad(f"addr: {req['addr']!r}: the gateway binds its host's address, never a wildcard")
    t = req["target"]
    unknown = sorted(set(t) - set(TARGET_FIELDS))
    if unknown:
        raise _bad(f"target: unknown fields {unknown}")
    served = [b for b in BACKENDS if backend_class(b).remote_gateway]
    if t.get("backend") not in served:
        raise _bad(f"target.backend: {t.get('backend')!r}: the agent serves {', '.join(served)}")
    if not isinstance(req.get("tunables") or {}, dict) or not isinstance(req.get("allow") or [], list):
        raise _bad("tunables/allow: not a mapping/list")
    sec = req.get("security") or {"mode": "none"}
    if not isinstance(sec, dict) or sec.get("mode") not in AGENT_SECURITY:
        raise _bad(f"security: {sec.get('mode') if isinstance(sec, dict) else sec!r} is not one of "
                   f"{', '.join(AGENT_SECURITY)} (the modes a gateway agent serves)")
    if sec["mode"] != "none" and not (isinstance(sec.get("ca_cert"), str) and isinstance(sec.get("ca_key"), str)):
        raise _bad(f"security: {sec['mode']} needs the run's CA (ca_cert, ca_key)")
    gu = req.get("gateway_user")
    if gu is not None and (not isinstance(gu, str) or not USER_NAME.match(gu)):
        raise _bad(f"gateway_user: {gu!r} is not a user name")
    ceph = req.get("ceph")
    if t.get("ceph_conf_env") and (not isinstance(ceph, dict) or not isinstance(ceph.get("keyring"), str)
                                   or not isinstance(ceph.get("global"), dict)):
        raise _bad(f"ceph: a {t['backend']} gateway needs ceph.global and ceph.keyring")
    return req


class Agent:
    """One part of a gateway on this host, from its request to its end."""

    def __init__(self, req: dict[str, Any], out: Stream, stop: threading.Event):
        self.req, self.out, self.stop = req, out, stop
        self.procs = proc.ProcessSet()
        self.gw: Any = None
        self.made: list[str] = []
        self._seq = 0
        self._last: tuple[float, float] | None = None  # (mono, cpu) of the previous sample
        self._lock = threading.Lock()

    # --- making ------------------------------------------------------------------------
    def start(self, stack: contextlib.ExitStack) -> None:
        req = self.req
        if os.geteuid() == 0:  # not root: the daemons run as the agent's own user anyway
            set_user(req.get("gateway_user"))  # the coordinator's choice; unknown here: one line
        t0 = time.monotonic()
        work = private_dir(SCRATCH, "xcb-gwagent-")
        self.made.append(str(work))
        stack.callback(self._remove, work)
        tdata = dict(req["target"])
        target = Target(**tdata)
        storage: dict[str, Any] = {}
        if target.backend_type.remote_gateway == "mount":  # its own (tmpfs) on this host
            backend = target.backend_type(None, work, self.procs)
            size = int((tdata.get("info") or {}).get("size") or 0) or None
            cell: Any = SimpleNamespace(id=target.cell_id, tmpfs_size=size)  # what prepare() reads
            local = backend.prepare(cell)
            stack.callback(backend.cleanup, local)
            target.path, target.oss = local.path, dict(local.oss)
            self.made.append(str(local.path))
            storage = {k: local.info.get(k) for k in ("kind", "mountpoint", "size", "fallback_reason")}
        ceph = None
        if target.ceph_conf_env:
            c = req["ceph"]
            ceph = AgentCeph(c["global"], str(c.get("gateway_id") or "admin"), c["keyring"],
                             xrootd_ids())
            stack.callback(ceph.close)
            self.made.append(str(ceph.key_dir))
        sec = req.get("security") or {"mode": "none"}
        run_security = None
        if sec["mode"] != "none":  # the run's CA, to sign this host's certificate here
            run_security = RunSecurity.from_ca(sec["ca_cert"], sec["ca_key"], SCRATCH)
            stack.callback(run_security.close)
            self.made.append(str(run_security.dir))
        stack.callback(self.procs.stop_all)
        self.gw = start_part(target, role=req["role"], index=req["index"], origins=req["origins"],
                             name=req["name"], addr=req["addr"], manager=req.get("manager"),
                             allow=tuple(req.get("allow") or ()), tunables=req.get("tunables") or {},
                             report_addr=req.get("report_addr"), workdir=work, ceph=ceph,
                             procs=self.procs, timeout=float(req.get("start_timeout") or 30),
                             security=sec["mode"], run_security=run_security)
        stack.callback(self._end)
        self.made.append(str(self.gw._admin_dir))
        mgr = next((s for s in self.gw.servers if s.daemon == "cmsd" and s.role == "manager"), None)
        self.out.send({"ready": {
            "servers": [{"daemon": s.daemon, "role": s.role, "name": s.name, "port": s.port,
                         "http_port": s.http_port, "pid": s.pid, "config": s.config.name,
                         "log": s.log.name} for s in self.gw.servers],
            "manager": f"{req['addr']}:{mgr.port}" if mgr else None,
            "configs": {p.name: p.read_text() for p in self.gw.config_paths},
            "tls_cert": self.gw.tls_cert.read_text(), "made": self.made, "storage": storage,
            "seconds": round(time.monotonic() - t0, 3)}})

    def _end(self) -> None:
        """The daemons stopped (logs copied to the kept dir), their tails sent back."""
        self.gw.stop()
        logs = {}
        for p in self.gw.log_paths:
            with contextlib.suppress(OSError):
                logs[Path(p).name] = proc.tail(p, LOG_TAIL)
        self.out.send({"end": {"logs": logs}})

    def _remove(self, path: Path) -> None:
        remove_tree(path, unmount=True, what="gateway agent dir")
        if not path.exists():
            orphans.forget_dir(path)

    # --- measuring ----------------------------------------------------------------------
    def sample(self) -> None:
        """Each daemon's cumulative CPU seconds and bytes written (its tree, reaped children
        included), RSS, the cores busy since the last sample, and the host's limit for them."""
        with self._lock:
            per: dict[str, dict[str, Any]] = {}
            cpu_total, rss_total, limit = 0.0, 0, None
            for s in self.gw.servers:
                got = tree_counters([s.pid]) if s.pid else None
                rss = _tree_rss(s.pid) if s.pid else 0
                per[f"{s.name}-{s.daemon}"] = {"pid": s.pid, "cpu_s": got[0] if got else None,
                                               "wchar": got[1] if got else None, "rss": rss}
                cpu_total += got[0] if got else 0.0
                rss_total += rss
                if limit is None and s.pid:
                    with contextlib.suppress(Exception):
                        lim = cpu_limit(s.pid)
                        limit = {"cores": lim.cores, "source": lim.source}
            mono = time.monotonic()
            cores = None
            if self._last is not None and mono > self._last[0]:
                cores = max(0.0, (cpu_total - self._last[1]) / (mono - self._last[0]))
            self._last = (mono, cpu_total)
            self._seq += 1
            self.out.send({"sample": {"seq": self._seq, "wall": time.time(), "servers": per,
                                      "cores": cores, "rss": rss_total, "limit": limit}})

    def control(self, stdin: IO[str]) -> None:
        """Control lines until stdin ends (an end is a stop)."""
        try:
            for line in stdin:
                words = line.split()
                if not words:
                    continue
                if words[0] == "stop":
                    break
                if words[0] == "sample":
                    self.sample()
                elif words[0] == "cluster" and len(words) == 2 and words[1].isdigit():
                    try:
                        n = wait_logged_in(self.gw, int(words[1]), 60)
                        self.out.send({"cluster": {"logged_in": n}})
                    except XcbError as e:
                        self.out.send({"error": str(e)})
        except (OSError, ValueError):
            pass
        self.stop.set()

    def serve(self, stdin: IO[str]) -> None:
        threading.Thread(target=self.control, args=(stdin,), name="xcb-gwagent-control",
                         daemon=True).start()
        while not self.stop.is_set() and not self.out.broken.is_set():
            self.sample()
            self.stop.wait(TICK)


def _tree_rss(pid: int) -> int:
    try:
        p = psutil.Process(pid)
        return sum(q.memory_info().rss for q in [p, *p.children(recursive=True)])
    except psutil.Error:
        return 0


def main() -> int:
    """The command: stdout kept for the stream, signals and stdin's end turned into a stop."""
    fh = claim_stdout()
    with StopFlag() as flag:
        out = Stream(fh, flag.event.set)
        out.send({"hello": {"version": __version__, "pid": os.getpid(), "clock": time.time(),
                            "host": socket.gethostname()}})
        try:
            req = parse_request(sys.stdin.readline())
        except XcbError as e:
            out.send({"error": str(e)})
            raise
        agent = Agent(req, out, flag.event)
        try:
            with contextlib.ExitStack() as stack:
                agent.start(stack)
                with flag.polite():
                    agent.serve(sys.stdin)
        except XcbError as e:
            out.send({"error": str(e)})
            raise
        except Exception as e:  # a bug: said on the stream too, so the coordinator names the host
            out.send({"error": f"{type(e).__name__}: {e}"})
            raise
        signalled = flag.signum is not None
    with contextlib.suppress(OSError):
        fh.close()
    return EXIT_CODE if signalled else 0
