"""Gateway launch: start (with retries), stop, restart, and stop a recorded gateway."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcbench.cell import Cell
from xcbench.errors import XcbError
from xcbench.gateway import placement as placement_mod
from xcbench.gateway.authz import namespace, served_problem, warm_origins, write_authdb
from xcbench.gateway.config import bind_address, effective_tunables, make_tls, render_config, url_host_for
from xcbench.gateway.misconfig import findings_for
from xcbench.gateway.readiness import Crashed, PortTaken, wait_cluster, wait_server
from xcbench.gateway.security import check_mode, gateway_security
from xcbench.gateway.types import Server
from xcbench.store.findings import finding
from xcbench.system import orphans, outfiles, proc
from xcbench.system.fsutil import keep_copy, make_dir, remove_tree, write_file
from xcbench.system.ports import free_port
from xcbench.system.scratch import private_dir
from xcbench.system.treewalk import Budget
from xcbench.system.xrootd_user import (
    daemon_argv,
    daemon_env,
    make_dir_for,
    own,
    reachable_by,
    user_name,
    xrootd_ids,
)

if TYPE_CHECKING:
    from xcbench.backends.base import Target
    from xcbench.ceph.cluster import Cluster

START_TIMEOUT = 30.0


class Gateway:
    """A started gateway; stop() (or leaving the ``with`` block) stops every process of it.

    ``servers``: every xrootd/cmsd (``.pid``, ``.daemon``, ``.role``, ``.localroot``);
    ``origins``: the data servers; ``findings``: FINDING rows; ``client_env``: environment a
    client must run with; ``tls_cert``: the self-signed certificate (CA for https://).
    """

    def __init__(self, name: str, target: Target, addr: str, url_host: str, servers: list[Server],
                 findings: list[dict], client_env: dict[str, str], keep_dir: Path, live_dir: Path,
                 admin_dir: Path, procs: proc.ProcessSet | None, security: str = "none"):
        self.name, self.target, self.addr, self.url_host = name, target, addr, url_host
        self.servers, self.findings, self.client_env = servers, findings, client_env
        self.keep_dir, self._live_dir, self._admin_dir, self._procs = keep_dir, live_dir, admin_dir, procs
        self.tls_cert = admin_dir / "tls" / "cert.pem"
        self.start_seconds = 0.0
        self._relaunch: tuple = ()  # what _launch took, for restart()
        self.tunables: dict[str, Any] = {}  # the effective ones (set by start_gateway)
        front = next(s for s in servers if s.daemon == "xrootd" and s.role != "server")
        netloc = f"[{url_host}]" if ":" in url_host else url_host
        self.security = security
        # a secure gateway is reached as sites reach theirs: roots:// and https:// (davs)
        secure = security != "none"
        self.root_url = f"{'roots' if secure else 'root'}://{netloc}:{front.port}"
        self.http_url = f"{'https' if secure else 'http'}://{netloc}:{front.http_port}"
        self.https_url = f"https://{netloc}:{front.http_port}"
        self.config_paths = [keep_dir / s.config.name for s in servers]
        self.log_paths = [s.log for s in servers]
        self.stopped = False

    @property
    def origins(self) -> list[Server]:
        """The data servers (one for a single gateway)."""
        return [s for s in self.servers if s.daemon == "xrootd" and s.role != "manager"]

    @property
    def pids(self) -> list[int]:
        return [s.pid for s in self.servers if s.pid]

    def url(self, name: str, scheme: str = "root") -> str:
        """Full URL of file ``name`` (root, http, https; davs/dav map to https/http): a plain
        name inside the gateway's namespace (xcbench.gateway.authz.served_problem)."""
        path = "/" + str(name).lstrip("/")
        why = served_problem(namespace(self.target), path)
        if why is not None:
            raise XcbError(f"gateway {self.name}: {why}")
        if scheme in ("root", "xroot", "roots"):
            return f"{self.root_url}/{path}"
        if scheme in ("http", "dav"):
            return self.http_url + path
        if scheme in ("https", "davs"):
            return self.https_url.replace("https", scheme, 1) + path
        raise XcbError(f"gateway {self.name}: unknown URL scheme {scheme!r} (root, http, https)")

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        _stop_servers(self)
        self.log_paths = _keep_live_files(self._admin_dir, self._live_dir, self.keep_dir, self.log_paths)
        remove_tree(self._admin_dir)
        orphans.forget_dir(self._admin_dir)

    def restart(self) -> None:
        """Stop every process of the gateway and start it again with the same configs and
        ports (fault tests: a gateway that dies and comes back mid-campaign)."""
        _stop_servers(self)
        _launch(self, *self._relaunch)

    def state(self) -> dict[str, Any]:
        """JSON-able record of the running gateway, for :func:`stop_recorded` in another process."""
        return {"name": self.name, "cell_id": self.target.cell_id, "root_url": self.root_url,
                "http_url": self.http_url, "keep_dir": str(self.keep_dir),
                "live_dir": str(self._live_dir), "admin_dir": str(self._admin_dir),
                "servers": [{"daemon": s.daemon, "role": s.role, "name": s.name, "pid": s.pid,
                             "port": s.port, "config": str(s.config), "log": str(s.log)}
                            for s in self.servers]}

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<Gateway {self.name} {self.root_url} {self.http_url} origins={len(self.origins)}>"


def keep_dir(workdir: str | Path, base: str) -> Path:
    """A new ``gateway-<base>[-n]`` dir under ``workdir``: what a gateway keeps (configs, logs)."""
    workdir = Path(workdir)
    os.close(outfiles.open_dir(workdir))  # made ours from / where missing (xcbench.system.outfiles)
    keep, n = workdir / f"gateway-{base}", 1
    while True:
        try:
            return make_dir(keep)  # a new one: never a dir (or link) found in place
        except FileExistsError:
            n += 1
            keep = workdir / f"gateway-{base}-{n}"


def logs_dir(admin: Path) -> Path:
    """The one directory of a gateway its daemons write files in (their logs, the logger's
    lock): the xrootd user's, so root only reads it, and copies it at the end."""
    return admin / "logs"


def out_dir(admin: Path) -> Path:
    """Where the daemons' stdout and stderr go (``<name>-<daemon>.out``): root's own dir (0700)
    in root's admin dir, made before the first start; each file is opened there by root and
    handed to its daemon as a descriptor (xcbench.system.proc.spawn), so no name the xrootd
    user can plant (in ``logs/``, before a start or a restart) is ever opened."""
    return admin / "out"


def _keep_live_files(admin: Path, live: Path, keep: Path, log_paths: list[Path]) -> list[Path]:
    """Copy what the daemons wrote (their logs; the live dir's ceph client logs) to the kept
    dir: regular files only, no link followed, each capped and all within one budget
    (xcbench.system.fsutil.keep_copy, xcbench.system.treewalk.Budget)."""
    logs, budget = logs_dir(admin), Budget()
    keep_copy(logs, keep, budget=budget)
    keep_copy(out_dir(admin), keep, budget=budget)
    if live != keep:
        keep_copy(live, keep, budget=budget)
    out = []
    for p in log_paths:
        if p.is_relative_to(logs):
            p = keep / p.relative_to(logs)
        elif live != keep and p.is_relative_to(live):
            p = keep / p.relative_to(live)
        out.append(keep / p.name if p.parent == out_dir(admin) else p)
    return out


def stop_recorded(state: Mapping[str, Any]) -> list[int]:
    """Stop the processes of a gateway recorded by :meth:`Gateway.state` (``xcbench gateway
    down``). A pid is only signalled while its command line still names its config file, so a
    reused pid is never hit. Returns the pids stopped."""
    stopped = []
    for s in reversed(state["servers"]):
        pid = s.get("pid")
        if not pid or not proc.pid_alive(pid):
            continue
        if str(s["config"]) not in (proc.cmdline(pid) or []):
            continue
        proc.stop_pid(pid, group=os.getpgid(pid) == pid)
        stopped.append(pid)
    _keep_live_files(Path(state["admin_dir"]), Path(state["live_dir"]), Path(state["keep_dir"]), [])
    remove_tree(state["admin_dir"])
    return stopped


# --- start / stop ----------------------------------------------------------------------------

def start_gateway(target: Target, *, workdir: Path, cluster: Cluster | None = None,
                  origins: int = 1, tunables: Mapping[str, Any] | None = None,
                  report_addr: str | None = None, bind: str = "127.0.0.1",
                  procs: proc.ProcessSet | None = None, name: str | None = None,
                  cell: Cell | None = None, start_timeout: float = START_TIMEOUT,
                  hosts: Any = None, security: str = "none", run_security: Any = None) -> Gateway:
    """Start the gateway of ``target`` and wait until it answers; see the module docstring.

    ``tunables`` (a cell's ``gateway`` mapping): async, buffers_maxbsz, cksio, bind, ceph.
    A ``bind`` tunable overrides ``bind``. ``cell`` (optional) adds campaign-aware findings.
    ``hosts`` (an xcbench.hosts.Inventory): the origins run on its gateway hosts, each bound to
    its host's address (xcbench.gateway.placement); None or a local-only one: this host.
    ``security`` (xcbench.gateway.security): none, tls, scitokens; ``run_security`` its material.
    """
    check_mode(security)
    t = effective_tunables(target, tunables)
    bind = bind_address(target, t.get("bind"), bind)
    placement = None
    if placement_mod.is_placed(hosts):
        placement = placement_mod.plan(hosts, target, cluster, origins, t.get("bind"),
                                       report_addr)
        bind = placement.front.addr
    t.pop("bind", None)
    if origins < 1:
        raise XcbError(f"gateway: origins must be >= 1, not {origins}")
    addr = bind.strip("[]")
    ns = namespace(target)  # what it serves: a target without one is refused here
    ids = xrootd_ids()
    keep = keep_dir(workdir, name or f"gw-{target.cell_id or 'x'}")
    name = keep.name.removeprefix("gateway-")
    # root's (recorded before it is made: its TLS key goes in it); only what a daemon writes
    # below it is handed to the xrootd user, once made (module xcbench.system.fsutil)
    admin = private_dir("/var/tmp" if os.path.isdir("/var/tmp") else "/tmp", "xcbgw-", mode=0o711)
    try:
        if reachable_by(keep, ids):
            live = keep
        else:
            live = make_dir(admin / "live", 0o711)
        own(make_dir(logs_dir(admin), 0o755), ids)
        make_dir(out_dir(admin), 0o700)
        sec = gateway_security(security, run_security, admin, ids, addr)
        sec["authdb"] = write_authdb(admin, ns, sec["authdb_user"], lookup=bool(target.osslib))
        tls = sec["tls"] if security != "none" else make_tls(admin / "tls", ids, addr)
        # XRD_CPUSEPGWRTRD also for the xrdcp that root TPC runs inside the gateway
        env = {"XRD_CPUSEPGWRTRD": "0", **(target.gateway_env or {}), **sec["env"]}
        client_env: dict[str, str] = {**(target.client_env or {}), **sec["client_env"]}
        osd_max = None
        if target.ceph_conf_env:
            if cluster is None:
                raise XcbError(f"gateway: {target.backend} target of cell {target.cell_id} "
                               "needs a cluster")
            env["CEPH_CONF"] = str(cluster.gateway_conf(live))  # read by xrootd, as user xrootd
        if cluster is not None and target.layout is not None:  # a layout: the target is on Ceph
            try:
                osd_max = cluster.osd_max_object_size()
            except Exception:  # a fact for findings only: never block a start on it
                osd_max = None
        findings = findings_for(cell, target, t, bind=bind, osd_max_object_size=osd_max,
                                origins=origins)
    except BaseException:
        remove_tree(admin)
        raise

    last_error: Exception | None = None
    # retried: a port taken between free_port() and the bind (new ports), and a start that dies
    # by a signal (XrdCeph 5.5 segfaulted now and then while starting, before any log line)
    for _attempt in range(3):
        try:
            servers = _plan(target, name, origins, addr, keep, live, admin, t, report_addr,
                            ids, tls, placement, sec)
        except BaseException:
            remove_tree(admin)
            raise
        gw = Gateway(name, target, addr, url_host_for(addr), servers, findings, client_env,
                     keep, live, admin, procs, security=security)
        gw.tunables = t
        t0 = time.monotonic()
        try:
            _launch(gw, env, ids, procs, start_timeout)
            if security == "macaroons":  # the client asks the running gateway for its macaroon
                run_security.request_macaroon(gw.http_url, Path(sec["client_env"]["BEARER_TOKEN_FILE"]))
            gw.start_seconds = time.monotonic() - t0
            gw._relaunch = (env, ids, procs, start_timeout)
            return gw
        except PortTaken as e:
            last_error = e
            _stop_servers(gw)
        except Crashed as e:
            last_error = e.error
            _stop_servers(gw)
            findings.append(finding(
                target.cell_id, "xrootd crashed while starting",
                f"{e.error} — the start was retried", "see the xrootd log; if it repeats, "
                "start the gateway by hand (`xcbench gateway up`) and get a core dump"))
        except BaseException:
            gw.stop()
            raise
    gw.stop()
    if isinstance(last_error, XcbError):
        raise last_error
    raise XcbError(f"gateway {name}: could not bind free ports ({last_error})")


def _stop_servers(gw: Gateway) -> None:
    for s in reversed(gw.servers):
        if s.proc:
            proc.stop(s.proc)
            if gw._procs is not None:
                gw._procs.discard(s.proc)


def _plan(target, name, origins, addr, keep, live, admin, t, report_addr, ids,
          tls, placement=None, security=None) -> list[Server]:
    """Servers to start, in order (manager first), with ports and rendered configs."""
    used: set[int] = set()

    def port() -> int:
        if placement is not None:
            return placement.port(used)
        p = free_port(addr, avoid=used)  # bound a moment later, via sdlisten
        used.add(p)
        return p

    allow = placement.allow if placement is not None else ("localhost",)
    servers: list[Server] = []

    def add(daemon, role, sname, manager=None, localroot=None, with_http=True, p=None,
            index=0) -> None:
        # XrdHttp shares the xroot port: a redirector sends HTTP clients to an origin's
        # registered data port, so an origin must speak both protocols there
        p = p or port()
        hp = p if with_http else None
        adminpath = daemon_dir(admin, sname, ids)
        text = render_config(daemon, role=role, name=sname, target=target, port=p, http_port=hp,
                             adminpath=adminpath, manager=manager, localroot=localroot,
                             tunables=t, report_addr=report_addr, allow_hosts=allow,
                             origins=origins, gateway=name, tls=tls, security=security,
                             authdb=security["authdb"])
        fname = f"{sname}-{daemon}.cfg"
        for d in {keep, live}:
            write_file(d / fname, text)
        servers.append(Server(daemon, role, sname, p, hp, live / fname,
                              logs_dir(admin) / f"{sname}-{daemon}.log", localroot,
                              out=out_dir(admin) / f"{sname}-{daemon}.out"))
        if placement is not None:
            slot = placement.slot(role, index)
            servers[-1].slot, servers[-1].addr = slot, slot.addr

    if origins == 1:
        add("xrootd", "standalone", "xcb", localroot=target.path)
        return servers
    mport = port()
    manager = f"{addr}:{mport}"
    add("cmsd", "manager", "mgr", manager=manager, with_http=False, p=mport)
    add("xrootd", "manager", "mgr", manager=manager)
    for i in range(1, origins + 1):
        root = target.origin_path(i)
        if root is not None:
            make_dir_for(ids, Path(root))
        add("cmsd", "server", f"o{i}", manager=manager, localroot=root, with_http=False, index=i)
        add("xrootd", "server", f"o{i}", manager=manager, localroot=root, index=i)
    return servers


def daemon_dir(admin: Path, sname: str, ids) -> Path:
    """The daemon's admin path: made here, in root's admin dir, then handed over."""
    adminpath = admin / sname
    if not adminpath.is_dir():  # made by the first daemon of this name (cmsd + xrootd share it)
        make_dir(adminpath, 0o700)
        own(adminpath, ids)
    return adminpath


def daemon_command(s: Server, addr: str, ids, env: dict, listen: list[int], python: str) -> list[str]:
    """The argv of one daemon: with exactly the environment ``env`` (xrootd_user.daemon_env),
    cwd /, pre-bound ports through an isolated Python (-I: no cwd, no user site, no PYTHON*)."""
    cmd = [s.daemon] + (["-R", user_name()] if ids is not None else [])
    cmd += ["-c", str(s.config), "-l", f"={s.log}", "-n", s.name]
    if listen:  # pre-bind on the loopback address (see the module docstring)
        cmd = [python, "-I", "-m", "xcbench.system.sdlisten",
               *[a for p in listen for a in ("--listen", f"{addr}:{p}")], "--", *cmd]
    return daemon_argv(cmd, daemon_env(ids, env))


def _launch(gw: Gateway, env: dict, ids, procs, timeout: float) -> None:
    path = gw.target.path
    if path and not gw.target.shared_store and os.lstat(path).st_uid == os.geteuid():
        own(Path(path), ids)  # the export root must be writable by xrootd: handed over once
    deadline = time.monotonic() + timeout
    for s in gw.servers:
        listen = [] if s.daemon == "cmsd" and s.role == "server" else \
            sorted({s.port} | ({s.http_port} if s.http_port else set()))
        python = sys.executable if s.slot is None else placement_mod.python_on(s.slot)
        cmd = daemon_command(s, s.addr or gw.addr, ids, env, listen, python)
        if s.slot is None:
            s.proc = proc.spawn(cmd, name=f"{gw.name}/{s.name}-{s.daemon}", log=s.out, cwd="/",
                                procs=procs)
        else:  # on its gateway host, through the host's transport
            s.proc = placement_mod.spawn(s.slot, cmd, cwd="/", name=f"{gw.name}/{s.name}-{s.daemon}",
                                         log=s.out, env={}, procs=procs)
        if s.daemon == "cmsd" and s.role == "manager":
            # an origin's cmsd that finds the manager port closed retries only after 6 s
            wait_server(gw, s, deadline)
    for s in gw.servers:
        wait_server(gw, s, deadline)
    if len(gw.origins) > 1:
        wait_cluster(gw, deadline)
    if any(s.slot is not None for s in gw.servers):
        placement_mod.resolve_pids(gw)
    warm_origins(gw, gw.origins)  # XrdCeph's cluster handles: xcbench.gateway.authz
