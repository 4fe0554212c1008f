"""Command-line values checked before a command starts anything (one line, exit 2).

argparse checks types; these check ranges and shapes that argparse cannot: a run name that
would escape the result store, a host list with garbage in it, a HOST:PORT without a port.
"""

from __future__ import annotations

import math
import re

from xcbench.errors import XcbError
from xcbench.system.fsutil import not_ours

_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|[0-9A-Fa-f:.]+)"
                   r"(?::\d{1,5})?$")


def number(flag: str, value: float | int | None, lo: float, hi: float, *,
           lo_open: bool = False) -> None:
    """A finite number in [lo, hi] (or (lo, hi] with ``lo_open``); None means not given."""
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise XcbError(f"{flag}: {value} is not a finite number")
    if value < lo or (lo_open and value == lo) or value > hi:
        shown = "a number this large" if isinstance(value, int) and value.bit_length() > 64 \
            else f"{value:g}"
        raise XcbError(f"{flag}: {shown} is out of range (must be "
                       f"{'>' if lo_open else '>='} {lo:g} and <= {hi:g})")


def int_list(flag: str, text: str, lo: int, hi: int) -> list[int]:
    """A comma-separated list of integers in [lo, hi] (iperf3 stream counts)."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise XcbError(f"{flag}: {text!r} is not a comma-separated list of integers") from None
    if not out or min(out) < lo or max(out) > hi:
        raise XcbError(f"{flag}: {text!r} must list integers >= {lo} and <= {hi}")
    return out


def name(flag: str, value: str | None) -> None:
    """A run directory name: one path component, printable."""
    if value is None:
        return
    if not value.strip() or value in (".", "..") or "/" in value or \
            any(not c.isprintable() for c in value) or len(value.encode(errors="replace")) > 200:
        raise XcbError(f"{flag}: {value!r} is not a directory name (one path component)")


def hosts(flag: str, value: str | None) -> list[str] | None:
    """A comma-separated host list (host or host:port each)."""
    if value is None:
        return None
    out = [h.strip() for h in value.split(",") if h.strip()]
    if not out:
        raise XcbError(f"{flag}: {value!r} names no host")
    for h in out:
        if not _HOST.match(h):
            raise XcbError(f"{flag}: {h!r} is not a host name or address")
        port = h.rsplit(":", 1)[1] if ":" in h and not h.endswith("]") and h.count(":") == 1 \
            else None
        if port is not None and not 0 < int(port) < 65536:
            raise XcbError(f"{flag}: {h!r}: port {port} is out of range")
    return out


def host_port(flag: str, value: str | None) -> None:
    """HOST:PORT (an xrd.report address)."""
    if value is None:
        return
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or \
            not _HOST.match(host):
        raise XcbError(f"{flag}: {value!r} is not HOST:PORT")


def directory(flag: str, value: str | None) -> None:
    """A directory to create or use: not an existing file."""
    import os
    if value is None:
        return
    if "\0" in value or not value.strip():
        raise XcbError(f"{flag}: {value!r} is not a path")
    if os.path.exists(value) and not os.path.isdir(value):
        raise XcbError(f"{flag}: {value}: exists and is not a directory")


def ours(flag: str, value: object) -> None:
    """A path the command makes or fills: refused (one line, untouched) when it is a symlink or
    another user's (or, missing, its nearest existing parent is another user's)."""
    if value is None:
        return
    why = not_ours(str(value))
    if why is not None:
        raise XcbError(f"{flag} {value}: {why}; refusing to make or write anything there "
                       "(give a path of your own)")
