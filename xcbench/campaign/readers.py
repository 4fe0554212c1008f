"""Read clients of a read campaign: whole files through the XRootD client, gfal2 and plain
HTTP GET (XrdHttp), with adler32 computed on the fly (skipped with checksum none); random and vector reads through the
XRootD client (``File.read`` / ``File.vector_read``).

Nothing read is kept: a full read folds each chunk into the running adler32 and drops it (an
in-memory sink); random and vector reads return their chunks for the caller to compare with the
dataset. One reader per worker thread (gfal2 contexts and HTTP sessions are not shared).
Cancellation and the deadline are checked between chunks.
"""

from __future__ import annotations

import errno as E
import http.client
import socket
import threading
import time
import zlib

from xcbench.campaign.dataset import format_adler32
from xcbench.clients.base import Progress, TransferError
from xcbench.clients.gfal2_client import _error, new_context
from xcbench.clients.http_client import KeptAlive, _left
from xcbench.clients.xrootd_client import status_error, use_streams, with_streams

CHUNK = 4 << 20
# XRootD full reads: 1 MiB requests, 8 in flight per file (tried on a tmpfs gateway, 8 x 32 MiB
# at c=4: 4 MiB x 4 gave 160-410 MiB/s, 2 MiB x 4 430-450, 1 MiB x 8 500-600; a noisy box)
XRD_CHUNK, WINDOW = 1 << 20, 8
_local = threading.local()


def _canceled(progress: Progress) -> None:
    if progress.cancelled:
        raise TransferError("Transfer canceled: the campaign stopped", E.ECANCELED,
                            recoverable=False)


class Reader:
    name = ""

    def read_full(self, url: str, deadline: float, progress: Progress,
                  fold: bool = True) -> tuple[int, str]:
        """(bytes read, adler32 of them as 8 hex digits; "00000001" unless ``fold``)."""
        raise NotImplementedError

    def read_ranges(self, url: str, ranges: list[tuple[int, int]], vector: bool,
                    deadline: float, progress: Progress) -> list[bytes]:
        raise TransferError(f"{self.name}: random and vector reads need the XRootD client",
                            E.EPROTONOSUPPORT, "SOURCE", "TRANSFER_PREPARATION")

    def cancel(self) -> None:
        pass

    def delete(self, url: str) -> bool:  # the dispatcher's cleanup never applies to reads
        return True


class XrootdReader(Reader):
    name = "xrootd"

    def __init__(self, streams: int = 1):
        self.streams = streams

    def _open(self, url: str, deadline: float):
        from XRootD import client as xc
        from XRootD.client.flags import OpenFlags

        use_streams(self.streams)
        f = xc.File()
        st, _ = f.open(with_streams(url, self.streams), OpenFlags.READ,
                       timeout=max(1, int(_left(deadline) + 0.999)))
        if not st.ok:
            raise status_error(st, "SOURCE OPEN", "SOURCE", "TRANSFER_PREPARATION")
        return f

    @staticmethod
    def _check(st, what: str) -> None:
        if not st.ok:
            raise status_error(st, what, "SOURCE", "TRANSFER")

    def read_full(self, url, deadline, progress, fold=True):
        """WINDOW async reads in flight per file (each answer, in an XrdCl thread, is queued;
        this thread folds them into the adler32 in order and asks for the next chunk): a
        blocking read loop waited a round trip per chunk (measured: 0.64x the push rate)."""
        chunk = XRD_CHUNK
        f = self._open(url, deadline)
        cond = threading.Condition()
        answers: dict[int, tuple] = {}
        state = {"next": 0, "inflight": 0}

        def answered(off: int, st, data) -> None:
            with cond:
                answers[off] = (st, data)
                state["inflight"] -= 1
                cond.notify_all()

        def ask() -> None:  # under cond
            off = state["next"]
            state["next"] += chunk
            state["inflight"] += 1
            st = f.read(off, chunk, timeout=max(1, int(_left(deadline) + 0.999)),
                        callback=lambda s, r, _h, off=off: answered(off, s, r))
            if not st.ok:  # not even queued
                answered(off, st, None)

        acc, pos = 1, 0
        try:
            with cond:
                for _ in range(WINDOW):
                    ask()
            while True:
                with cond:
                    while pos not in answers:
                        _canceled(progress)
                        _left(deadline)
                        cond.wait(0.5)
                    st, data = answers.pop(pos)
                self._check(st, "SOURCE READ")
                data = data or b""
                if fold:
                    acc = zlib.adler32(data, acc)
                pos += len(data)
                progress.transferred = pos
                if len(data) < chunk:  # the end of the file
                    break
                with cond:
                    ask()
        finally:
            with cond:  # no answer may arrive for a closed file
                end = time.time() + 30
                while state["inflight"] and time.time() < end:
                    cond.wait(0.5)
            if f.is_open():
                f.close(timeout=5)
        return pos, format_adler32(acc)

    def read_ranges(self, url, ranges, vector, deadline, progress):
        f = self._open(url, deadline)
        out: list[bytes] = []
        try:
            if vector:
                st, info = f.vector_read(chunks=list(ranges),
                                         timeout=max(1, int(_left(deadline) + 0.999)))
                self._check(st, "SOURCE READV")
                # the response's chunks in request order (XrdCl keeps it)
                out = [bytes(c.buffer) for c in info.chunks]
                progress.transferred = sum(len(b) for b in out)
            else:
                for off, n in ranges:
                    _canceled(progress)
                    st, data = f.read(off, n, timeout=max(1, int(_left(deadline) + 0.999)))
                    self._check(st, "SOURCE READ")
                    out.append(bytes(data))
                    progress.transferred += len(data)
        finally:
            if f.is_open():
                f.close(timeout=5)
        return out


