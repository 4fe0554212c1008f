"""Read clients of a read campaign: whole files through the XRootD client, gfal2 and plain
HTTP GET (XrdHttp), with adler32 computed on the fly; random and vector reads through the
XRootD client (``File.read`` / ``File.vector_read``).

Nothing read is kept: a full read folds each chunk into the running adler32 and drops it (an
in-memory sink); random and vector reads return their chunks for the caller to compare with the
dataset. One reader per worker thread (gfal2 contexts and HTTP sessions are not shared).
Cancellation and the deadline are checked between chunks.
"""

from __future__ import annotations

import errno as E
import threading
import time
import zlib

from xcbench.campaign.clients import Progress, TransferError
from xcbench.campaign.dataset import format_adler32

CHUNK = 4 << 20
_local = threading.local()


def _left(deadline: float) -> float:
    left = deadline - time.time()
    if left <= 0:
        raise TransferError("Transfer timed out (FTS timeout reached)", E.ETIMEDOUT)
    return left


def _canceled(progress: Progress) -> None:
    if progress.cancelled:
        raise TransferError("Transfer canceled: the campaign stopped", E.ECANCELED,
                            recoverable=False)


class Reader:
    name = ""

    def read_full(self, url: str, deadline: float, progress: Progress) -> tuple[int, str]:
        """(bytes read, adler32 of them as 8 hex digits)."""
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

        from xcbench.campaign.client_xrootd import status_error, use_streams, with_streams
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
            from xcbench.campaign.client_xrootd import status_error
            raise status_error(st, what, "SOURCE", "TRANSFER")

    def read_full(self, url, deadline, progress):
        f = self._open(url, deadline)
        acc, off = 1, 0
        try:
            while True:
                _canceled(progress)
                st, data = f.read(off, CHUNK, timeout=max(1, int(_left(deadline) + 0.999)))
                self._check(st, "SOURCE READ")
                if not data:
                    break
                acc = zlib.adler32(data, acc)
                off += len(data)
                progress.transferred = off
        finally:
            if f.is_open():
                f.close(timeout=5)
        return off, format_adler32(acc)

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
        self.ctx = gfal2.creat_context()

    def read_full(self, url, deadline, progress):
        from xcbench.campaign.client_gfal2 import _error
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


class HttpReader(Reader):
    """Plain GET from XrdHttp, streamed (requests); kept-alive connections per thread."""
    name = "http"

    def __init__(self) -> None:
        import requests
        self.requests = requests
        self.session = requests.Session()
        self._resp = None

    def read_full(self, url, deadline, progress):
        req = self.requests
        acc, n = 1, 0
        try:
            with self.session.get(url, stream=True, timeout=(10, min(_left(deadline), 60))) as r:
                self._resp = r
                if r.status_code != 200:
                    code = {404: E.ENOENT, 403: E.EACCES, 401: E.EACCES}.get(r.status_code, E.EIO)
                    raise TransferError(f"SOURCE GET {r.status_code} {r.reason}", code, "SOURCE",
                                        "TRANSFER_PREPARATION")
                for data in r.iter_content(chunk_size=1 << 20):
                    _canceled(progress)
                    _left(deadline)
                    acc = zlib.adler32(data, acc)
                    n += len(data)
                    progress.transferred = n
        except req.exceptions.Timeout as e:
            raise TransferError(f"SOURCE GET {url}: {e}", E.ETIMEDOUT, "SOURCE") from None
        except req.exceptions.RequestException as e:
            raise TransferError(f"SOURCE GET {url}: {e}", E.ECONNRESET, "SOURCE") from None
        finally:
            self._resp = None
        return n, format_adler32(acc)

    def cancel(self) -> None:
        r = self._resp
        if r is not None:  # closing the response aborts the running GET
            try:
                r.close()
            except Exception:  # noqa: BLE001 - best effort from another thread
                pass


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
