"""One HTTP request to a server xcbench does not control, bounded in time and size.

``requests``' timeout applies to each read: a server that sends a byte just before each one
expires keeps a caller forever, and nothing limits how much it sends. :func:`get` gives the
whole request (connect, headers, body) one deadline and the answer a size cap:

- the request runs in a helper thread; the caller waits until the deadline and no longer;
- the body is read as it arrives (``read1``: one receive at a time), counted and cut at the cap;
- redirects are not followed (an answer elsewhere is not the server that was named);
- the answer is asked for uncompressed (a small gzip bomb would pass any cap on the wire).

A server that trickles its headers can hold the helper thread (not the caller) for up to
http.client's 100 header lines times the per-read timeout; it holds at most one answer's cap.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

MAX_ANSWER = 32 << 20  # bytes of one answer (a Prometheus range answer of a level is < 1 MiB)
_CHUNK = 1 << 16


class HttpLimit(Exception):
    """The request did not end within its deadline (``late``) or its answer exceeded the cap."""

    def __init__(self, message: str, *, late: bool = False):
        super().__init__(message)
        self.late = late


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]


def get(session: Any, url: str, *, deadline: float, max_bytes: int = MAX_ANSWER,
        **kw: Any) -> Answer:
    """``session.get(url, **kw)`` finished within ``deadline`` seconds, its body at most
    ``max_bytes``; HttpLimit otherwise, the exceptions of ``requests`` as they are."""
    return request(session, "GET", url, deadline=deadline, max_bytes=max_bytes, **kw)


def request(session: Any, method: str, url: str, *, deadline: float,
            max_bytes: int = MAX_ANSWER, **kw: Any) -> Answer:
    """:func:`get` for any method."""
    end = time.monotonic() + deadline
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["answer"] = _fetch(session, method, url, end, max_bytes, kw)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=work, name="xcb-http", daemon=True)
    t.start()
    t.join(max(0.0, end - time.monotonic()))
    if t.is_alive():
        raise HttpLimit(f"no complete answer in {deadline:g} s", late=True)
    if "error" in box:
        raise box["error"]
    return box["answer"]


def _fetch(session: Any, method: str, url: str, end: float, max_bytes: int, kw: dict) -> Answer:
    kw.setdefault("timeout", max(0.1, end - time.monotonic()))
    kw["headers"] = {**(kw.get("headers") or {}), "Accept-Encoding": "identity"}
    r = session.request(method, url, stream=True, allow_redirects=False, **kw)
    try:
        if r.headers.get("Content-Encoding", "identity").lower() != "identity":
            raise HttpLimit(f"a compressed answer ({r.headers['Content-Encoding'][:20]}) "
                            "although none was asked for")
        declared = r.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > max_bytes:
            raise HttpLimit(f"an answer of {int(declared):,} bytes (more than {max_bytes:,})")
        parts, size = [], 0
        while True:
            if time.monotonic() > end:
                raise HttpLimit("the answer did not end in time", late=True)
            chunk = r.raw.read1(_CHUNK, decode_content=False)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise HttpLimit(f"an answer of more than {max_bytes:,} bytes")
            parts.append(chunk)
        return Answer(r.status_code, b"".join(parts), dict(r.headers))
    finally:
        r.close()
