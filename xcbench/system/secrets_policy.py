"""Where a secret may go: the one check every client that sends a credential makes, and what a
matrix may not decide.

The rule (README, "Shared hosts"):

1. A secret (a Prometheus token or user:password, an FTS token, an X509 proxy the fts3 client
   delegates) travels only over TLS whose certificate is verified, or to this machine's
   loopback (127.0.0.0/8, ::1, localhost): :func:`transport_problem`.
2. Where secrets go and which secret is sent are the operator's: the command line, or an
   inventory file given on it (``--hosts FILE``). A matrix (and an inventory inline in it or
   named by it) is data from anyone: a matrix's own Prometheus ``auth`` is refused
   (:func:`matrix_prometheus_auth`), and in its inventory (:func:`matrix_inventory_problems`)
   a Prometheus ``auth``, an ssh host (it receives the gateway keyring and the run's CA key) and ``ceph``
   (which cluster's keyring root copies for the gateways).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from xcbench.errors import XcbError
from xcbench.system.ports import is_loopback_url

RULE = ("a secret goes only over https:// with the certificate verified, or to this machine's "
        "loopback (127.0.0.1, ::1, localhost)")
OPERATOR = "the command line or an inventory given with --hosts FILE"


def transport_problem(url: Any, verify: Any = True) -> str | None:
    """Why a secret may not be sent to ``url`` with TLS verification ``verify`` (True, False
    or a CA bundle path); None when it may."""
    if not isinstance(url, str):
        return f"{url!r} is not a URL"
    if is_loopback_url(url):
        return None
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return f"{url!r} is not a URL"
    if scheme != "https":
        return f"{url}: {scheme or 'no scheme'}:// is not TLS: {RULE}"
    if verify is False or verify is None or (isinstance(verify, str) and not verify.strip()):
        return f"{url}: TLS verification is off: {RULE}"
    return None


def check_transport(url: Any, verify: Any, what: str) -> None:
    """XcbError("<what>: <why>") when a secret may not go to ``url``."""
    why = transport_problem(url, verify)
    if why is not None:
        raise XcbError(f"{what}: {why}")


# --- what a matrix may not decide ---------------------------------------------------------
def matrix_prometheus_auth(path: str) -> str:
    """The line refusing a matrix's own ``prometheus: auth``."""
    return (f"{path}: prometheus: auth: a matrix names no credential (it would choose the file "
            f"read and where it is sent): give --prometheus URL --prometheus-auth KIND:PATH, or "
            f"prometheus: in an inventory given with --hosts FILE")


def matrix_problems(raw: Any, path: str) -> list[str]:
    """One line per setting of a matrix that would choose a secret or where one goes: its FTS
    credentials' transport (its own ``prometheus: auth``: :func:`matrix_prometheus_auth`; its
    inventory: :func:`matrix_inventory_problems`, said by the checks of those keys)."""
    if not isinstance(raw, dict):
        return []
    return _fts_problems(raw, path)


def matrix_inventory_problems(inv: Any, where: str) -> list[str]:
    """One line per setting of an inventory from a matrix (inline, or a file it names) that
    only the operator's inventory may hold."""
    return _inventory_problems(inv, where) if isinstance(inv, dict) else []


def _inventory_problems(inv: dict, where: str) -> list[str]:
    out: list[str] = []
    prom = inv.get("prometheus")
    if isinstance(prom, dict) and "auth" in prom:
        out.append(f"{where}: prometheus: auth: a matrix names no credential: give "
                   f"--prometheus-auth KIND:PATH, or put prometheus: in an inventory given with "
                   f"--hosts FILE")
    for name, spec in (inv.get("hosts") or {}).items() if isinstance(inv.get("hosts"), dict) \
            else ():
        if isinstance(spec, dict) and spec.get("transport") == "ssh":
            out.append(f"{where}: host {name}: transport: ssh: an ssh host receives the gateway "
                       f"keyring and the run's CA key, so it comes only from {OPERATOR}, "
                       f"never from a matrix")
    if inv.get("ceph") is not None:
        out.append(f"{where}: ceph: which cluster's keyring root copies for the gateways comes "
                   f"only from --ceph-conf/--ceph-id or an inventory given with --hosts FILE, "
                   f"never from a matrix")
    return out


FTS_CREDENTIALS = ("token_file", "token_env", "cert")


def _fts_with_credentials(raw: dict) -> list[tuple[str, dict]]:
    """(where, campaign.fts) of the defaults and each backend whose FTS section names a
    credential (a token file or variable, or a proxy the fts3 client delegates)."""
    sections = [("defaults", raw.get("defaults"))]
    backends = raw.get("backends")
    if isinstance(backends, dict):
        sections += [(f"backend {b}", s) for b, s in backends.items()]
    out = []
    for where, sec in sections:
        camp = sec.get("campaign") if isinstance(sec, dict) else None
        fts = camp.get("fts") if isinstance(camp, dict) else None
        if isinstance(fts, dict) and any(k in fts for k in FTS_CREDENTIALS):
            out.append((where, fts))
    return out


def _fts_problems(raw: dict, path: str) -> list[str]:
    """campaign.fts of the defaults and of each backend: a credential only over verified TLS or
    loopback (a token sent, or the X509 proxy the fts3 client delegates)."""
    out = []
    for where, fts in _fts_with_credentials(raw):
        ep = fts.get("endpoint")
        why = transport_problem(ep, fts.get("verify", True))
        said = isinstance(ep, str) and ep.lower().startswith("http://") and \
            ("token_file" in fts or "token_env" in fts)  # the engine's own check says it
        if why is not None and isinstance(ep, str) and not said:
            field = "fts.verify" if fts.get("verify", True) is not True else "fts.endpoint"
            out.append(f"{path}: {where}: campaign.{field}: {why}")
    return out


def _endpoint_key(url: Any) -> tuple[str, str, int | None, str] | None:
    """An FTS endpoint compared by scheme, host, port and path (a trailing / ignored)."""
    if not isinstance(url, str):
        return None
    try:
        u = urlsplit(url.strip())
        return (u.scheme.lower(), (u.hostname or "").lower(), u.port, u.path.rstrip("/"))
    except ValueError:
        return None


def fts_endpoint_problems(raw: Any, path: str, granted: Any) -> list[str]:
    """One line per FTS endpoint of a matrix that would receive a credential (``token_file``,
    ``token_env``, ``cert``) without the operator naming it (``granted``: the URLs of
    ``--fts-endpoint``): a matrix alone sends no secret anywhere, loopback included."""
    if not isinstance(raw, dict):
        return []
    allowed = {_endpoint_key(g) for g in granted or ()}
    out = []
    for where, fts in _fts_with_credentials(raw):
        ep = fts.get("endpoint")
        if _endpoint_key(ep) not in allowed:
            out.append(f"{path}: {where}: campaign.fts.endpoint: {ep} would receive the FTS "
                       f"credential, and a matrix alone sends no secret anywhere: name it on the "
                       f"command line too (--fts-endpoint {ep})")
    return out
