"""run_writes: an FTS-style write campaign from one process; this module is its dispatcher.

A dispatcher (the calling thread) starts a transfer only while fewer than ``limit`` are
active (the fixed concurrency, or the optimizer's decision); each transfer runs in a worker
thread of its own, blocking in the XRootD/gfal2/HTTP client with the GIL released, so one
process holds 1200 transfers. A monitor thread (monitor.py) samples the 1 s timeline, runs the
optimizer every interval, feeds the live view and hands rows to the sink (sinks see one caller
at a time).

FTS semantics: the per-file timeout (600 s + 2 s/MiB by default); checksum mode none / source
(the file's known adler32 against the source, before the copy) / target (against the
destination, after it) / both; retries after ``retry_delay``; a failed destination is cleaned
up unless the failure was "file exists" (not ours), and a retry first removes what an earlier
attempt of this campaign left; ``delete_after_verify`` removes each verified file so a small
destination absorbs any campaign. One TRANSFER row per attempt; a file's last row is final.

Two modes. File count (the default): each file of the dataset once, the campaign ends when all
are done. Time-based (``spec.duration``): the dispatcher keeps every slot busy by cycling the
dataset (transfer ``seq`` moves file ``seq % files``; with delete_after_verify each cycle writes
new names, with overwrite the same names again) until the monitor ends the level, by its
LevelRule (steady, or the maximum duration); transfers in flight then finish (a drain, not a
cancel), and the level's end goes into the CAMPAIGN row's settings["level"].
"""

from __future__ import annotations

import errno as E
import heapq
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from xcbench.campaign.cancel import Canceller
from xcbench.campaign.dataset import Dataset
from xcbench.campaign.drivercpu import DriverCpu
from xcbench.campaign.endpoints import Endpoint, choose, endpoint, is_xrdceph
from xcbench.campaign.level import Levels, _Job
from xcbench.campaign.live_view import CampaignView
from xcbench.campaign.monitor import SLOW_CHECKSUM, Monitor
from xcbench.campaign.optimizer import AttemptView, Optimizer
from xcbench.campaign.rows import Buffered, Timeline, transfer_row
from xcbench.campaign.spec import CampaignSpec
from xcbench.campaign.staging import local_source, stage_source
from xcbench.clients.base import (
    XRDCL_ENV,
    Outcome,
    Progress,
    TransferError,
    apply_client_env,
)
from xcbench.clients.threads import thread_client
from xcbench.errors import XcbError
from xcbench.store.findings import finding

# XrdHttp 5.5.3 now and then answers a checksum HEAD with 500 when HTTP connections close and
# open quickly (seen with gfal2's fresh davix sessions): the query, not the transfer, is retried
CHECKSUM_500_RETRIES = 2


@dataclass
class CampaignHooks:
    """Test/diagnostic hooks. ``after_transfer(index, dest_url)`` runs when a file's data has
    moved and before its checksum is verified (e.g. to corrupt it on the storage)."""
    after_transfer: Callable[[int, str], None] | None = None


