"""The telemetry's part of a matrix (xcbench.matrix.sections): ``prometheus:``, the site's
Prometheus the run queries (xcbench.telemetry.prometheus)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.matrix import sections
from xcbench.system import secrets_policy
from xcbench.system.http_auth import check_url, read_auth
from xcbench.telemetry.prometheus import parse_duration

PROMETHEUS_KEYS = ("url", "auth", "step", "timeout")
MAX_PROM_TIMEOUT = 60.0  # seconds: a level waits at most one timeout for a slow Prometheus


def matrix_prometheus(raw: Any, path: str) -> dict | None:
    """The matrix's ``prometheus:`` {url, auth, step, timeout} as the telemetry device takes it
    ({"url", "auth": (kind, secret) | None, "scrape_interval"?, "timeout"?}); None without one.

    A matrix is data: the URL is checked to be a plain http(s) URL (no credentials in it), the
    auth is a reference to a file (``bearer:PATH`` or ``basic:PATH``, relative to the matrix),
    read here and registered as a secret; nothing of it becomes a config line or a command.
    XcbError (one line naming the file and the field) when it is bad."""
    spec = raw.get("prometheus") if isinstance(raw, dict) else None
    if spec is None:
        return None
    at = f"{path}: prometheus"
    if not isinstance(spec, dict) or "url" not in spec:
        raise XcbError(f"{at}: must be a mapping with url (and optionally auth: bearer:PATH or "
                       f"basic:PATH, step, timeout)")
    for key in spec:
        if key not in PROMETHEUS_KEYS:
            close = difflib.get_close_matches(str(key), PROMETHEUS_KEYS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(PROMETHEUS_KEYS)}"
            raise XcbError(f"{at}: {key}: unknown key ({hint})")
    for key in ("url", "auth"):
        if key in spec and (not isinstance(spec[key], str) or not spec[key].strip()):
            raise XcbError(f"{at}: {key}: must be a non-empty string")
    out: dict[str, Any] = {"url": check_url(spec["url"], f"{at}: url")}
    if "auth" in spec:  # the operator's, never the matrix's (xcbench.system.secrets_policy)
        raise XcbError(secrets_policy.matrix_prometheus_auth(path))
    auth = spec.get("auth")
    if auth is not None:
        kind, sep, file = auth.partition(":")
        if sep and file and not Path(file).is_absolute():
            auth = f"{kind}:{Path(path).parent / file}"  # a file beside the matrix
    try:
        out["auth"] = read_auth(auth, "auth")
    except XcbError as e:  # the matrix first, then the auth file and what is wrong with it
        raise XcbError(f"{at}: auth: {e}") from None
    for key, name, top in (("step", "scrape_interval", 3600.0), ("timeout", "timeout", MAX_PROM_TIMEOUT)):
        if key not in spec:
            continue
        value = spec[key]
        try:
            if isinstance(value, bool):
                raise ValueError(value)
            secs = float(value) if isinstance(value, (int, float)) else parse_duration(value)
        except (TypeError, ValueError):
            secs = float("nan")
        if not 0 < secs <= top:
            raise XcbError(f"{at}: {key}: {value!r} is not a duration in (0, {top:g} s] "
                           f"(e.g. 15s, 1m or a number of seconds)")
        out[name] = secs
    return out


def check_prometheus(raw: Any, path: str) -> None:
    matrix_prometheus(raw, path)


sections.register("prometheus", check_prometheus)
