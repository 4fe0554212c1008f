"""Where a campaign reads and writes: a Gateway (xcbench.gateway) or a bare URL, and the
protocol/client choices that work against it, each recorded with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from xcbench.errors import XcbError


@dataclass
class Endpoint:
    label: str
    root_url: str | None = None
    http_url: str | None = None
    backend: str = "unknown"            # tmpfs | cephfs | rados | unknown (for the records)
    client_env: dict[str, str] = field(default_factory=dict)
    local_dirs: list[str] = field(default_factory=list)  # where its files live on this host
    name_prefix: str = ""               # e.g. a rados target's per-cell object name prefix
    gateway: Any = None

    def name(self, name: str) -> str:
        """``name`` (absolute) under this endpoint's prefix, so cleanup finds what we wrote."""
        return self.name_prefix.rstrip("/") + name if self.name_prefix else name

    def base(self, scheme: str) -> str:
        url = self.root_url if scheme == "root" else self.http_url
        if not url:
            raise XcbError(f"campaign: {self.label} has no {scheme} URL "
                           f"(give a {scheme}:// URL or a gateway)")
        return url

    def url(self, name: str, scheme: str, user: str | None = None) -> str:
        """URL of ``name`` (an absolute path); ``user`` spreads XRootD connections."""
        base = self.base(scheme)
        if scheme == "root":
            if user:
                p = urlsplit(base)
                base = f"{p.scheme}://{user}@{p.netloc.rsplit('@', 1)[-1]}"
            return f"{base}/{name}"
        return base + name


def endpoint(x: Any, label: str) -> Endpoint:
    """An Endpoint from a Gateway or a root://, http:// URL (host:port, path ignored)."""
    if x is None:
        raise XcbError(f"campaign: no {label} given")
    if isinstance(x, Endpoint):
        return x
    if isinstance(x, str):
        p = urlsplit(x)
        if p.scheme in ("root", "xroot", "roots") and p.netloc:
            return Endpoint(label, root_url=f"{'roots' if p.scheme == 'roots' else 'root'}://{p.netloc}")
        if p.scheme in ("http", "https", "davs") and p.netloc:
            return Endpoint(label, http_url=f"{'http' if p.scheme == 'http' else 'https'}://{p.netloc}")
        raise XcbError(f"campaign: {label}: {x!r} is not a root://, roots://, http:// or https:// URL")
    target = getattr(x, "target", None)
    backend = getattr(target, "backend", "unknown") or "unknown"
    # local dirs of a POSIX export (an object store has none: no localroot, no path)
    origins = getattr(x, "origins", None) or []
    dirs: list[str] = [o.localroot for o in origins if getattr(o, "localroot", None)]
    target_path = getattr(target, "path", None)
    if not dirs and target_path:
        dirs = [target_path]
    prefix = str((getattr(target, "info", None) or {}).get("name_prefix") or "")
    return Endpoint(label, root_url=getattr(x, "root_url", None), http_url=getattr(x, "http_url", None),
                    backend=backend, client_env=dict(getattr(x, "client_env", {}) or {}),
                    local_dirs=dirs, name_prefix=prefix, gateway=x)


def is_xrdceph(ep: Endpoint) -> bool:
    """An XrdCeph gateway: its clients must avoid pgread/pgwrite (the gateway's client_env,
    set by the backend, says so), and it refuses chmod and root TPC."""
    return ep.client_env.get("XRD_CPUSEPGWRTRD") == "0"


def choose(mode: str, client: str, dest: Endpoint, source: Endpoint | None) -> tuple[str, str, list[dict]]:
    """(scheme, transfer client kind, choices) for a campaign; every choice says why."""
    choices: list[dict] = []

    def note(what: str, chosen: str, why: str) -> None:
        choices.append({"what": what, "chosen": chosen, "why": why})

    macaroons = getattr(dest.gateway, "security", None) == "macaroons"
    if macaroons and (mode == "tpc-root" or (mode == "push" and client == "xrootd")):
        raise XcbError(f"campaign: security macaroons with mode {mode} and client {client}: root:// "
                       "carries no macaroon (XRootD 5.5's ztn validates SciTokens only); use client "
                       "gfal2 (https) or mode tpc-http")
    if mode == "push":
        if macaroons and dest.http_url:
            scheme = "http"
            note("protocol", "https", "security macaroons: macaroons travel over HTTP only")
        elif client == "xrootd":
            scheme = "root"
            note("protocol", "root", "the XRootD client pushes over root://")
        elif is_xrdceph(dest) and dest.http_url:
            scheme = "http"
            note("protocol", "http", "gfal2 over root:// into XrdCeph fails ([3016] Unable to "
                 "fchmod: XrdCeph refuses chmod); over http:// it works (RAL runs Echo over WebDAV)")
        else:
            scheme = "root" if dest.root_url else "http"
            note("protocol", scheme, "gfal2 push; root:// where the gateway has it")
        kind = client
    elif mode == "tpc-root":
        scheme, kind = "root", client
        note("protocol", "root", "root TPC: the destination pulls with xrdcp --server")
    else:
        scheme = "http"
        kind = "gfal2" if client == "gfal2" else "http"
        note("protocol", "http", "HTTP-TPC: COPY to the destination with a Source: header (pull)")
        if client == "xrootd":
            note("client", "http", "the XRootD client has no HTTP-TPC: the COPY request "
                 "(Source:, X-Number-Of-Streams) is sent directly")
    if mode != "push" and source is None:
        raise XcbError(f"campaign: mode {mode} needs a source (--source URL or a source gateway)")
    dest.base(scheme)
    if source is not None and mode != "push":
        source.base(scheme)
    for c in choices:  # the protocol as spoken: roots / https on a secure gateway
        if c["what"] == "protocol" and c["chosen"] in ("root", "http"):
            c["chosen"] = dest.base(scheme).split(":", 1)[0]
    return scheme, kind, choices
