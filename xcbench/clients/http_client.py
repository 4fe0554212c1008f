"""HTTP-TPC spoken directly: COPY with ``Source:`` (pull) and ``X-Number-Of-Streams``.

Used for tpc-http when the campaign client is the XRootD client (which has no HTTP-TPC), and by
the WLCG smoke test (xcbench.gateway.smoke) for its pull and push. The active side answers 201
and streams performance markers ("Perf Marker ... End") until a final ``success: ...`` or
``failure: ...`` line; checksums come from HEAD with ``Want-Digest: adler32``.
"""

from __future__ import annotations

import errno as E
import http.client
import re
import socket
import ssl
import time
from dataclasses import dataclass

from xcbench.clients.base import Client, Outcome, Progress, TransferError, normalise_adler32
from xcbench.clients.credentials import bearer_token, ssl_context
from xcbench.system.ports import parse_url
from xcbench.system.secrets_policy import transport_problem

_BYTES = re.compile(r"Stripe Bytes Transferred:\s*(\d+)")


def _left(deadline: float) -> float:
    left = deadline - time.time()
    if left <= 0:
        raise TransferError("Transfer timed out (FTS timeout reached)", E.ETIMEDOUT)
    return left


def tpc_headers(*, source: str | None = None, destination: str | None = None, overwrite: bool = True,
                streams: int | None = None, token: str | None = None) -> dict[str, str]:
    """An HTTP-TPC COPY's headers: a pull (``Source:``, the COPY sent to the destination) or a
    push (``Destination:``, sent to the source). ``token`` goes as TransferHeaderAuthorization:
    the active side hands it on to the other as its Authorization (token delegation)."""
    if (source is None) == (destination is None):
        raise ValueError("an HTTP-TPC COPY has a Source (pull) or a Destination (push)")
    h = {"Source": source} if source is not None else {"Destination": str(destination)}
    if streams:
        h["X-Number-Of-Streams"] = str(streams)
    h.update({"Overwrite": "T" if overwrite else "F", "Credential": "none"})
    if token:
        h["TransferHeaderAuthorization"] = f"Bearer {token}"
    return h


@dataclass
class CopyReply:
    """What the active side of a COPY answered."""
    status: int
    reason: str
    final: str  # the last "success: ..." / "failure: ..." line; "" when none came
    body: str   # the answer's text when it was not 201 (a 201's markers are read, not kept)


def _final(lines: list[str]) -> str:
    return next((ln.strip() for ln in reversed(lines) if ln.startswith(("success:", "failure:"))), "")


class KeptAlive:
    """One kept-alive HTTP connection per host:port for this thread's client or reader; a request
    is tried again once on a fresh connection (the server may have closed the kept one), and
    :meth:`cancel` shuts the sockets down, which aborts a running COPY or GET.

    ``context``: the TLS context (default: the system's CAs and X509_CERT_DIR); ``env_token``:
    a request without Authorization gets the environment's bearer token (BEARER_TOKEN(_FILE))."""

    def __init__(self, context: ssl.SSLContext | None = None, env_token: bool = True) -> None:
        self._conns: dict[str, http.client.HTTPConnection] = {}
        self._context, self._env_token = context, env_token

    def _request(self, method: str, url: str, headers: dict, timeout: float,
                 scope: str = "DESTINATION"):
        p = parse_url(url)  # the reading the transport rule below made: one parser decides
        if p is None or p.scheme not in ("http", "https", "davs"):
            raise TransferError(f"{url}: only plain http:// and https:// (davs://) URLs are "
                                "supported (no user info, backslash or percent sign in the host)",
                                E.EPROTONOSUPPORT, scope, "TRANSFER_PREPARATION")
        why = transport_problem(url)  # https is verified here (ssl_context, or the caller's)
        token = bearer_token() if self._env_token and why is None else None
        if token and "Authorization" not in headers:  # a secure gateway's token (its file)
            headers = {**headers, "Authorization": f"Bearer {token}"}
        if why is not None and {"authorization", "transferheaderauthorization"} & {h.lower() for h in headers}:
            raise TransferError(f"{method} {url}: a credential is not sent there: {why}", E.EACCES,
                                scope, "TRANSFER_PREPARATION")
        for attempt in (0, 1):
            conn = self._conns.get(p.netloc)
            if conn is None:
                conn = self._conns[p.netloc] = (
                    http.client.HTTPConnection(p.host, p.port, timeout=timeout) if p.scheme == "http" else
                    http.client.HTTPSConnection(p.host, p.port, timeout=timeout,
                                                context=self._context or ssl_context()))
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request(method, p.path.split("?", 1)[0] or "/", headers=headers)
                return conn, conn.getresponse()
            except (http.client.HTTPException, OSError) as e:
                self._drop(url)
                if attempt or isinstance(e, (socket.timeout, ConnectionRefusedError)):
                    code = E.ETIMEDOUT if isinstance(e, socket.timeout) else E.ECONNREFUSED
                    raise TransferError(f"{method} {url}: {e}", code, scope,
                                        "TRANSFER_PREPARATION") from None
        raise AssertionError("unreachable")

    def cancel(self) -> None:
        for conn in list(self._conns.values()):
            if conn.sock is not None:
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def copy(self, url: str, headers: dict, deadline: float, progress: Progress) -> CopyReply:
        """One HTTP-TPC COPY at ``url`` (``headers``: :func:`tpc_headers`): on 201 the markers'
        bytes go into ``progress`` until the final line, each line before ``deadline``;
        another status: its body. Raises TransferError, OSError or HTTPException."""
        conn, resp = self._request("COPY", url, headers, min(_left(deadline), 60))
        if resp.status != 201:
            body = resp.read().decode(errors="replace").strip()
            return CopyReply(resp.status, resp.reason, _final(body.splitlines()), body)
        last = ""
        while True:
            if conn.sock is not None:  # each marker line must come before the deadline
                conn.sock.settimeout(_left(deadline))
            line = resp.readline().decode(errors="replace")
            if not line:
                break
            m = _BYTES.search(line)
            if m:
                progress.transferred = int(m.group(1))
            if line.startswith(("success:", "failure:")):
                last = line.strip()
        resp.read()
        return CopyReply(resp.status, resp.reason, last, "")

    def disconnect(self) -> None:
        """Close every kept connection."""
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def _drop(self, url: str) -> None:
        p = parse_url(url)
        conn = self._conns.pop(p.netloc, None) if p is not None else None
        if conn is not None:
            conn.close()


