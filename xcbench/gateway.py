"""XRootD gateways for a cell's target: one xrootd, or N origins behind a cmsd redirector.

Every xrootd serves root:// and HTTP(S) (XrdHttp), adler32 checksums, root TPC (``ofs.tpc``: the
destination pulls with ``xrdcp --server``) and HTTP-TPC (libXrdHttpTPC). Configs are rendered
from ``xrootd-configs/*.j2`` and kept, with the logs, in ``workdir/gateway-<name>/``.

Measured on this machine (XRootD 5.5.3), and why the code looks like this:
- xrootd has no directive to bind one address, but takes systemd-style pre-bound sockets: every
  listening port is bound by :mod:`xcbench.sdlisten` on ``bind`` (loopback). The exception is a
  data server's cmsd: XrdCmsConfig forces it onto an ephemeral wildcard port, fenced here with
  ``xrd.allow host localhost``.
- xrootd refuses to run as root: it runs with ``-R xrootd`` and its dirs are chowned to that
  user. Unix sockets live under a short private dir (a socket path must fit in 108 bytes).
- URLs say ``localhost``, not 127.0.0.1: a root TPC addressed by IP literal hangs until the TPC
  TTL (the client names the destination ``[::ffff:127.0.0.1]``, the source sees ``localhost``).
- XrdHttp loads HTTP-TPC only when TLS is configured: each gateway gets a throwaway self-signed
  certificate (the HTTP port then speaks http and https).
- A redirector sends HTTP clients to an origin's xroot port: XrdHttp shares that port.
- ``if exec xrootd`` does not apply to ``xrd.protocol`` lines: each daemon gets its own file.
- cmsd: the 10 GB default minimum free space makes small origins unwritable; a new file waits
  for the query deadline (origins never say "not here"), 1 s here instead of 5.
"""

from __future__ import annotations

import http.client
import os
import pwd
import shutil
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcbench import proc
from xcbench.errors import XcbError
from xcbench.findings import WILDCARD_BINDS, finding, findings_for
from xcbench.net import free_port
from xcbench.sdlisten import EXIT_BIND
from xcbench.templates import render

if TYPE_CHECKING:
    from xcbench.backends.base import Target
    from xcbench.ceph.cluster import Cluster

XROOTD_USER = "xrootd"
TEMPLATES = "xcbench.xrootd_configs"
TUNABLE_KEYS = ("async", "buffers_maxbsz", "cksio", "bind", "ceph")
# XrdCeph defaults (measured 24x faster than xrootd's: async 64 KiB pieces are slow on RADOS)
RADOS_DEFAULTS = {"async": False, "buffers_maxbsz": 16 << 20, "cksio": True}
START_TIMEOUT = 30.0
TPC_XFR = 64  # concurrent TPC pulls a destination runs
CMS_SPACE = ("16m", "32m")  # min free space / high-water mark an origin needs to get new files


def effective_tunables(backend: str, tunables: Mapping[str, Any] | None) -> dict[str, Any]:
    """The cell's gateway tunables over the backend's defaults."""
    tunables = dict(tunables or {})
    unknown = sorted(set(tunables) - set(TUNABLE_KEYS))
    if unknown:
        raise XcbError(f"gateway tunables: unknown key {unknown[0]!r} (known: {', '.join(TUNABLE_KEYS)})")
    out = dict(RADOS_DEFAULTS) if backend == "rados" else {}
    out.update(tunables)
    ceph = out.get("ceph") or {}
    if not isinstance(ceph, Mapping):
        raise XcbError(f"gateway tunables: ceph: {ceph!r} is not a mapping of ceph.* directives")
    out["ceph"] = dict(ceph)
    return out


