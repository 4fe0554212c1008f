"""The xrootd user: gateways run as it (xrootd refuses root), so what they serve must be its.

One place for the name and the two questions backends and gateways both ask: which uid/gid to
hand files to, and whether that user can reach a directory.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from xcbench.errors import XcbError

XROOTD_USER = "xrootd"


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


def xrootd_ids_if_any() -> tuple[int, int] | None:
    """uid/gid of the xrootd user when it exists (None otherwise: no gateway on this host)."""
    try:
        pw = pwd.getpwnam(XROOTD_USER)
    except KeyError:
        return None
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


def own(path: Path | str, ids: tuple[int, int] | None) -> None:
    if ids is not None:
        os.chown(path, *ids)
