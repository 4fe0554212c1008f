"""The XRootD Python client: push with File.write, root TPC with CopyProcess, checksum query.

Blocking calls release the GIL, so one thread per active transfer scales to ~1200 transfers in
one process. With ``streams`` > 1 a push keeps that many writes in flight per file (async
File.write with callbacks), and every XrdCl channel opens ``streams`` TCP connections: XrdCl's
``SubStreamsPerChannel`` (xrdcp ``-S``, ``XRD_SUBSTREAMSPERCHANNEL``) is set before the channel
is made, and the URL user carries the stream count so that a channel made with another count is
never reused (XrdCl opens one channel per user@host). Measured here (XRootD 5.5): a channel with
4 streams opens 4 connections to the gateway, but XrdCl sends kXR_write on the first only (268 MB
on it, 68 bytes on each substream): for pushes the dimension changes connections, not the data
path. For root TPC ``XRD_SUBSTREAMSPERCHANNEL`` is set too, from which XrdCl asks the destination
for ``tpc.str`` streams in its pull; not verified here (the source's connection counts varied
between trials more than between stream counts).
"""

from __future__ import annotations

import errno as E
import os
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from XRootD import client as xc
from XRootD.client.flags import AccessMode, OpenFlags, QueryCode

from xcbench.clients.base import Client, Outcome, Progress, TransferError, normalise_adler32

_MODE_644 = AccessMode.UR | AccessMode.UW | AccessMode.GR | AccessMode.OR
# kXR_* server error numbers -> errno (XProtocol.hh), so records carry FTS-style codes.
_KXR_ERRNO = {3000: E.EINVAL, 3001: E.EINVAL, 3002: E.ENAMETOOLONG, 3003: E.EDEADLK,
              3004: E.EBADF, 3005: E.EIO, 3006: E.EINVAL, 3007: E.EIO, 3008: E.ENOMEM,
              3009: E.ENOSPC, 3010: E.EACCES, 3011: E.ENOENT, 3012: E.EFAULT, 3013: E.ENOTSUP,
              3014: E.EHOSTUNREACH, 3015: E.EISDIR, 3016: E.EISDIR, 3017: E.ECANCELED,
              3018: E.EEXIST, 3019: E.EIO, 3020: E.EINPROGRESS, 3021: E.EDQUOT, 3024: E.EBUSY,
              3025: E.EROFS, 3034: E.ETIMEDOUT, 3035: E.ETIMEDOUT}


def split_url(url: str) -> tuple[str, str]:
    """'root://u1@h:1094//a/b' -> ('root://u1@h:1094', '/a/b')."""
    p = urlsplit(url)
    path = p.path[1:] if p.path.startswith("//") else p.path
    return f"{p.scheme}://{p.netloc}", path


def status_error(st, what: str, scope: str, phase: str) -> TransferError:
    """An XRootDStatus -> TransferError with an errno-style code."""
    msg = (st.message or "").replace("\x00", "").strip()
    code = _KXR_ERRNO.get(getattr(st, "errno", 0) or 0)
    low = msg.lower()
    if code is None:
        if "expired" in low or "timeout" in low or "timed out" in low:
            code = E.ETIMEDOUT
        elif "exists" in low:
            code = E.EEXIST
        elif "no such file" in low or "not found" in low:
            code = E.ENOENT
        elif "connect" in low or "socket" in low or "stream" in low:
            code = E.ECONNREFUSED
        else:
            code = E.EIO
    return TransferError(f"{what}: {msg}", code, scope, phase)


_STREAMS_LOCK = threading.Lock()
_streams_now = {"n": 0}


def use_streams(n: int) -> None:
    """TCP connections per XrdCl channel made from now on (process-wide, as for xrdcp -S)."""
    with _STREAMS_LOCK:
        if _streams_now["n"] != n:
            xc.EnvPutInt("SubStreamsPerChannel", n)
            os.environ["XRD_SUBSTREAMSPERCHANNEL"] = str(n)  # read by XrdCl's root TPC job
            _streams_now["n"] = n


def with_streams(url: str, n: int) -> str:
    """``url`` with the stream count in its user (``xcb3`` -> ``xcb3s4``), so XrdCl keeps a
    separate channel per stream count; unchanged for one stream."""
    if n <= 1:
        return url
    p = urlsplit(url)
    host = p.netloc.rsplit("@", 1)[-1]
    user = p.netloc.rsplit("@", 1)[0] if "@" in p.netloc else "xcb"
    return url.replace(f"{p.scheme}://{p.netloc}", f"{p.scheme}://{user}s{n}@{host}", 1)


@dataclass
class _Chain:
    """One file's write chain, shared by the worker and XrdCl's callback threads (under a lock)."""
    off: int = 0  # where the next chunk goes
    pending: int = 0  # writes in flight
    error: TransferError | None = None  # the first failure
    exhausted: bool = False  # every chunk was taken


def _left(deadline: float) -> int:
    left = deadline - time.time()
    if left <= 0:
        raise TransferError("Transfer timed out (FTS timeout reached)", E.ETIMEDOUT)
    return max(1, int(left + 0.999))