def _xrd_size(n: int) -> str:
    for unit, mult in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def render_config(daemon: str, *, role: str, name: str, target: Target, port: int,
                  adminpath: str | os.PathLike, http_port: int | None = None,
                  manager: str | None = None, localroot: str | None = None,
                  tunables: Mapping[str, Any] | None = None, report_addr: str | None = None,
                  allow_hosts: tuple[str, ...] = (), origins: int = 1, gateway: str = "",
                  tls: tuple[str, str] = ("cert.pem", "key.pem")) -> str:
    """Text of one daemon's config (``daemon`` xrootd|cmsd; ``role`` standalone|server|manager)."""
    t = effective_tunables(target.backend, {k: v for k, v in (tunables or {}).items() if k != "bind"})
    rados = None
    if target.backend == "rados":
        missing = [k for k in ("ceph_user", "pool", "nb_stripes", "stripe_unit", "object_size")
                   if target.oss.get(k) in (None, "")]
        if missing:
            raise XcbError(f"gateway: rados target of cell {target.cell_id}: oss lacks {', '.join(missing)}")
        rados = {**target.oss, "cksio": bool(t.get("cksio", True))}
    elif role != "manager" and not (localroot or target.path):
        raise XcbError(f"gateway: {target.backend} target of cell {target.cell_id} has no path")
    maxbsz = t.get("buffers_maxbsz")
    return render(
        TEMPLATES, f"{daemon}.cfg.j2",
        name=name, gateway=gateway or name, cell_id=target.cell_id, backend=target.backend,
        role=role, manager=manager, adminpath=str(adminpath), port=port, http_port=http_port,
        allow_hosts=list(allow_hosts), localroot=localroot or target.path, rados=rados,
        ceph=sorted(t["ceph"].items()), origins=origins, report_addr=report_addr,
        tls_cert=str(tls[0]), tls_key=str(tls[1]), shared=target.backend == "rados",
        space_min=CMS_SPACE[0], space_hwm=CMS_SPACE[1], async_off=t.get("async") is False,
        tpc_xfr=TPC_XFR, xrdcp=shutil.which("xrdcp") or "xrdcp",
        buffers_maxbsz=_xrd_size(int(maxbsz)) if maxbsz else None)


@dataclass
class Server:
    """One xrootd or cmsd process of a gateway."""
    daemon: str  # xrootd | cmsd
    role: str  # standalone | server | manager
    name: str  # instance name (-n)
    port: int
    http_port: int | None
    config: Path
    log: Path
    localroot: str | None = None  # data servers of tmpfs/cephfs targets
    proc: proc.Proc | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None


class Gateway:
    """A started gateway; stop() (or leaving the ``with`` block) stops every process of it.

    ``servers``: every xrootd/cmsd (``.pid``, ``.daemon``, ``.role``, ``.localroot``);
    ``origins``: the data servers; ``findings``: FINDING rows; ``client_env``: environment a
    client must run with; ``tls_cert``: the self-signed certificate (CA for https://).
    """

    def __init__(self, name: str, target: Target, addr: str, url_host: str, servers: list[Server],
                 findings: list[dict], client_env: dict[str, str], keep_dir: Path, live_dir: Path,
                 admin_dir: Path, procs: proc.ProcessSet | None):
        self.name, self.target, self.addr, self.url_host = name, target, addr, url_host
        self.servers, self.findings, self.client_env = servers, findings, client_env
        self.keep_dir, self._live_dir, self._admin_dir, self._procs = keep_dir, live_dir, admin_dir, procs
        self.tls_cert = admin_dir / "tls" / "cert.pem"
        self.start_seconds = 0.0
        front = next(s for s in servers if s.daemon == "xrootd" and s.role != "server")
        netloc = f"[{url_host}]" if ":" in url_host else url_host
        self.root_url = f"root://{netloc}:{front.port}"
        self.http_url = f"http://{netloc}:{front.http_port}"
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
        """Full URL of file ``name`` (root, http, https; davs/dav map to https/http)."""
        path = "/" + str(name).lstrip("/")
        if scheme in ("root", "xroot"):
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
        self.log_paths = _keep_live_files(self._live_dir, self.keep_dir, self.log_paths)
        shutil.rmtree(self._admin_dir, ignore_errors=True)

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


def _keep_live_files(live: Path, keep: Path, log_paths: list[Path]) -> list[Path]:
    """Copy what xrootd wrote in a private live dir (logs, ceph client logs) to the kept dir."""
    if live == keep or not live.exists():
        return log_paths
    shutil.copytree(live, keep, dirs_exist_ok=True)
    return [keep / p.relative_to(live) if p.is_relative_to(live) else p for p in log_paths]