class Campaign:
    """One campaign: its dispatch state (queue, attempts in flight, counters, under ``cond``)
    and its parts, each an object it holds: ``levels`` (time-based levels), ``monitor`` (the
    1 s loop and the closing rows) and ``canceller`` (stopping)."""

    def __init__(self, spec: CampaignSpec, dest: Any, source: Any = None, sink=None,
                 cell_id: str = "", hooks: CampaignHooks | None = None):
        self.spec, self.cell_id, self.hooks = spec, cell_id, hooks or CampaignHooks()
        self.dataset = Dataset.generate(spec.files, spec.file_size, spec.size_dist, spec.seed,
                                        spec.size_spread, block_size=spec.chunk_size)
        self.dest = endpoint(dest, "destination")
        self.source = endpoint(source, "source") if source is not None else None
        self.scheme, self.kind, self.choices = choose(spec.mode, spec.client, self.dest, self.source)
        self.choices += apply_client_env(self.dest.client_env, "destination")
        if self.source is not None:
            self.choices += apply_client_env(self.source.client_env, "source")
        if is_xrdceph(self.dest) and XRDCL_ENV.get("CpUsePgWrtRd", {}).get("value") != 0:
            self.choices.append({"what": "XRD_CPUSEPGWRTRD", "chosen": "1", "ok": False,
                                 "why": "forced in the shell: XrdCeph 5.5 crashes on pgread"})
        self.out = Buffered(sink)
        self.cond = threading.Condition()
        spec.check_cycling()
        self.rule = spec.level  # time-based level (None: file-count mode)
        self.ready: deque[_Job] = deque() if self.rule else \
            deque(_Job(0.0, i) for i in range(len(self.dataset)))
        self.next_seq = 0
        self.busy: dict[int, int] = {}  # file index -> attempts in flight
        self.level_end: dict | None = None
        self.fail_streak = 0
        self.delayed: list[_Job] = []
        self.active = 0
        self.limit = spec.concurrency
        self.optimizer = Optimizer(spec.optimizer, spec.max_active) if spec.optimizer else None
        self.views: list[AttemptView] = []
        self.live: dict[int, tuple[AttemptView, Progress, Any]] = {}
        self.bytes_done = self.read_done = 0
        self.final: dict[int, str] = {}
        self.stopping = False
        self.findings: list[dict] = []
        self.slow_checksums = 0
        self.checksum_retries = 0
        self.mismatches = 0
        self.delete_failures = 0
        self.local = local_source(self.dataset, spec.campaign_id, spec.mode, self.kind, self.scheme,
                                  concurrent=spec.max_active or spec.concurrency)
        self.staging: dict | None = None
        if spec.mode == "tpc-root" and is_xrdceph(self.dest):
            self.findings.append(finding(
                cell_id, "root TPC into an XrdCeph gateway fails",
                "measured with XRootD 5.5.3: the TPC program (ofs.tpc pgm xrdcp --server) "
                "cannot write to XrdCeph ('[3005] Local error: permission denied (destination)')",
                "use HTTP-TPC (mode tpc-http) into XrdCeph gateways", "error"))
        self.levels, self.monitor, self.canceller = Levels(self), Monitor(self), Canceller(self)

    def direction_of(self, seq: int) -> str:
        """write | read: what transfer ``seq`` does (the read campaign decides per transfer)."""
        return "write"

    def index(self, seq: int) -> int:
        """The dataset file a transfer moves."""
        return seq % len(self.dataset)

    def urls_of(self, seq: int) -> tuple[str, str]:
        """(source, destination) of transfer ``seq`` as its rows name them."""
        return self.source_url(self.index(seq)), self.dest_url(seq)

    def _findings(self) -> list[dict]:
        return self.monitor.findings()

    def _summary(self, start: float, end: float) -> dict:
        return self.monitor.summary(start, end)

    # --- names ---------------------------------------------------------------------------
    def dest_name(self, seq: int) -> str:
        i, cycle = divmod(seq, len(self.dataset))[::-1]
        # delete-cycling gives each cycle new names (a file still being verified is never hit);
        # overwrite-cycling writes the same names again
        tail = f".{cycle}" if cycle and self.spec.delete_after_verify else ""
        return self.dest.name(f"{self.spec.dest_prefix}{self.spec.campaign_id}."
                              f"{self.dataset.name(i)}{tail}")

    def source_name(self, i: int) -> str:
        return self.source_endpoint().name(f"{self.spec.dest_prefix}ds-{self.dataset.ident}.{self.dataset.name(i)}")

    def dest_url(self, seq: int) -> str:
        # push over root: spread files over ``connections`` XrdCl channels (one per URL user)
        user = f"xcb{seq % self.spec.connections}" if self.spec.mode == "push" else None
        return self.dest.url(self.dest_name(seq), self.scheme, user)

    def source_url(self, i: int) -> str:
        if self.spec.mode == "push":
            return f"file://{self.local.dir}/{self.dataset.name(i)}" if self.local else \
                f"dataset://{self.dataset.ident}/{self.dataset.name(i)}"
        return self.source_endpoint().url(self.source_name(i), self.scheme)

    def source_endpoint(self) -> Endpoint:
        """The source gateway of a TPC campaign (a push has none: its source is the driver)."""
        if self.source is None:
            raise XcbError(f"campaign: mode {self.spec.mode} needs a source gateway")
        return self.source

    # --- one attempt ---------------------------------------------------------------------
    def _checksum(self, client, url: str, deadline: float, scope: str) -> str:
        t0 = time.time()
        try:
            for attempt in range(CHECKSUM_500_RETRIES + 1):
                try:
                    return client.checksum(url, deadline)
                except TransferError as e:
                    e.scope = scope
                    if attempt == CHECKSUM_500_RETRIES or " 500" not in e.reason:
                        raise
                    with self.cond:
                        self.checksum_retries += 1
                    time.sleep(0.2)
            raise AssertionError("the last checksum attempt returns or raises")
        finally:
            if time.time() - t0 > SLOW_CHECKSUM:
                with self.cond:
                    self.slow_checksums += 1

    def _count_mismatch(self) -> None:
        with self.cond:
            self.mismatches += 1

    def _attempt(self, job: _Job) -> None:
        spec, i = self.spec, self.index(job.seq)
        size, expected = self.dataset.size(i), self.dataset.adler32(i)
        dest, src = self.dest_url(job.seq), self.source_url(i)
        client = thread_client(self.kind)
        progress = Progress()
        cks_src = cks_dst = None
        prep_error: TransferError | None = None
        try:  # source preparation happens before the attempt's clock starts
            source_path = self.local.path(i) if self.local else None
            if job.retry and not spec.overwrite:
                client.delete(dest)  # what an earlier attempt of this campaign left (FTS cleanup)
        except Exception as e:
            source_path = None
            prep_error = TransferError(f"preparation failed: {type(e).__name__}: {e}", E.EIO,
                                       "SOURCE", "TRANSFER_PREPARATION")
        else:
            prep_error = None
        start, deadline, view = self._begin(job, size, progress, client)
        try:
            if prep_error is not None:
                raise prep_error
            self._not_stopped()
            if spec.checksum in ("source", "both") and spec.mode != "push":
                cks_src = self._checksum(client, src, deadline, "SOURCE")
                if cks_src != expected:
                    raise TransferError(f"SOURCE CHECKSUM MISMATCH: user-defined adler32 {expected} "
                                        f"!= source {cks_src}", E.EIO, "SOURCE", "TRANSFER_PREPARATION")
            elif spec.checksum != "none":
                cks_src = expected  # push: the bytes are the dataset's by construction
            if spec.mode == "push":
                out = client.push(self.dataset, i, dest, overwrite=spec.overwrite,
                                  streams=spec.streams, deadline=deadline, progress=progress,
                                  source_path=source_path)
            else:
                out = client.tpc(src, dest, overwrite=spec.overwrite, streams=spec.streams,
                                 deadline=deadline, progress=progress, size=size)
            if out.ok:
                if self.hooks.after_transfer:
                    self.hooks.after_transfer(i, dest)
                if spec.checksum in ("target", "both"):
                    cks_dst = self._checksum(client, dest, deadline, "DESTINATION")
                    if cks_dst != expected:
                        self._count_mismatch()
                        raise TransferError(f"DESTINATION CHECKSUM MISMATCH: source adler32 "
                                            f"{expected} != destination {cks_dst}", E.EIO,
                                            "DESTINATION", "TRANSFER_FINALIZATION")
                else:  # FTS checks the destination size when no checksum covers it
                    got = client.size(dest, deadline)
                    if got != size:
                        self._count_mismatch()
                        raise TransferError(f"DESTINATION SIZE MISMATCH: source {size} != "
                                            f"destination {got}", E.EINVAL, "DESTINATION",
                                            "TRANSFER_FINALIZATION", recoverable=True)
        except TransferError as e:
            out = e.outcome(progress.transferred)
        except Exception as e:  # never lose a record: an unexpected error fails the attempt
            out = Outcome(False, progress.transferred, E.EIO, "TRANSFER", "TRANSFER",
                          f"internal error: {type(e).__name__}: {e}")
        finish = time.time()
        self._finish(job, out, view, start, finish, src, dest, cks_src, cks_dst, client)

    def _begin(self, job: _Job, size: int, progress: Progress, client: Any) -> tuple[float, float, AttemptView]:
        """An attempt's clock started: (start, deadline, its view), live until _finish."""
        start = time.time()
        view = AttemptView(start, None, size, 0, "ACTIVE", retry=job.retry)
        with self.cond:
            self.views.append(view)
            self.live[id(view)] = (view, progress, client)
        return start, start + self.spec.timeout_for(size), view

    def _not_stopped(self) -> None:
        """An attempt submitted just before the campaign stopped is never started."""
        if self.stopping:
            raise TransferError("Transfer canceled: the campaign stopped", E.ECANCELED,
                                recoverable=False)

    def _finish(self, job, out: Outcome, view, start, finish, src, dest, cks_src, cks_dst, xfer,
                **fields):
        """The TRANSFER row (``fields``: a read's direction, checksum type), cleanup, books."""
        spec, i = self.spec, self.index(job.seq)
        fields = {"direction": "write", "checksum_type": None if spec.checksum == "none"
                  else "adler32", "client": self.kind, **fields}
        row = transfer_row(
            cell_id=self.cell_id, campaign_id=spec.campaign_id, concurrency=spec.concurrency,
            repeat=spec.repeat, transfer_id=f"{spec.campaign_id}-{job.seq:06d}-{job.retry}",
            file_index=i, retry=job.retry, source=src, destination=dest, mode=spec.mode,
            nstreams=spec.streams, file_size=self.dataset.size(i), transferred=out.transferred,
            start_time=start, finish_time=finish, checksum_source=cks_src, checksum_dest=cks_dst,
            file_state="FINISHED" if out.ok else "CANCELED" if out.error_code == E.ECANCELED
            and self.stopping else "FAILED",
            error_code=None if out.ok else out.error_code,
            error_scope=None if out.ok else out.error_scope,
            error_phase=None if out.ok else out.error_phase,
            reason=None if out.ok else out.reason, **fields)
        self.out.add("transfers", [row])
        if row["direction"] == "write":  # a read leaves the dataset as it is
            self._cleanup(out, dest, xfer)
        retry = (not out.ok and out.recoverable and job.retry < spec.retries)
        with self.cond:
            view.end, view.transferred = finish, out.transferred
            view.state, view.recoverable = ("FINISHED" if out.ok else "FAILED"), out.recoverable
            self.live.pop(id(view), None)
            self.bytes_done += out.transferred
            self.read_done += out.transferred if row["direction"] == "read" else 0
            self.active -= 1
            self.levels.release(i)
            if retry and not self.stopping:
                heapq.heappush(self.delayed, _Job(time.time() + spec.retry_delay, job.seq,
                                                  job.retry + 1))
            else:
                self.final[job.seq] = row["file_state"]
                self.fail_streak = 0 if out.ok else self.fail_streak + 1
                if self.local:
                    self.local.release(i)
            self.cond.notify_all()

    def _cleanup(self, out: Outcome, dest: str, client) -> None:
        if out.ok and self.spec.delete_after_verify:
            if not client.delete(dest):
                with self.cond:
                    self.delete_failures += 1
        elif not out.ok and out.error_code != E.EEXIST:
            client.delete(dest)  # FTS removes a failed destination (best effort)

    def _run_job(self, job: _Job) -> None:
        try:
            self._attempt(job)
        except BaseException as e:  # _finish itself failed: keep the books right, and a row
            now = time.time()
            self.out.add("transfers", [transfer_row(
                cell_id=self.cell_id, campaign_id=self.spec.campaign_id,
                concurrency=self.spec.concurrency, repeat=self.spec.repeat,
                transfer_id=f"{self.spec.campaign_id}-{job.seq:06d}-{job.retry}",
                file_index=self.index(job.seq), retry=job.retry, mode=self.spec.mode,
                client=self.kind, file_size=self.dataset.size(self.index(job.seq)),
                transferred=0, start_time=now, finish_time=now, file_state="FAILED", error_code=E.EIO, error_scope="TRANSFER",
                error_phase="TRANSFER", reason=f"internal error: {type(e).__name__}: {e}",
                direction=self.direction_of(job.seq))])
            with self.cond:
                self.active -= 1
                self.levels.release(self.index(job.seq))
                self.final[job.seq] = "FAILED"
                self.findings.append(finding(self.cell_id, "campaign worker error",
                                             f"{type(e).__name__}: {e}", "report a bug", "error"))
                self.cond.notify_all()

    # --- the dispatcher ------------------------------------------------------------------
    def _next_job(self, stop_event) -> _Job | None:
        with self.cond:
            while True:
                if stop_event is not None and stop_event.is_set():
                    self.stopping = True
                now = time.time()
                while self.delayed and self.delayed[0].not_before <= now:
                    self.ready.append(heapq.heappop(self.delayed))
                if self.stopping:
                    return None
                if not self.ready and self.rule and self.level_end is None \
                        and self.active < self.limit:
                    self.levels.cycle()
                if self.ready and self.active < self.limit:
                    self.active += 1
                    job = self.ready.popleft()
                    i = self.index(job.seq)
                    self.busy[i] = self.busy.get(i, 0) + 1
                    return job
                if not self.ready and not self.delayed and self.active == 0 and \
                        (not self.rule or self.level_end is not None):
                    return None
                # a stop is seen within 50 ms (copies in flight get cancelled while they run)
                wait = 0.05 if stop_event is not None else 0.5
                if self.delayed:
                    wait = min(wait, max(self.delayed[0].not_before - now, 0.01))
                self.cond.wait(wait)

    def run(self, progress: bool = False, stop_event=None) -> dict:
        spec = self.spec
        try:  # staging is removed on any failure of its own (the record covers a kill -9)
            if spec.mode != "push":
                self.staging = stage_source(self.dataset, self.source_endpoint(),
                                            [self.source_name(i) for i in range(len(self.dataset))])
            elif self.local:
                self.staging = self.local.stage_all()
        except BaseException:
            if self.local:
                self.local.cleanup()
            raise
        if self.optimizer:
            self.monitor.optimize(time.time())  # FTS's first decision: start halfway (or at max)
        timeline = Timeline(self.cell_id, spec.campaign_id, spec.concurrency, spec.repeat)
        view = None
        if progress:
            view = CampaignView(len(self.dataset), self.dataset.total_bytes, spec)
            view.start()
        done = threading.Event()
        monitor = threading.Thread(target=self.monitor.loop, args=(done, timeline, view),
                                   name="xcb-campaign-monitor", daemon=True)
        self.cpu = DriverCpu()
        start = time.time()
        monitor.start()
        interrupted = None
        try:
            with ThreadPoolExecutor(max_workers=spec.max_active,
                                    thread_name_prefix="xcb-xfer") as pool:
                try:
                    while (job := self._next_job(stop_event)) is not None:
                        pool.submit(self._run_job, job)
                except KeyboardInterrupt as e:
                    interrupted = e
                    with self.cond:
                        self.stopping = True
                if self.stopping:  # running attempts give up (FTS cancels them too)
                    self.canceller.running()
        finally:
            done.set()
            monitor.join()
            end = time.time()
            if self.rule is not None and self.level_end is None:  # Ctrl-C / stop event
                self.levels.end("stopped", end - timeline.start)
            self.canceller.rest(end)
            moved, active, ok, failed = self.monitor.totals()
            self.out.add("timeline", [{**timeline.sample(end, moved, active, ok, failed,
                                                         self.monitor.read_moved()),
                                       **self.cpu.sample(end)}])
            row = self._summary(start, end)
            self.out.add("findings", self._findings())
            self.out.add("campaigns", [row])
            self.out.flush()
            if view is not None:
                view.stop(row)
            if self.local:
                self.local.cleanup()
        if interrupted is not None:
            raise interrupted
        return row


def run_writes(spec: CampaignSpec, *, dest: Any, source: Any = None, sink=None,
               cell_id: str = "", progress: bool = False, stop_event=None,
               hooks: CampaignHooks | None = None) -> dict:
    """Run ``spec`` into ``dest`` (a Gateway or root:// / http:// URL), from ``source`` for TPC
    modes; rows go to ``sink(table, rows)``; returns the CAMPAIGN row. Writes only:
    xcbench.campaign.run_campaign (reads.py) runs any campaign, read and mixed ones too."""
    return Campaign(spec, dest, source, sink, cell_id, hooks).run(progress, stop_event)