class XrootdClient(Client):
    name = "xrootd"

    def __init__(self) -> None:
        self._fs: dict[str, xc.FileSystem] = {}
        self._streams = 1  # of the last transfer: checksum/stat/rm share its channels

    def _filesystem(self, base: str) -> xc.FileSystem:
        fs = self._fs.get(base)
        if fs is None:
            fs = self._fs[base] = xc.FileSystem(base)
        return fs

    def push(self, dataset, index, dest, *, overwrite, streams, deadline, progress: Progress,
             source_path=None) -> Outcome:
        use_streams(streams)
        self._streams = streams
        dest = with_streams(dest, streams)
        f = xc.File()
        flags = OpenFlags.DELETE if overwrite else OpenFlags.NEW
        try:
            st, _ = f.open(dest, flags, _MODE_644, timeout=_left(deadline))
            if not st.ok:
                raise status_error(st, "DESTINATION OPEN", "DESTINATION", "TRANSFER_PREPARATION")
            self._write_chain(f, dataset.chunks(index), streams, deadline, progress)
            st, _ = f.close(timeout=_left(deadline))
            if not st.ok:
                raise status_error(st, "DESTINATION CLOSE", "DESTINATION", "TRANSFER_FINALIZATION")
        except TransferError as e:
            if f.is_open():
                f.close(timeout=5)
            return e.outcome(progress.transferred, "push")
        return Outcome(True, progress.transferred, transfer_type="push")

    @staticmethod
    def _write_chain(f, chunks, window: int, deadline: float, progress: Progress) -> None:
        """Write every chunk with async File.write: each acknowledgement, handled in an XrdCl
        thread, sends the next chunk, so the worker thread wakes once per file, not once per
        chunk (measured: ~20 % more throughput and less CPU than blocking writes); ``window``
        writes are in flight per file."""
        it = iter(chunks)
        lock, done = threading.Lock(), threading.Event()
        st8 = _Chain()
        inflight: dict[int, bytes] = {}  # pyxrootd does not keep the buffer of an async write

        def take():
            with lock:
                if progress.cancelled and st8.error is None:
                    st8.error = TransferError("Transfer canceled: the campaign stopped",
                                              E.ECANCELED, recoverable=False)
                if st8.error is None and not st8.exhausted:
                    chunk = next(it, None)
                    if chunk is not None:
                        off = st8.off
                        st8.off += len(chunk)
                        st8.pending += 1
                        inflight[off] = chunk
                        return chunk, off
                    st8.exhausted = True
                if st8.pending == 0:
                    done.set()
                return None

        def result(st, n: int, off: int) -> None:
            with lock:
                inflight.pop(off, None)
                st8.pending -= 1
                if st.ok:
                    progress.transferred += n
                elif st8.error is None:
                    st8.error = status_error(st, "DESTINATION WRITE", "DESTINATION", "TRANSFER")
            send()

        def send() -> None:
            nxt = take()
            if nxt is None:
                return
            chunk, off = nxt
            n = len(chunk)
            timeout = max(1, int(deadline - time.time() + 0.999))
            st = f.write(chunk, off, n, timeout=timeout,  # async: a status only
                         callback=lambda s, _r, _h, n=n, off=off: result(s, n, off))
            if not st.ok:  # not even queued
                result(st, n, off)

        for _ in range(max(1, window)):
            send()
        while not done.wait(1.0):
            if time.time() > deadline:
                with lock:
                    st8.error = st8.error or TransferError(
                        "Transfer timed out (FTS timeout reached)", E.ETIMEDOUT)
                break
        if st8.error is not None:
            raise st8.error

    def tpc(self, source, dest, *, overwrite, streams, deadline, progress, size=0) -> Outcome:
        left = _left(deadline)
        use_streams(streams)
        self._streams = streams
        cp = xc.CopyProcess()
        cp.add_job(source, dest, force=overwrite, thirdparty="only", checksummode="none",
                   inittimeout=min(left, 120), tpctimeout=left)
        st = cp.prepare()
        if not st.ok:
            return status_error(st, "TPC PREPARE", "TRANSFER", "TRANSFER_PREPARATION").outcome(0, "3rd pull")
        st, results = cp.run()
        res = (results or [{}])[0].get("status", st)
        if not res.ok:
            err = status_error(res, "TPC", "TRANSFER", "TRANSFER")
            if "exists" in err.reason.lower():
                err.code, err.scope, err.recoverable = E.EEXIST, "DESTINATION", False
            return err.outcome(0, "3rd pull")
        progress.transferred = size
        return Outcome(True, size, transfer_type="3rd pull")

    def checksum(self, url: str, deadline: float) -> str:
        base, path = split_url(with_streams(url, self._streams))
        st, resp = self._filesystem(base).query(QueryCode.CHECKSUM, path, timeout=_left(deadline))
        if not st.ok:
            raise status_error(st, "CHECKSUM QUERY", "DESTINATION", "TRANSFER_FINALIZATION")
        return normalise_adler32(resp.decode(errors="replace"))

    def size(self, url: str, deadline: float) -> int | None:
        base, path = split_url(with_streams(url, self._streams))
        st, info = self._filesystem(base).stat(path, timeout=_left(deadline))
        return info.size if st.ok else None

    def delete(self, url: str) -> bool:
        base, path = split_url(with_streams(url, self._streams))
        try:
            st, _ = self._filesystem(base).rm(path, timeout=30)
        except Exception:
            return False
        return st.ok or getattr(st, "errno", 0) == 3011  # kXR_NotFound: already gone
