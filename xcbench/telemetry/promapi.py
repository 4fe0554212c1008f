"""A small client of the Prometheus HTTP API (``/api/v1/query``, ``/api/v1/query_range``).

Every call is bounded: ``timeout`` is the whole request's deadline (connect, headers, body), the
answer at most MAX_ANSWER bytes (xcbench.system.bounded_http), and it raises :class:`PromError` (one line, no
secret in it) for anything that is not a successful answer: the server down or slow, an HTTP
error, an ``"status": "error"`` answer, garbage. The caller turns that into one finding and goes
on. Credentials come from a file (never the command line):

    bearer:PATH   the file holds a token (sent as ``Authorization: Bearer <token>``)
    basic:PATH    the file holds ``user:password`` on its first line

and are sent only over verified TLS or to loopback (xcbench.system.secrets_policy): a client
whose URL is anything else refuses every request before it connects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from xcbench.system import bounded_http
from xcbench.system.ports import is_loopback_url
from xcbench.system.secrets_policy import transport_problem

MAX_ANSWER = bounded_http.MAX_ANSWER
TIMEOUT = 5.0  # seconds per request: a slow Prometheus costs a level this much, not more


class PromError(Exception):
    """A query that did not give an answer (the message says why, in one line)."""


@dataclass
class PromClient:
    url: str
    auth: tuple[str, str] | None = None
    timeout: float = TIMEOUT
    _session: Any = field(default=None, repr=False)

    def session(self):
        import requests
        if self._session is None:
            why = transport_problem(self.url) if self.auth else None
            if why is not None:  # the credential never leaves on an unverified path
                raise PromError(f"credentials not sent: {why}")
            s = requests.Session()
            if is_loopback_url(self.url):
                s.trust_env = False  # an http_proxy variable would carry loopback traffic off the host
            if self.auth and self.auth[0] == "bearer":
                s.headers["Authorization"] = f"Bearer {self.auth[1]}"
            elif self.auth and self.auth[0] == "basic":
                user, _, pw = self.auth[1].partition(":")
                s.auth = (user, pw)
            self._session = s
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def get(self, path: str, params: dict[str, Any], timeout: float | None = None) -> Any:
        """``data`` of a successful answer; PromError otherwise. ``timeout``: this request's
        (default ``self.timeout``; per call, so threads sharing the client do not race on it)."""
        import requests
        limit = self.timeout if timeout is None else timeout
        try:
            r = bounded_http.get(self.session(), f"{self.url}{path}", deadline=limit,
                                 max_bytes=MAX_ANSWER, params=params)
        except (requests.Timeout, bounded_http.HttpLimit) as e:
            if isinstance(e, bounded_http.HttpLimit) and not e.late:
                raise PromError(f"{self.url}{path}: {e}") from None
            self._session = None  # a helper thread may still hold it
            raise PromError(f"{self.url}: no answer in {limit:g} s") from None
        except requests.RequestException as e:
            raise PromError(f"{self.url}: {_short(e)}") from None
        try:
            body = json.loads(r.body)
        except (ValueError, RecursionError):
            body = None
        if not isinstance(body, dict):
            raise PromError(f"{self.url}{path}: HTTP {r.status}, not a Prometheus API answer")
        if body.get("status") != "success":
            raise PromError(f"{self.url}{path}: HTTP {r.status}: "
                            f"{body.get('errorType', 'error')}: {str(body.get('error', ''))[:200]}")
        return body.get("data")

    def query(self, q: str, at: float | None = None, timeout: float | None = None) -> list[dict]:
        params: dict[str, Any] = {"query": q}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return _vector(self.get("/api/v1/query", params, timeout), q)

    def query_range(self, q: str, start: float, end: float, step: float) -> list[dict]:
        data = self.get("/api/v1/query_range", {"query": q, "start": f"{start:.3f}",
                                                "end": f"{end:.3f}", "step": f"{step:g}"})
        if not isinstance(data, dict) or data.get("resultType") != "matrix":
            raise PromError(f"{q}: not a range answer")
        return list(data.get("result") or [])


def _vector(data: Any, q: str) -> list[dict]:
    if not isinstance(data, dict) or data.get("resultType") not in ("vector", "scalar"):
        raise PromError(f"{q}: not an instant vector answer")
    if data["resultType"] == "scalar":
        return [{"metric": {}, "value": data.get("result")}]
    return list(data.get("result") or [])


def _short(e: BaseException) -> str:
    """A requests error in a few words (its full text quotes the pool's internals)."""
    text = str(e)
    for marker in ("Connection refused", "Name or service not known", "timed out",
                   "Connection reset", "Remote end closed", "certificate verify failed"):
        if marker in text:
            return marker
    return type(e).__name__
