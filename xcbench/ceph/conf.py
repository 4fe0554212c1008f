"""Read, check and write ceph.conf files.

Ceph's own parser is lenient (``mon host``, ``mon_host`` and ``mon-host`` are one option), so
keys are normalised the same way here. :func:`check_conf` turns a missing or garbage file into a
one-line XcbError *before* librados gets a chance to hang or print a C++ backtrace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from xcbench.errors import XcbError

_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")


def norm_key(key: str) -> str:
    return "_".join(key.strip().replace("-", " ").replace("_", " ").split()).lower()


def parse_conf(text: str, *, source: str = "ceph.conf") -> dict[str, dict[str, str]]:
    """{section: {normalised key: value}}; raises XcbError naming the line on garbage."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = _SECTION.match(line)
        if m:
            current = sections.setdefault(m.group(1).strip(), {})
            continue
        if "=" not in line or current is None:
            what = "option outside any [section]" if "=" in line else "neither [section] nor key = value"
            raise XcbError(f"{source}: line {n}: not a ceph.conf ({what}): {line[:60]!r}")
        key, _, value = line.partition("=")
        value = re.split(r"\s[#;]", value, maxsplit=1)[0].strip()
        current[norm_key(key)] = value
    return sections


def check_conf(path: str | Path, *, need_mon_host: bool = True) -> dict[str, dict[str, str]]:
    """Parse ``path`` as a ceph.conf: XcbError if missing, unreadable, garbage or without mons."""
    p = Path(path)
    if not p.exists():
        raise XcbError(f"{p}: ceph.conf not found (give --ceph-conf PATH, set CEPH_CONF, "
                       "or start the embedded cluster with `xcbench cluster up`)")
    if p.is_dir():
        raise XcbError(f"{p}: is a directory, not a ceph.conf")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise XcbError(f"{p}: cannot read ceph.conf: {e.strerror}") from e
    if b"\0" in data:
        raise XcbError(f"{p}: not a ceph.conf (binary data)")
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        raise XcbError(f"{p}: not a ceph.conf (not UTF-8 text)") from e
    sections = parse_conf(text, source=str(p))
    if need_mon_host:
        has_mons = any("mon_host" in s for s in sections.values()) or any(
            name.startswith("mon.") and ("mon_addr" in s or "public_addr" in s)
            for name, s in sections.items())
        if not has_mons:
            raise XcbError(f"{p}: not a usable ceph.conf: no `mon host` in any section")
    return sections


def render_conf(sections: Mapping[str, Mapping[str, object]], header: str = "") -> str:
    """ceph.conf text from {section: {key: value}} (keys written as given, in order)."""
    out = [f"# {ln}" for ln in header.splitlines()] if header else []
    for name, opts in sections.items():
        if out:
            out.append("")
        out.append(f"[{name}]")
        for key, value in opts.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            out.append(f"{key} = {value}")
    return "\n".join(out) + "\n"


def mon_host(sections: dict[str, dict[str, str]]) -> str:
    return sections.get("global", {}).get("mon_host", "")


# options of a [global] section that name where a key is found (or hold one)
KEY_OPTIONS = ("keyring", "key", "keyfile")


def gateway_sections(global_section: Mapping[str, object], gateway_id: str,
                     client: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """The sections of a gateway's ceph.conf: the cluster's [global] without the options that
    say where keys are, a [client] section whose keyring is the gateway's key copy
    (``client["keyring"]``) for every Ceph user, and [client.<gateway_id>] = ``client``. A name or
    query that makes XrdCeph connect as another user (``user@pool:``, ``cephUserId=``) then finds
    no key for it, whatever keyrings the gateway's uid could read (xcbench.gateway.authz)."""
    glob = {k: v for k, v in global_section.items() if norm_key(str(k)) not in KEY_OPTIONS}
    return {"global": glob, "client": {"keyring": client["keyring"]},
            f"client.{gateway_id}": dict(client)}
