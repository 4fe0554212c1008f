"""What the gateway agent makes on its host (xcbench.gateway.agent): the part of a gateway that
runs there, and the Ceph client files of an XrdCeph origin.

A part is one of: ``standalone`` (one xrootd), ``manager`` (the redirector: cmsd + xrootd) or
``origin`` i (cmsd + xrootd logging in to a manager elsewhere). It is rendered and started the
way xcbench.gateway.launch starts a whole gateway on one host (the same config templates, the same
pre-bound ports through xcbench.system.sdlisten, the same readiness handshakes), with the ports
chosen here: the agent runs in the host's own network, so the kernel can tell what is free.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from xcbench.backends.base import Target
from xcbench.ceph import conf as cephconf
from xcbench.errors import XcbError
from xcbench.gateway.authz import namespace, warm_origins, write_authdb
from xcbench.gateway.config import effective_tunables, make_tls, render_config, url_host_for
from xcbench.gateway.launch import Gateway, Server, daemon_command, daemon_dir, logs_dir, out_dir
from xcbench.gateway.readiness import Crashed, PortTaken, failed, wait_server
from xcbench.gateway.security import RunSecurity, gateway_security
from xcbench.system import fsutil, orphans, proc
from xcbench.system.fsutil import make_dir, write_file
from xcbench.system.ports import free_port
from xcbench.system.scratch import private_dir
from xcbench.system.xrootd_user import make_dir_for, own, xrootd_ids

ROLES = ("standalone", "manager", "origin")
SCRATCH = "/var/tmp"


class AgentCeph:
    """The Ceph client files of an XrdCeph gateway on this host, from what came over stdin: a
    private dir (root's, 0711, recorded before it is made) holding the key, 0600, the one file
    handed to the xrootd user; :meth:`gateway_conf` writes the ceph.conf naming it, as
    Cluster.gateway_conf does."""

    def __init__(self, global_section: Mapping[str, Any], gateway_id: str, keyring: str,
                 ids: tuple[int, int] | None):
        self.global_section, self.gateway_id, self.ids = dict(global_section), gateway_id, ids
        self.key_dir = private_dir(SCRATCH, "xcbgw-key-", mode=0o711)
        self.key_file = write_file(self.key_dir / f"ceph.client.{gateway_id}.keyring", keyring,
                                   0o600, new=True)
        own(self.key_file, ids)

    def gateway_conf(self, directory: str | os.PathLike) -> Path:
        directory = Path(directory)
        logdir = directory / "ceph-client-logs"
        if not logdir.is_dir():  # ``directory``: root's live dir, only root makes anything in it
            make_dir(logdir, 0o755)
            own(logdir, self.ids)
        text = cephconf.render_conf(
            cephconf.gateway_sections(self.global_section, self.gateway_id,
                                      {"keyring": self.key_file, "log file": logdir / "ceph-client.$pid.log",
                                       "admin socket": "", "pid file": ""}),
            header=f"gateway conf written by the xcbench gateway agent for client.{self.gateway_id}")
        return write_file(directory / "ceph.conf", text, 0o644)

    def osd_max_object_size(self) -> int:
        raise XcbError("not known on a gateway host")  # a fact for findings only

    def close(self) -> None:
        fsutil.remove_dir(self.key_dir)
        if not self.key_dir.exists():
            orphans.forget_dir(self.key_dir)


class PartGateway(Gateway):
    """This host's part of a gateway: a launch.Gateway's stop/logs/admin dir handling, for a
    set of daemons that may have no front xrootd (an origin: its URLs are the redirector's)."""

    def __init__(self, name: str, target: Target, addr: str, servers: list[Server], keep: Path,
                 live: Path, admin: Path, procs: proc.ProcessSet):
        self.name, self.target, self.addr, self.url_host = name, target, addr, url_host_for(addr)
        self.servers, self.findings, self.client_env = servers, [], dict(target.client_env or {})
        self.keep_dir, self._live_dir, self._admin_dir, self._procs = keep, live, admin, procs
        self.tls_cert = admin / "tls" / "cert.pem"
        self.start_seconds, self._relaunch, self.security, self.tunables = 0.0, (), "none", {}
        self.config_paths = [keep / sv.config.name for sv in servers]
        self.log_paths = [sv.log for sv in servers]
        self.stopped = False


def start_part(target: Target, *, role: str, index: int, origins: int, name: str, addr: str,
               manager: str | None, allow: tuple[str, ...], tunables: Mapping[str, Any],
               report_addr: str | None, workdir: Path, ceph: AgentCeph | None,
               procs: proc.ProcessSet, timeout: float, security: str = "none",
               run_security: RunSecurity | None = None) -> PartGateway:
    """Start this host's part of a gateway, bound to ``addr``; a started launch.Gateway (its
    ``stop()`` stops the daemons and removes the admin dir). Retried on a port taken between
    choosing and binding it, and on a start that died by a signal."""
    t = effective_tunables(target, tunables)
    t.pop("bind", None)
    ids = xrootd_ids()
    keep = make_dir(workdir / f"gateway-{name}")
    last: Exception | None = None
    for _attempt in range(3):
        admin = private_dir(SCRATCH, "xcbgw-", mode=0o711)  # root's; as xcbench.gateway.launch
        live = make_dir(admin / "live", 0o711)
        own(make_dir(logs_dir(admin), 0o755), ids)
        make_dir(out_dir(admin), 0o700)
        env = {"XRD_CPUSEPGWRTRD": "0", **(target.gateway_env or {})}
        gw: PartGateway | None = None
        try:
            sec = gateway_security(security, run_security, admin, ids, addr)
            sec["authdb"] = write_authdb(admin, namespace(target), sec["authdb_user"],
                                         lookup=bool(target.osslib))
            tls = sec["tls"] if security != "none" else make_tls(admin / "tls", ids, addr)
            env.update(sec["env"])
            if target.ceph_conf_env:
                if ceph is None:
                    raise XcbError(f"gateway-agent: a {target.backend} gateway needs the ceph "
                                   "section of the request")
                env["CEPH_CONF"] = str(ceph.gateway_conf(live))
            servers = _servers(target, role, index, origins, name, addr, manager, allow, t,
                               report_addr, keep, live, admin, ids, tls, sec)
            gw = PartGateway(name, target, addr, servers, keep, live, admin, procs)
            gw.security, gw.tunables = security, t
            t0 = time.monotonic()
            _launch(gw, env, ids, procs, timeout)
            gw.start_seconds = time.monotonic() - t0
            return gw
        except (PortTaken, Crashed) as e:
            last = e.error if isinstance(e, Crashed) else e
            if gw is not None:
                gw.stop()
            else:
                fsutil.remove_dir(admin)
        except BaseException:
            if gw is not None:
                gw.stop()
            else:
                fsutil.remove_dir(admin)
            raise
    if isinstance(last, XcbError):
        raise last
    raise XcbError(f"gateway {name}: could not bind free ports on {addr} ({last})")


def _servers(target, role, index, origins, name, addr, manager, allow, t, report_addr, keep,
             live, admin, ids, tls, sec) -> list[Server]:
    used: set[int] = set()
    out: list[Server] = []

    def port() -> int:
        p = free_port(addr, avoid=used)  # bound a moment later, via sdlisten
        used.add(p)
        return p

    def add(daemon: str, srole: str, sname: str, p: int, with_http: bool,
            localroot: str | None, mgr: str | None) -> None:
        hp = p if with_http else None
        adminpath = daemon_dir(admin, sname, ids)
        text = render_config(daemon, role=srole, name=sname, target=target, port=p, http_port=hp,
                             adminpath=adminpath, manager=mgr, localroot=localroot, tunables=t,
                             report_addr=report_addr, allow_hosts=allow, origins=origins,
                             gateway=name, tls=tls, security=sec, authdb=sec["authdb"])
        fname = f"{sname}-{daemon}.cfg"
        for d in {keep, live}:
            write_file(d / fname, text)
        out.append(Server(daemon, srole, sname, p, hp, live / fname, logs_dir(admin) / f"{sname}-{daemon}.log",
                          localroot, addr=addr, out=out_dir(admin) / f"{sname}-{daemon}.out"))

    if role == "standalone":
        add("xrootd", "standalone", "xcb", port(), True, target.path, None)
    elif role == "manager":
        mport = port()
        mgr = f"{addr}:{mport}"
        add("cmsd", "manager", "mgr", mport, False, None, mgr)
        add("xrootd", "manager", "mgr", port(), True, None, mgr)
    else:
        root = target.origin_path(index)
        if root is not None:
            make_dir_for(ids, Path(root))
        add("cmsd", "server", f"o{index}", port(), False, root, manager)
        add("xrootd", "server", f"o{index}", port(), True, root, manager)
    return out


def _launch(gw: Gateway, env: dict, ids: Any, procs: proc.ProcessSet, timeout: float) -> None:
    """Start the part's daemons as xcbench.gateway.launch does (ports pre-bound on the host's
    address) and wait for each, but a redirector's xrootd: it answers clients only once
    origins have logged in to its cmsd, which :func:`wait_logged_in` waits for."""
    deadline = time.monotonic() + timeout
    for s in gw.servers:
        listen = [] if s.daemon == "cmsd" and s.role == "server" else \
            sorted({s.port} | ({s.http_port} if s.http_port else set()))
        cmd = daemon_command(s, str(s.addr), ids, env, listen, sys.executable)
        s.proc = proc.spawn(cmd, name=f"{gw.name}/{s.name}-{s.daemon}", log=s.out, cwd="/",
                            procs=procs)
        if s.daemon == "cmsd" and s.role == "manager":
            wait_server(gw, s, deadline)  # an origin's cmsd that finds it closed retries after 6 s
    for s in gw.servers:
        if not (s.daemon == "xrootd" and s.role == "manager"):
            wait_server(gw, s, deadline)
    warm_origins(gw, [s for s in gw.servers if s.daemon == "xrootd" and s.role != "manager"])


def wait_logged_in(gw: Gateway, want: int, timeout: float) -> int:
    """The manager part: until its cmsd has ``want`` origins logged in and redirects; the count."""
    mgr = next(s for s in gw.servers if s.daemon == "cmsd" and s.role == "manager")
    deadline = time.monotonic() + timeout
    while True:
        lines = proc.tail(mgr.log, 2000).splitlines()
        logged = sum("Primary server" in ln and "logged in" in ln for ln in lines)
        if logged >= want and any("manager service enabled" in ln for ln in lines):
            xrd = next(s for s in gw.servers if s.daemon == "xrootd" and s.role == "manager")
            wait_server(gw, xrd, deadline)  # now it answers
            return logged
        if time.monotonic() > deadline:
            raise failed(gw, mgr, f"saw {logged} of {want} origins log in")
        time.sleep(0.05)
