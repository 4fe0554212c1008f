"""Where a secret may go: the one check every client that sends a credential makes, and what a
matrix may not decide.

The rule (docs/security.md#where-secrets-go):

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

from xcbench.errors import XcbError
from xcbench.system.ports import is_loopback_url, parse_url

RULE = ("a secret goes only over https:// with the certificate verified, or to this machine's "
        "loopback (127.0.0.1, ::1, localhost)")
OPERATOR = "the command line or an inventory given with --hosts FILE"


def transport_problem(url: Any, verify: Any = True) -> str | None:
    """Why a secret may not be sent to ``url`` with TLS verification ``verify`` (True, False
    or a CA bundle path); None when it may."""
    u = parse_url(url)  # the reading the request uses too: one parser decides
    if u is None:
        # (the URL is not quoted: user info in it may be a secret itself)
        return ("not a URL a secret goes to (user info, a backslash, a percent sign, a space or "
                "a fragment in it could be read as another host)")
    if is_loopback_url(url):
        return None
    scheme = u.scheme
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


def matrix_problems(cells: Any, path: str) -> list[str]:
    """One line per setting of a matrix's expanded ``cells`` that would choose a secret or where
    one goes: each cell's merged FTS credentials' transport (defaults, backends and ``include:``
    entries alike; its own ``prometheus: auth``: :func:`matrix_prometheus_auth`; its inventory:
    :func:`matrix_inventory_problems`, said by the checks of those keys)."""
    return _fts_problems(cells, path)


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


def fts_sections(cells: Any) -> list[tuple[str, dict]]:
    """(where, campaign.fts) of each of a matrix's expanded ``cells`` (objects with ``campaign``,
    ``label`` and ``id``: every cell with its defaults, backend and ``include:`` settings
    merged) whose FTS section names a credential (a token file or variable, or a proxy the fts3
    client delegates); once per distinct section, where the first cell having it."""
    out: list[tuple[str, dict]] = []
    seen: list[dict] = []
    for c in cells or ():
        camp = getattr(c, "campaign", None)
        fts = camp.get("fts") if isinstance(camp, dict) else None
        if isinstance(fts, dict) and any(k in fts for k in FTS_CREDENTIALS) and fts not in seen:
            seen.append(fts)
            out.append((f"cell {getattr(c, 'label', '?')} ({getattr(c, 'id', '?')})", fts))
    return out


def _fts_problems(cells: Any, path: str) -> list[str]:
    """Each cell's campaign.fts: a credential only over verified TLS or loopback (a token sent,
    or the X509 proxy the fts3 client delegates)."""
    out = []
    for where, fts in fts_sections(cells):
        ep = fts.get("endpoint")
        why = transport_problem(ep, fts.get("verify", True))
        said = isinstance(ep, str) and (  # the engine's own check says these
            (ep.lower().startswith("http://") and ("token_file" in fts or "token_env" in fts))
            or "@" in ep.split("://", 1)[-1].split("/", 1)[0])  # credentials in the URL
        if why is not None and isinstance(ep, str) and not said:
            field = "fts.verify" if fts.get("verify", True) is not True else "fts.endpoint"
            out.append(f"{path}: {where}: campaign.{field}: {why}")
    return out


def _endpoint_key(url: Any) -> tuple[str, str, int | None, str] | None:
    """An FTS endpoint compared by scheme, host, port and path (a trailing / ignored)."""
    u = parse_url(url.strip()) if isinstance(url, str) else None
    return None if u is None else (u.scheme, u.host, u.port, u.path.rstrip("/"))


def fts_endpoint_problems(cells: Any, path: str, granted: Any) -> list[str]:
    """One line per FTS endpoint of a matrix's expanded ``cells`` that would receive a credential
    (``token_file``, ``token_env``, ``cert``) without the operator naming it (``granted``: the URLs
    of ``--fts-endpoint``): a matrix alone sends no secret anywhere, loopback included."""
    allowed = {_endpoint_key(g) for g in granted or ()}
    out = []
    for where, fts in fts_sections(cells):
        ep = fts.get("endpoint")
        if _endpoint_key(ep) not in allowed:
            out.append(f"{path}: {where}: campaign.fts.endpoint: {ep} would receive the FTS "
                       f"credential, and a matrix alone sends no secret anywhere: name it on the "
                       f"command line too (--fts-endpoint {ep})")
    return out
