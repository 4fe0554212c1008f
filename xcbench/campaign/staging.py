"""Putting a dataset where a campaign reads it: into the TPC source gateway, or as local files
for gfal2's file:// push source (HTTP pushes only: root:// pushes stream from the dataset)."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from xcbench.campaign.dataset import Dataset
from xcbench.campaign.endpoints import Endpoint
from xcbench.clients.base import Progress
from xcbench.clients.threads import thread_client
from xcbench.errors import XcbError
from xcbench.system import orphans
from xcbench.system.fsutil import remove_tree
from xcbench.system.scratch import check_fits, lexists_regular, memory_room, on_tmpfs, private_dir


def stage_source(dataset: Dataset, source: Endpoint, names: list[str], *, threads: int = 8,
                 timeout: float = 3600) -> dict:
    """Make ``names[i]`` on ``source`` hold dataset file i. Files already there with the right
    size are kept (a source "of infinite capacity" is filled once). Local directories are
    written directly (no gateway CPU spent); otherwise files are uploaded with the XRootD client."""
    t0 = time.time()
    dirs = source.local_dirs
    written = kept = 0
    lock = threading.Lock()
    deadline = t0 + timeout

    def one(i: int) -> None:
        nonlocal written, kept
        if dirs:
            path = Path(dirs[i % len(dirs)].rstrip("/") + names[i])
            st = lexists_regular(path.parent, path.name)  # a link there is never followed
            if st is not None and st.st_size == dataset.size(i):
                with lock:
                    kept += 1
                return
            top = os.lstat(path.parent)  # the gateway's user owns it: xrootd can cache the adler32
            dataset.materialise(i, path, owner=(top.st_uid, top.st_gid))
        else:
            c = thread_client("xrootd")
            url = source.url(names[i], "root")
            if c.size(url, deadline) == dataset.size(i):
                with lock:
                    kept += 1
                return
            out = c.push(dataset, i, url, overwrite=True, streams=1, deadline=deadline,
                         progress=Progress())
            if not out.ok:
                raise XcbError(f"campaign: staging {url} on the source failed: {out.reason}")
        with lock:
            written += 1

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="xcb-stage") as ex:
        list(ex.map(one, range(len(dataset))))
    return {"how": "local files in " + ", ".join(dirs) if dirs else "uploaded with the XRootD client",
            "written": written, "kept": kept, "seconds": round(time.time() - t0, 3)}


def local_source(dataset: Dataset, campaign_id: str, mode: str, kind: str,
                 scheme: str, concurrent: int = 1) -> LocalSource | None:
    """The local source a push needs: only gfal2 over http:// reads a local file (its POSIX
    writes over davix cost 4x the CPU of filecopy); root:// pushes stream from the dataset."""
    if mode == "push" and kind == "gfal2" and scheme == "http":
        return LocalSource(dataset, campaign_id, concurrent=concurrent)
    return None


class LocalSource:
    """Local copies of dataset files for gfal2's file:// push source, in a private directory
    (xcbench.system.scratch.private_dir: a random name, 0700, recorded before it is made; files
    written without following links). When the whole dataset fits in ``budget`` bytes (and, on
    a tmpfs, in free memory), :meth:`stage_all` writes every file before the campaign's clock
    starts and they are kept for retries; else each file is written before its attempt's clock
    starts (its CPU then competes with running transfers) and deleted after its last attempt:
    then the ``concurrent`` largest files at once must fit (refused in one line if not)."""

    def __init__(self, dataset: Dataset, campaign_id: str, budget: int = 4 << 30,
                 base: str = "/dev/shm", concurrent: int = 1):
        self.dataset = dataset
        self.base = base if os.path.isdir(base) else "/tmp"
        self.keep = dataset.total_bytes <= budget
        if on_tmpfs(self.base):
            available, reserve = memory_room()
            self.keep = self.keep and dataset.total_bytes <= available - reserve
            if not self.keep:
                at_once = sum(sorted(dataset.sizes)[-max(1, concurrent):])
                check_fits(at_once, f"campaign {campaign_id}: gfal2 push staging in {self.base}",
                           "give fewer or smaller files, or a lower concurrency")
        # recorded before it is made: after a kill -9 of the driver the next command removes
        # it (and says so); a signal's cleanup removes it at once
        self._fd: int | None = None  # the staging dir, opened once for unlinks relative to it
        self.dir = private_dir(self.base, f"xcb-push-{campaign_id}-")

    def path(self, i: int) -> str:
        name = self.dataset.name(i)  # one attempt per file at a time: no lock needed
        if lexists_regular(self.dir, name) is None:
            self.dataset.materialise(i, self.dir / name)
        return str(self.dir / name)

    def stage_all(self, threads: int = 4) -> dict:
        """Write every file now (when they all fit): staging stays out of the measured window."""
        t0, c0 = time.time(), time.process_time()
        if self.keep:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="xcb-stage") as ex:
                list(ex.map(self.path, range(len(self.dataset))))
        return {"how": f"local files in {self.dir} for gfal2's file:// push source",
                "before_clock": self.keep, "seconds": round(time.time() - t0, 3),
                "cpu_seconds": round(time.process_time() - c0, 3)}

    def release(self, i: int) -> None:
        if not self.keep:
            try:
                os.unlink(self.dataset.name(i), dir_fd=self._dirfd())
            except FileNotFoundError:
                pass

    def _dirfd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        return self._fd

    def cleanup(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if not remove_tree(self.dir):
            orphans.forget_dir(self.dir)

    def describe(self) -> dict:
        return {"dir": str(self.dir), "kept_between_attempts": self.keep}
