"""HTTP-TPC spoken directly: COPY with ``Source:`` (pull) and ``X-Number-Of-Streams``.

Used for tpc-http when the campaign client is the XRootD client (which has no HTTP-TPC). The
destination answers 201 and streams performance markers ("Perf Marker ... End") until a final
``success: ...`` or ``failure: ...`` line; checksums come from HEAD with ``Want-Digest: adler32``.
"""

from __future__ import annotations

import errno as E
import http.client
import re
import socket
import time
from urllib.parse import urlsplit

from xcbench.clients.base import Client, Outcome, Progress, TransferError, normalise_adler32
from xcbench.clients.credentials import bearer_token, ssl_context

_BYTES = re.compile(r"Stripe Bytes Transferred:\s*(\d+)")


def _left(deadline: float) -> float:
    left = deadline - time.time()
    if left <= 0:
        raise TransferError("Transfer timed out (FTS timeout reached)", E.ETIMEDOUT)
    return left


class KeptAlive:
    """One kept-alive HTTP connection per host:port for this thread's client or reader; a request
    is tried again once on a fresh connection (the server may have closed the kept one), and
    :meth:`cancel` shuts the sockets down, which aborts a running COPY or GET."""

    def __init__(self) -> None:
        self._conns: dict[str, http.client.HTTPConnection] = {}

    def _request(self, method: str, url: str, headers: dict, timeout: float,
                 scope: str = "DESTINATION"):
        p = urlsplit(url)
        if p.scheme not in ("http", "https", "davs"):
            raise TransferError(f"{url}: only http:// and https:// (davs://) are supported",
                                E.EPROTONOSUPPORT, scope, "TRANSFER_PREPARATION")
        token = bearer_token()
        if token and "Authorization" not in headers:  # a secure gateway's token (its file)
            headers = {**headers, "Authorization": f"Bearer {token}"}
        for attempt in (0, 1):
            conn = self._conns.get(p.netloc)
            if conn is None:
                conn = self._conns[p.netloc] = (
                    http.client.HTTPConnection(p.netloc, timeout=timeout) if p.scheme == "http" else
                    http.client.HTTPSConnection(p.netloc, timeout=timeout, context=ssl_context()))
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request(method, p.path or "/", headers=headers)
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

    def _drop(self, url: str) -> None:
        conn = self._conns.pop(urlsplit(url).netloc, None)
        if conn is not None:
            conn.close()


class HttpClient(KeptAlive, Client):
    name = "http"

    def tpc(self, source, dest, *, overwrite, streams, deadline, progress: Progress,
            size: int = 0) -> Outcome:
        headers = {"Source": source, "X-Number-Of-Streams": str(streams),
                   "Overwrite": "T" if overwrite else "F", "Credential": "none"}
        token = bearer_token()
        if token:  # token delegation: the destination forwards it to the source as Authorization
            headers["TransferHeaderAuthorization"] = f"Bearer {token}"
        try:
            conn, resp = self._request("COPY", dest, headers, min(_left(deadline), 60))
            if resp.status != 201:
                body = resp.read().decode(errors="replace").strip()
                code = {412: E.EEXIST, 404: E.ENOENT, 403: E.EACCES, 401: E.EACCES}.get(resp.status, E.EIO)
                raise TransferError(f"DESTINATION COPY {resp.status} {resp.reason}: {body}", code,
                                    "DESTINATION", "TRANSFER_PREPARATION")
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
        except TransferError as e:
            self._drop(dest)
            return e.outcome(progress.transferred, "3rd pull")
        except (TimeoutError, OSError, http.client.HTTPException) as e:
            self._drop(dest)
            code = E.ETIMEDOUT if isinstance(e, socket.timeout) else E.ECONNRESET
            return TransferError(f"COPY {dest}: {e}", code).outcome(progress.transferred, "3rd pull")
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
