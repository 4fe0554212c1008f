"""What a gateway agent may say, checked before the coordinator acts on it.

A gateway host is another machine: a compromised one (or the xrootd user there) must not make
the coordinator (often root) write outside the run, run out of memory or stop on a traceback.
Each line is one of the messages xcbench.gateway.agent sends, each field typed and capped:

    {"hello": {...}}  {"ready": {...}}  {"sample": {...}}  {"cluster": {...}}
    {"end": {"logs": {...}}}  {"error": "..."}

File names (configs, logs) are plain names (never a path), numbers finite, strings capped, lists
and mappings of at most a few dozen entries. Anything else is refused with the reason
(:func:`check`) and the coordinator fails that host's part of the gateway.
"""

from __future__ import annotations

import math
from typing import Any

KINDS = ("hello", "ready", "sample", "cluster", "end", "error")
MAX_LINE = 8 << 20  # characters of one message: a ready's configs and an end's log tails
RAW_CAP = 256 << 20  # characters of one agent's stream kept (a sample a second: days of them)
MAX_TEXT = 256  # characters of a name, an address, a version
MAX_NOTE = 4096  # characters of a limit's source or a storage note (a mount's error line)
MAX_FILE = 1 << 20  # characters of one config, certificate or log tail
MAX_ITEMS = 64  # servers of one part, configs, logs, made dirs, entries of a sample
MAX_ERROR = 2000  # characters of an agent's error line kept
DAEMONS = ("xrootd", "cmsd")
SERVER_ROLES = ("standalone", "server", "manager")


def check(msg: Any) -> str | None:
    """Why ``msg`` (one decoded line) is not a message a gateway agent may send; None if it is."""
    if not isinstance(msg, dict) or len(msg) != 1:
        return "not a JSON object of one message"
    kind, body = next(iter(msg.items()))
    if kind not in KINDS:
        return f"{str(kind)[:40]!r}: not one of {', '.join(KINDS)}"
    if kind == "error":
        return None if isinstance(body, str) else "error: not a string"
    if not isinstance(body, dict):
        return f"{kind}: not a mapping"
    return _CHECKS[kind](body)


def _hello(h: dict) -> str | None:
    return _fields("hello", h, {"version": _text, "pid": _count, "clock": _number,
                                "host": _text})


def _ready(r: dict) -> str | None:
    return _fields("ready", r, {"manager": _opt(_text), "tls_cert": _opt(_file),
                                "seconds": _opt(_number), "storage": _opt(_plain_map),
                                "made": _opt(_list_of(_note)), "configs": _opt(_files),
                                "servers": _list_of(_server)})


def _sample(s: dict) -> str | None:
    return _fields("sample", s, {"seq": _count, "wall": _opt(_number), "cores": _opt(_number),
                                 "rss": _opt(_count), "limit": _opt(_limit),
                                 "servers": _map_of(_counters)})


def _cluster(c: dict) -> str | None:
    return _fields("cluster", c, {"logged_in": _count})


def _end(e: dict) -> str | None:
    return _fields("end", e, {"logs": _opt(_files)})


_CHECKS = {"hello": _hello, "ready": _ready, "sample": _sample, "cluster": _cluster, "end": _end}


# --- the field checks: each says why a value is wrong (a short phrase) or None -------------
def _fields(kind: str, body: dict, spec: dict) -> str | None:
    """Every key of ``body`` one of ``spec`` (a missing one: checked as None)."""
    for k in body:
        if k not in spec:
            return f"{kind}: {str(k)[:40]!r}: not a field of {kind}"
    for k, ok in spec.items():
        why = ok(body.get(k))
        if why is not None:
            return f"{kind}: {k}: {why}"
    return None


def _opt(ok):
    return lambda v: None if v is None else ok(v)


def _text(v: Any) -> str | None:
    return None if isinstance(v, str) and len(v) <= MAX_TEXT else \
        f"not a string of at most {MAX_TEXT} characters"


def _note(v: Any) -> str | None:
    return None if isinstance(v, str) and len(v) <= MAX_NOTE else \
        f"not a string of at most {MAX_NOTE} characters"


def _file(v: Any) -> str | None:
    return None if isinstance(v, str) and len(v) <= MAX_FILE else \
        f"not a text of at most {MAX_FILE >> 20} MiB"


def _name(v: Any) -> str | None:
    """A plain file name (what the coordinator keeps it as): never a path."""
    if _text(v) is not None or v in ("", ".", "..") or "/" in v or "\0" in v:
        return "not a plain file name"
    return None


def _number(v: Any) -> str | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < 1e18
    return None if ok else "not a finite number"


def _count(v: Any) -> str | None:
    ok = isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 62
    return None if ok else "not a count"


def _port(v: Any) -> str | None:
    return None if _count(v) is None and 0 < v < 65536 else "not a port"


def _plain_map(v: Any) -> str | None:
    if not isinstance(v, dict) or len(v) > MAX_ITEMS:
        return f"not a mapping of at most {MAX_ITEMS} entries"
    for k, x in v.items():
        if _text(k) is not None or not (x is None or isinstance(x, bool) or _note(x) is None
                                         or _number(x) is None):
            return f"{str(k)[:40]!r}: not a plain value"
    return None


def _list_of(ok):
    def check_list(v: Any) -> str | None:
        if not isinstance(v, list) or len(v) > MAX_ITEMS:
            return f"not a list of at most {MAX_ITEMS} entries"
        for i, x in enumerate(v):
            why = ok(x)
            if why is not None:
                return f"entry {i}: {why}"
        return None
    return check_list


def _map_of(ok, key=None):
    def check_map(v: Any) -> str | None:
        if not isinstance(v, dict) or len(v) > MAX_ITEMS:
            return f"not a mapping of at most {MAX_ITEMS} entries"
        for k, x in v.items():
            why = (key or _text)(k) or ok(x)
            if why is not None:
                return f"{str(k)[:40]!r}: {why}"
        return None
    return check_map


_files = _map_of(_file, key=_name)  # {plain file name: text}: configs, log tails


def _server(v: Any) -> str | None:
    if not isinstance(v, dict):
        return "not a mapping"
    if v.get("daemon") not in DAEMONS:
        return f"daemon: not one of {', '.join(DAEMONS)}"
    if v.get("role") not in SERVER_ROLES:
        return f"role: not one of {', '.join(SERVER_ROLES)}"
    return _fields("server", v, {"daemon": _text, "role": _text, "name": _name, "port": _port,
                                 "http_port": _opt(_port), "pid": _opt(_count),
                                 "config": _name, "log": _name})


def _counters(v: Any) -> str | None:
    if not isinstance(v, dict):
        return "not a mapping"
    return _fields("server", v, {"pid": _opt(_count), "cpu_s": _opt(_number),
                                 "wchar": _opt(_count), "rss": _opt(_count)})


def _limit(v: Any) -> str | None:
    if not isinstance(v, dict):
        return "not a mapping"
    return _fields("limit", v, {"cores": _opt(_number), "source": _opt(_note)})


def one_line(text: Any, cap: int = MAX_ERROR) -> str:
    """``text`` (an agent's error, its stderr's tail) as one line of printable text, capped: it
    ends up in an error message on the operator's terminal."""
    s = "".join(c if c.isprintable() else " " for c in str(text)[:cap])
    return " ".join(s.split())