class HttpClient(KeptAlive, Client):
    name = "http"

    def tpc(self, source, dest, *, overwrite, streams, deadline, progress: Progress,
            size: int = 0) -> Outcome:
        # the token the destination hands the source: only where a secret may go itself
        token = bearer_token() if transport_problem(source) is None else None
        headers = tpc_headers(source=source, overwrite=overwrite, streams=streams, token=token)
        try:
            reply = self.copy(dest, headers, deadline, progress)
            if reply.status != 201:
                code = {412: E.EEXIST, 404: E.ENOENT, 403: E.EACCES, 401: E.EACCES}.get(reply.status, E.EIO)
                raise TransferError(f"DESTINATION COPY {reply.status} {reply.reason}: {reply.body}", code,
                                    "DESTINATION", "TRANSFER_PREPARATION")
        except TransferError as e:
            self._drop(dest)
            return e.outcome(progress.transferred, "3rd pull")
        except (TimeoutError, OSError, http.client.HTTPException) as e:
            self._drop(dest)
            code = E.ETIMEDOUT if isinstance(e, socket.timeout) else E.ECONNRESET
            return TransferError(f"COPY {dest}: {e}", code).outcome(progress.transferred, "3rd pull")
        last = reply.final
        if last.startswith("success:"):
            progress.transferred = size or progress.transferred
            return Outcome(True, progress.transferred, transfer_type="3rd pull")
        reason = last[len("failure:"):].strip() if last else "no final marker in the COPY response"
        scope = "SOURCE" if "Remote side failed" in reason else "TRANSFER"
        code = E.ENOENT if "status code 404" in reason else E.EIO
        return TransferError(f"TPC {reason}", code, scope).outcome(progress.transferred, "3rd pull")

    def checksum(self, url: str, deadline: float) -> str:
        _, resp = self._request("HEAD", url, {"Want-Digest": "adler32"}, min(_left(deadline), 60))
        resp.read()
        digest = resp.getheader("Digest") or ""
        if resp.status != 200 or "adler32=" not in digest.lower():
            raise TransferError(f"CHECKSUM HEAD {url}: {resp.status} {resp.reason} Digest={digest!r}",
                                E.ENOENT if resp.status == 404 else E.EIO, "DESTINATION",
                                "TRANSFER_FINALIZATION")
        value = digest.split("=", 1)[1].split(",")[0]
        return normalise_adler32(value)

    def size(self, url: str, deadline: float) -> int | None:
        _, resp = self._request("HEAD", url, {}, min(_left(deadline), 60))
        resp.read()
        length = resp.getheader("Content-Length")
        return int(length) if resp.status == 200 and length is not None else None

    def delete(self, url: str) -> bool:
        try:
            _, resp = self._request("DELETE", url, {}, 30)
            resp.read()
        except (TransferError, OSError, http.client.HTTPException):
            return False
        return resp.status < 300 or resp.status == 404