class Gfal2Reader(Reader):
    name = "gfal2"

    def __init__(self) -> None:
        import gfal2
        self.gfal2 = gfal2
        self.ctx = new_context()

    def read_full(self, url, deadline, progress, fold=True):
        acc, n = 1, 0
        try:
            f = self.ctx.open(url, "r")
            try:
                while True:
                    _canceled(progress)
                    _left(deadline)
                    data = f.read_bytes(CHUNK)  # read() decodes to str
                    if not data:
                        break
                    if fold:
                        acc = zlib.adler32(data, acc)
                    n += len(data)
                    progress.transferred = n
            finally:
                del f  # the binding closes the file when its object goes
        except self.gfal2.GError as e:
            err = _error(e)
            err.scope = "SOURCE"
            raise err from None
        return n, format_adler32(acc)

    def cancel(self) -> None:
        self.ctx.cancel()


class HttpReader(KeptAlive, Reader):
    """Plain GET from XrdHttp on a kept-alive connection per thread, read into one reused
    buffer (http.client's readinto: measured, requests' iter_content reached 0.43x of
    ``curl -o /dev/null`` here, allocating every chunk)."""
    name = "http"

    def __init__(self) -> None:
        KeptAlive.__init__(self)
        self._buf = memoryview(bytearray(CHUNK))

    def read_full(self, url, deadline, progress, fold=True):
        _, resp = self._request("GET", url, {}, min(_left(deadline), 60), scope="SOURCE")
        acc, n, buf = 1, 0, self._buf
        try:
            if resp.status != 200:
                resp.read()
                code = {404: E.ENOENT, 403: E.EACCES, 401: E.EACCES}.get(resp.status, E.EIO)
                raise TransferError(f"SOURCE GET {resp.status} {resp.reason}", code, "SOURCE",
                                    "TRANSFER_PREPARATION")
            while True:
                _canceled(progress)
                _left(deadline)
                got = resp.readinto(buf)
                if not got:
                    break
                if fold:
                    acc = zlib.adler32(buf[:got], acc)
                n += got
                progress.transferred = n
        except (http.client.HTTPException, OSError) as e:
            self._drop(url)
            code = E.ETIMEDOUT if isinstance(e, socket.timeout) else E.ECONNRESET
            raise TransferError(f"SOURCE GET {url}: {e}", code, "SOURCE") from None
        except TransferError:
            self._drop(url)
            raise
        return n, format_adler32(acc)


def thread_reader(kind: str, streams: int = 1) -> Reader:
    """This thread's reader of ``kind`` (xrootd | gfal2 | http)."""
    cache = getattr(_local, "readers", None)
    if cache is None:
        cache = _local.readers = {}
    r = cache.get(kind)
    if r is None:
        if kind == "xrootd":
            r = XrootdReader(streams)
        elif kind == "gfal2":
            r = Gfal2Reader()
        elif kind == "http":
            r = HttpReader()
        else:
            raise ValueError(f"unknown read client {kind!r}")
        cache[kind] = r
    if isinstance(r, XrootdReader):
        r.streams = streams
    return r