def stop_recorded(state: Mapping[str, Any]) -> list[int]:
    """Stop the processes of a gateway recorded by :meth:`Gateway.state` (``xcbench gateway
    down``). A pid is only signalled while its command line still names its config file, so a
    reused pid is never hit. Returns the pids stopped."""
    stopped = []
    for s in reversed(state["servers"]):
        pid = s.get("pid")
        if not pid or not proc.pid_alive(pid):
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if s["config"].encode() not in cmdline:
            continue
        proc.stop_pid(pid, group=os.getpgid(pid) == pid)
        stopped.append(pid)
    _keep_live_files(Path(state["live_dir"]), Path(state["keep_dir"]), [])
    shutil.rmtree(state["admin_dir"], ignore_errors=True)
    return stopped


# --- readiness: talk the protocols, do not just look for a pid -------------------------------

def xroot_handshake(host: str, port: int, timeout: float = 2.0) -> int | None:
    """XRootD initial handshake; the server type (0 redirector, 1 data server) or None."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(struct.pack(">5i", 0, 0, 0, 4, 2012))
            buf = b""
            while len(buf) < 16:
                chunk = s.recv(16 - len(buf))
                if not chunk:
                    return None
                buf += chunk
    except OSError:
        return None
    _sid, status, dlen, _protover, kind = struct.unpack(">HHiii", buf)
    return kind if status == 0 and dlen == 8 else None


def http_answers(host: str, port: int, timeout: float = 2.0) -> bool:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("HEAD", "/")
        return conn.getresponse().status > 0
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def tcp_answers(host: str, port: int, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def url_host_for(addr: str) -> str:
    """Host name for URLs: 'localhost' when it means exactly ``addr`` (root TPC needs names)."""
    if addr != "127.0.0.1":
        return addr
    try:
        found = {ai[4][0] for ai in socket.getaddrinfo("localhost", None, type=socket.SOCK_STREAM)}
    except OSError:
        return addr
    return "localhost" if found == {"127.0.0.1"} else addr


# --- directories, users, certificate ---------------------------------------------------------

def xrootd_ids() -> tuple[int, int] | None:
    """uid/gid to run as (None when not root: then xrootd runs as the current user)."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(XROOTD_USER)
    except KeyError:
        raise XcbError(f"gateway: user {XROOTD_USER!r} missing (install the Debian package "
                       "xrootd-server): xrootd refuses to run as root") from None
    return pw.pw_uid, pw.pw_gid


def reachable_by(path: Path, ids: tuple[int, int] | None) -> bool:
    """Can user ``ids`` traverse every directory down to ``path``?"""
    if ids is None:
        return True
    uid, gid = ids
    p = Path(path).resolve()
    for d in [*reversed(p.parents), p]:
        st = d.stat()
        bit = 0o100 if st.st_uid == uid else 0o010 if st.st_gid == gid else 0o001
        if not st.st_mode & bit:
            return False
    return True


def _own(path: Path, ids: tuple[int, int] | None) -> None:
    if ids is not None:
        os.chown(path, *ids)


def _make_tls(directory: Path, ids, host: str) -> tuple[Path, Path]:
    directory.mkdir(mode=0o700)
    cert, key = directory / "cert.pem", directory / "key.pem"
    san = f"DNS:localhost,IP:127.0.0.1{',IP:' + host if host[:1].isdigit() and host != '127.0.0.1' else ''}"
    proc.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
              "-nodes", "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=localhost",
              "-addext", f"subjectAltName={san}"], timeout=60)
    for p in (directory, cert, key):
        _own(p, ids)
    return cert, key


# --- start / stop ----------------------------------------------------------------------------

