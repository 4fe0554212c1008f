"""Credentials and endpoints a user hands in: an http(s) URL that carries no credentials, and a
token or user:password read from a file (never a command line), registered with
xcbench.system.secrets so that it reaches no result, log or report."""

from __future__ import annotations

from urllib.parse import urlsplit

from xcbench.errors import XcbError
from xcbench.system import secrets
from xcbench.system.secrets_policy import check_transport
from xcbench.system.userfiles import read_text

AUTH_KINDS = ("bearer", "basic")


def check_url(url: str, what: str = "--prometheus") -> str:
    """An http(s) URL of a Prometheus (its API is under /api/v1); XcbError otherwise."""
    u = (url or "").strip().rstrip("/")
    parts = urlsplit(u)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise XcbError(f"{what} {url!r}: not an http(s) URL of a Prometheus "
                       "(e.g. http://prometheus.example:9090)")
    if parts.username or parts.password:
        raise XcbError(f"{what}: no credentials in the URL; give them in a file with "
                       "--prometheus-auth bearer:PATH or basic:PATH")
    return u


def read_auth(spec: str | None, what: str = "--prometheus-auth") -> tuple[str, str] | None:
    """("bearer", token) or ("basic", "user:password") from ``kind:PATH``; registered with
    xcbench.system.secrets so that it never reaches a result, a log or a report."""
    if not spec:
        return None
    kind, sep, path = spec.partition(":")
    if not sep or kind not in AUTH_KINDS or not path:
        raise XcbError(f"{what} {spec!r}: give bearer:PATH (a file holding the token) or "
                       "basic:PATH (a file holding user:password)")
    lines = read_text(path, f"{what} {kind} file").strip().splitlines()
    value = lines[0].strip() if lines else ""
    if not value or (kind == "basic" and ":" not in value):
        raise XcbError(f"{path}: {what} {kind} file: "
                       + ("empty" if not value else "its first line must be user:password"))
    secrets.register(value)
    if kind == "basic":
        secrets.register(value.partition(":")[2])
    return kind, value


def check_secret_url(url: str, auth: object, what: str = "--prometheus") -> None:
    """XcbError when credentials ``auth`` (a (kind, secret) pair, or its ``kind:PATH``) would go
    to ``url`` over anything but verified TLS or loopback (xcbench.system.secrets_policy)."""
    if auth:
        check_transport(url, True, what)
