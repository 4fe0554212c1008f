"""Gateway configs: the cell's tunables over the backend's defaults, rendered xrootd/cmsd config
text, URL host names, and the per-gateway TLS certificate (see xcbench.gateway)."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from xcbench.backends.base import Target, backend_class
from xcbench.errors import XcbError
from xcbench.gateway.authz import namespace
from xcbench.system import proc
from xcbench.system.fsutil import make_dir
from xcbench.system.ports import check_bind, is_wildcard
from xcbench.system.templates import render
from xcbench.system.xrootd_user import XROOTD_USER, own, reachable_by, xrootd_ids

__all__ = ["XROOTD_USER", "reachable_by", "xrootd_ids"]  # re-exported for callers of old

TEMPLATES = "xcbench.xrootd_configs"
TUNABLE_KEYS = ("async", "buffers_maxbsz", "cksio", "bind", "ceph", "tpc")  # tpc: false drops both TPC handlers
TPC_XFR = 64  # concurrent TPC pulls a destination runs
CMS_SPACE = ("16m", "32m")  # min free space / high-water mark an origin needs to get new files


# XrdCeph's ceph.* directives (XRootD 5.5's libXrdCeph knows nbconnections and namelib) with
# their types; ceph.namelib loads a library into the gateway: never from a matrix
CEPH_OPTIONS: dict[str, tuple[type, int, int]] = {"nbconnections": (int, 1, 100)}


def ceph_problems(ceph: Any) -> list[tuple[str, str]]:
    """(field, why) for every ceph.* directive that is not a known name with a value of its
    type and range (a matrix is data: nothing else becomes a line of the gateway's config)."""
    if not isinstance(ceph, Mapping):
        return [("ceph", f"{ceph!r} is not a mapping of ceph.* directives")]
    out = []
    for key, value in ceph.items():
        spec = CEPH_OPTIONS.get(key) if isinstance(key, str) else None
        if spec is None:
            why = " (it loads a library into the gateway)" if key == "namelib" else ""
            out.append((f"ceph.{key}", f"not a ceph.* directive xcbench sets{why} (known: "
                        f"{', '.join(CEPH_OPTIONS)})"))
            continue
        kind, lo, hi = spec
        if isinstance(value, bool) or not isinstance(value, kind) or \
                not (isinstance(value, int) and lo <= value <= hi):
            out.append((f"ceph.{key}", f"{value!r} must be an integer in [{lo}, {hi}]"))
    return out


def _defaults(backend: str | Mapping[str, Any] | Target) -> Mapping[str, Any]:
    if isinstance(backend, Mapping):
        return backend
    if isinstance(backend, str):
        return backend_class(backend).target_defaults.get("gateway_defaults") or {}
    return backend.gateway_defaults or {}


def effective_tunables(backend: str | Mapping[str, Any] | Target,
                       tunables: Mapping[str, Any] | None) -> dict[str, Any]:
    """The cell's gateway tunables over the backend's defaults (``backend``: a Target, a
    backend name, or the defaults themselves)."""
    tunables = dict(tunables or {})
    unknown = sorted(set(tunables) - set(TUNABLE_KEYS))
    if unknown:
        raise XcbError(f"gateway tunables: unknown key {unknown[0]!r} (known: {', '.join(TUNABLE_KEYS)})")
    out = dict(_defaults(backend))
    out.update(tunables)
    ceph = out.get("ceph") or {}
    for fld, why in ceph_problems(ceph):
        raise XcbError(f"gateway tunables: {fld}: {why}")
    out["ceph"] = dict(ceph)
    return out


def _xrd_size(n: int) -> str:
    for unit, mult in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def gateway_inputs(target: Target, tunables: Mapping[str, Any] | None = None,
                   origins: int = 1) -> dict[str, Any]:
    """What a gateway's configs are rendered from, minus ports and paths: backend, origins, the
    effective tunables (bind excluded: an address) and the oss library with its arguments.
    Computed once: :func:`render_config` renders from it and the cell's fingerprint hashes it."""
    t = effective_tunables(target, {k: v for k, v in (tunables or {}).items() if k != "bind"})
    t.pop("bind", None)
    oss = target.backend_type.gateway_oss(target, t) if target.osslib else None
    return {"backend": target.backend, "origins": origins, "tunables": t, "oss": oss}


def render_config(daemon: str, *, role: str, name: str, target: Target, port: int,
                  adminpath: str | os.PathLike, http_port: int | None = None,
                  manager: str | None = None, localroot: str | None = None,
                  tunables: Mapping[str, Any] | None = None, report_addr: str | None = None,
                  allow_hosts: tuple[str, ...] = (), origins: int = 1, gateway: str = "",
                  tls: tuple[str, str] = ("cert.pem", "key.pem"),
                  security: Mapping[str, Any] | None = None,
                  authdb: str | os.PathLike = "authdb") -> str:
    """Text of one daemon's config (``daemon`` xrootd|cmsd; ``role`` standalone|server|manager).
    It exports the target's namespace only (xcbench.gateway.authz), and ``authdb``
    (authz.write_authdb) authorizes every request of an xrootd."""
    inputs = gateway_inputs(target, tunables, origins)
    t, osslib = inputs["tunables"], inputs["oss"]
    if osslib is None and role != "manager" and not (localroot or target.path):
        raise XcbError(f"gateway: {target.backend} target of cell {target.cell_id} has no path")
    maxbsz = t.get("buffers_maxbsz")
    return render(
        TEMPLATES, f"{daemon}.cfg.j2",
        name=name, gateway=gateway or name, cell_id=target.cell_id, backend=target.backend,
        export=namespace(target), authdb=str(authdb),
        role=role, manager=manager, adminpath=str(adminpath), port=port, http_port=http_port,
        allow_hosts=list(allow_hosts), localroot=localroot or target.path, osslib=osslib,
        ceph=sorted(t["ceph"].items()), origins=origins, report_addr=report_addr,
        tls_cert=str(tls[0]), tls_key=str(tls[1]), shared=bool(target.shared_store),
        security={"mode": "none", "cadir": None, "scitokens": None, "macaroons": None, **(security or {})},
        space_min=CMS_SPACE[0], space_hwm=CMS_SPACE[1], async_off=t.get("async") is False,
        tpc_xfr=TPC_XFR, xrdcp=shutil.which("xrdcp") or "xrdcp", tpc=t.get("tpc", True) is not False,
        buffers_maxbsz=_xrd_size(int(maxbsz)) if maxbsz else None)


def url_host_for(addr: str) -> str:
    """Host name for URLs: 'localhost' when it means exactly ``addr`` (root TPC needs names)."""
    if addr != "127.0.0.1":
        return addr
    try:
        found = {ai[4][0] for ai in socket.getaddrinfo("localhost", None, type=socket.SOCK_STREAM)}
    except OSError:
        return addr
    return "localhost" if found == {"127.0.0.1"} else addr


def make_tls(directory: Path, ids, host: str) -> tuple[Path, Path]:
    """A throwaway self-signed certificate (XrdHttp loads HTTP-TPC only with TLS configured)."""
    make_dir(directory, 0o711)  # root's; only the key is handed over (xrootd reads it)
    cert, key = directory / "cert.pem", directory / "key.pem"
    san = f"DNS:localhost,IP:127.0.0.1{',IP:' + host if host[:1].isdigit() and host != '127.0.0.1' else ''}"
    proc.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
              "-nodes", "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=localhost",
              "-addext", f"subjectAltName={san}"], timeout=60)
    own(cert, None, 0o644)
    own(key, ids, 0o600)
    return cert, key


def bind_address(target: Target, tunable: Any, given: str | None) -> str:
    """The address a gateway binds: the cell's ``bind`` (a matrix's: loopback only, as
    xcbench.system.ports.check_bind says), else ``given`` (the caller's, from the operator's
    inventory), else 127.0.0.1; never a wildcard (its authdb grants anyone the namespace)."""
    if tunable is not None and str(tunable).strip():
        for _field, why in check_bind(tunable):
            raise XcbError(f"cell {target.cell_id}: gateway.bind: {why}")
    bind = str((tunable if tunable is not None and str(tunable).strip() else None)
               or given or "127.0.0.1").strip()
    if is_wildcard(bind):
        raise XcbError(f"cell {target.cell_id}: gateway: bind {bind or '*'} would listen on every "
                       "interface; a gateway binds loopback or its host's inventory address")
    return bind
