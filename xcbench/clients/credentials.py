"""A secure gateway's credentials as production clients find them (xcbench.gateway.security):

    X509_CERT_DIR      the CA directory XrdCl, gfal2/davix and xcbench's HTTP client trust
    BEARER_TOKEN_FILE  the WLCG token (XrdSecztn reads it for root://; gfal2 gets it as its
                       BEARER credential; the HTTP client sends ``Authorization: Bearer`` and,
                       for HTTP-TPC pulls, ``TransferHeaderAuthorization`` for the source)

They are process-wide (XrdCl and davix read the environment when they connect), so a campaign
exports them into ``os.environ``; the token itself is only ever read from its file, registered
with xcbench.system.secrets, and never put on a command line or into a record.
"""

from __future__ import annotations

import os
import ssl
import threading

from xcbench.system import secrets

EXPORTED = ("X509_CERT_DIR", "BEARER_TOKEN_FILE")
_lock = threading.Lock()
_cache: dict[str, tuple[float, str]] = {}


def export(env: dict[str, str], label: str) -> list[dict]:
    """Put a gateway's X509_CERT_DIR / BEARER_TOKEN_FILE into this process's environment;
    returns what was done for the campaign's settings (the token file's path, never its value)."""
    done = []
    for var in EXPORTED:
        value = env.get(var)
        if value and os.environ.get(var) != value:
            os.environ[var] = value
            done.append({"what": f"{var} for {label}", "chosen": "set",
                         "why": "the gateway's security mode (its CA / its token file)", "ok": True})
    return done


def bearer_token() -> str | None:
    """The token of BEARER_TOKEN (as WLCG clients look: the variable, then the file), or None."""
    value = os.environ.get("BEARER_TOKEN")
    if not value:
        path = os.environ.get("BEARER_TOKEN_FILE")
        if not path:
            return None
        try:
            mtime = os.stat(path).st_mtime
            with _lock:
                hit = _cache.get(path)
                if hit is None or hit[0] != mtime:
                    with open(path) as f:
                        _cache[path] = hit = (mtime, f.read().strip())
            value = hit[1]
        except OSError:
            return None
    secrets.register(value)
    return value or None


def ssl_context() -> ssl.SSLContext:
    """Verifying TLS context: the system store plus X509_CERT_DIR (the run's CA)."""
    ctx = ssl.create_default_context()
    cadir = os.environ.get("X509_CERT_DIR")
    if cadir and os.path.isdir(cadir):
        ctx.load_verify_locations(capath=cadir)
    return ctx