def start_gateway(target: Target, *, workdir: Path, cluster: Cluster | None = None,
                  origins: int = 1, tunables: Mapping[str, Any] | None = None,
                  report_addr: str | None = None, bind: str = "127.0.0.1",
                  procs: proc.ProcessSet | None = None, name: str | None = None,
                  cell: Any = None, start_timeout: float = START_TIMEOUT) -> Gateway:
    """Start the gateway of ``target`` and wait until it answers; see the module docstring.

    ``tunables`` (a cell's ``gateway`` mapping): async, buffers_maxbsz, cksio, bind, ceph.
    A ``bind`` tunable overrides ``bind``. ``cell`` (optional) adds campaign-aware findings.
    """
    t = effective_tunables(target.backend, tunables)
    bind = str(t.pop("bind", None) or bind or "127.0.0.1").strip()  # empty: loopback, never *
    if origins < 1:
        raise XcbError(f"gateway: origins must be >= 1, not {origins}")
    wildcard = bind in WILDCARD_BINDS
    addr = "127.0.0.1" if wildcard else bind.strip("[]")
    ids = xrootd_ids()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    base = name or f"gw-{target.cell_id or 'x'}"
    keep, n = workdir / f"gateway-{base}", 1
    while keep.exists():
        n += 1
        keep = workdir / f"gateway-{base}-{n}"
    name = keep.name.removeprefix("gateway-")
    keep.mkdir(parents=True)
    admin = Path(tempfile.mkdtemp(prefix="xcbgw-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    try:
        _own(admin, ids)
        if reachable_by(keep, ids):
            live = keep
            _own(keep, ids)
        else:
            live = admin / "live"
            live.mkdir()
            _own(live, ids)
        tls = _make_tls(admin / "tls", ids, addr)
        env = {"XRD_CPUSEPGWRTRD": "0"}  # also for the xrdcp that root TPC runs inside the gateway
        client_env: dict[str, str] = {}
        osd_max = None
        if target.backend == "rados":
            if cluster is None:
                raise XcbError(f"gateway: rados target of cell {target.cell_id} needs a cluster")
            env["CEPH_CONF"] = str(cluster.gateway_conf(live))  # read by xrootd, as user xrootd
            client_env["XRD_CPUSEPGWRTRD"] = "0"
        if cluster is not None and target.backend in ("rados", "cephfs"):
            try:
                osd_max = cluster.osd_max_object_size()
            except Exception:  # a fact for findings only: never block a start on it
                osd_max = None
        findings = findings_for(cell, target, t, bind=bind, osd_max_object_size=osd_max,
                                origins=origins)
    except BaseException:
        shutil.rmtree(admin, ignore_errors=True)
        raise

    last_error: Exception | None = None
    # retried: a port taken between free_port() and the bind (new ports), and a start that dies
    # by a signal (XrdCeph 5.5 segfaulted now and then while starting, before any log line)
    for _attempt in range(3):
        try:
            servers = _plan(target, name, origins, addr, keep, live, admin, t, report_addr,
                            wildcard, ids, tls)
        except BaseException:
            shutil.rmtree(admin, ignore_errors=True)
            raise
        gw = Gateway(name, target, addr, url_host_for(addr), servers, findings, client_env,
                     keep, live, admin, procs)
        t0 = time.monotonic()
        try:
            _launch(gw, env, ids, wildcard, procs, start_timeout)
            gw.start_seconds = time.monotonic() - t0
            gw._relaunch = (env, ids, wildcard, procs, start_timeout)
            return gw
        except _PortTaken as e:
            last_error = e
            _stop_servers(gw)
        except _Crashed as e:
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


class _PortTaken(Exception):
    pass


class _Crashed(Exception):
    def __init__(self, error: XcbError):
        super().__init__(str(error))
        self.error = error


def _stop_servers(gw: Gateway) -> None:
    for s in reversed(gw.servers):
        if s.proc:
            proc.stop(s.proc)
            if gw._procs is not None:
                gw._procs.discard(s.proc)


def _plan(target, name, origins, addr, keep, live, admin, t, report_addr, wildcard, ids,
          tls) -> list[Server]:
    """Servers to start, in order (manager first), with ports and rendered configs."""
    used: set[int] = set()

    def port() -> int:
        p = free_port(addr, avoid=used)  # bound a moment later, via sdlisten
        used.add(p)
        return p

    allow = () if wildcard else ("localhost",)
    servers: list[Server] = []

    def add(daemon, role, sname, manager=None, localroot=None, with_http=True, p=None) -> None:
        # XrdHttp shares the xroot port: a redirector sends HTTP clients to an origin's
        # registered data port, so an origin must speak both protocols there
        p = p or port()
        hp = p if with_http else None
        adminpath = admin / sname
        adminpath.mkdir(exist_ok=True)
        _own(adminpath, ids)
        text = render_config(daemon, role=role, name=sname, target=target, port=p, http_port=hp,
                             adminpath=adminpath, manager=manager, localroot=localroot,
                             tunables=t, report_addr=report_addr, allow_hosts=allow,
                             origins=origins, gateway=name, tls=tls)
        fname = f"{sname}-{daemon}.cfg"
        for d in {keep, live}:
            (d / fname).write_text(text)
        servers.append(Server(daemon, role, sname, p, hp, live / fname,
                              live / f"{sname}-{daemon}.log", localroot))

    if origins == 1:
        add("xrootd", "standalone", "xcb", localroot=target.path)
        return servers
    mport = port()
    manager = f"{addr}:{mport}"
    add("cmsd", "manager", "mgr", manager=manager, with_http=False, p=mport)
    add("xrootd", "manager", "mgr", manager=manager)
    for i in range(1, origins + 1):
        root = None
        if target.backend != "rados":  # own subdir per origin, so files can be counted per origin
            root = os.path.join(target.path, f"origin-{i}")
            os.makedirs(root, exist_ok=True)
            _own(Path(root), ids)
        add("cmsd", "server", f"o{i}", manager=manager, localroot=root, with_http=False)
        add("xrootd", "server", f"o{i}", manager=manager, localroot=root)
    return servers


def _launch(gw: Gateway, env: dict, ids, wildcard: bool, procs, timeout: float) -> None:
    if gw.target.path and gw.target.backend != "rados":
        _own(Path(gw.target.path), ids)  # the export root must be writable by xrootd
    deadline = time.monotonic() + timeout
    for s in gw.servers:
        cmd = [s.daemon] + (["-R", XROOTD_USER] if ids is not None else [])
        cmd += ["-c", s.config, "-l", f"={s.log}", "-n", s.name]
        listen = [] if wildcard or (s.daemon == "cmsd" and s.role == "server") else \
            sorted({s.port} | ({s.http_port} if s.http_port else set()))
        if listen:  # pre-bind on the loopback address (see the module docstring)
            cmd = [sys.executable, "-m", "xcbench.sdlisten",
                   *[a for p in listen for a in ("--listen", f"{gw.addr}:{p}")], "--", *cmd]
        s.proc = proc.spawn(cmd, name=f"{gw.name}/{s.name}-{s.daemon}", log=s.log.with_suffix(".out"),
                            env=env, cwd=gw._admin_dir / s.name, procs=procs)
        if s.daemon == "cmsd" and s.role == "manager":
            # an origin's cmsd that finds the manager port closed retries only after 6 s
            _wait_server(gw, s, deadline)
    for s in gw.servers:
        _wait_server(gw, s, deadline)
    if len(gw.origins) > 1:
        _wait_cluster(gw, deadline)


def _failed(gw: Gateway, s: Server, why: str) -> XcbError:
    lines = [ln for ln in (proc.tail(s.log, 8) + "\n" + proc.tail(s.log.with_suffix(".out"), 4))
             .splitlines() if ln.strip()]
    return XcbError(f"gateway {gw.name}: {s.daemon} {s.name} (cell {gw.target.cell_id}) {why}; "
                    f"config {s.config}; log {s.log}: " + " | ".join(lines[-8:]))


def _wait_server(gw: Gateway, s: Server, deadline: float) -> None:
    while True:
        if not s.proc.alive():
            rc = s.proc.popen.returncode
            if rc == EXIT_BIND:
                raise _PortTaken(proc.tail(s.log.with_suffix(".out"), 1))
            if rc is not None and rc < 0:
                raise _Crashed(_failed(gw, s, f"was killed by signal {-rc} while starting"))
            raise _failed(gw, s, f"exited with status {rc} while starting")
        if s.daemon == "xrootd":
            ok = xroot_handshake(gw.addr, s.port) is not None and http_answers(gw.addr, s.http_port)
        elif s.role == "manager":
            ok = tcp_answers(gw.addr, s.port)
        else:  # a data server's cmsd: its login is checked as part of the cluster below
            ok = "initialization completed" in proc.tail(s.log, 200)
        if ok:
            return
        if time.monotonic() > deadline:
            raise _failed(gw, s, "did not answer in time")
        time.sleep(0.05)


def _wait_cluster(gw: Gateway, deadline: float) -> None:
    """Wait until the manager cmsd has every origin logged in and redirects."""
    mgr = next(s for s in gw.servers if s.daemon == "cmsd" and s.role == "manager")
    want = len(gw.origins)
    while True:
        lines = proc.tail(mgr.log, 2000).splitlines()
        logged = sum("Primary server" in ln and "logged in" in ln for ln in lines)
        if logged >= want and any("manager service enabled" in ln for ln in lines):
            return
        if time.monotonic() > deadline:
            raise _failed(gw, mgr, f"saw {logged} of {want} origins log in")
        time.sleep(0.05)
