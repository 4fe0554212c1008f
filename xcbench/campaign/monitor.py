"""The campaign's monitor: the 1 s timeline, optimizer ticks, the live view, and at the end the
CAMPAIGN row and findings.

A mixin of :class:`xcbench.campaign.dispatch.Campaign`: its monitor thread reads the counters
the dispatcher's workers keep (``bytes_done``, ``live``, ``final``, ``active``) under the
campaign's condition, and sets the dispatcher's ``limit`` when the optimizer decides.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from xcbench.campaign.clients import XRDCL_ENV
from xcbench.campaign.optimizer import observe
from xcbench.campaign.rows import Buffered, Timeline, campaign_row, optimizer_row
from xcbench.campaign.spec import CampaignSpec
from xcbench.store.findings import finding

log = logging.getLogger(__name__)
SLOW_CHECKSUM = 20.0  # s: a checksum query this slow is the server's kXR_wait, not adler32


class CampaignMonitor:
    # the dispatcher's state (set by Campaign.__init__), read here under ``cond``
    spec: CampaignSpec
    cell_id: str
    cond: threading.Condition
    out: Buffered
    optimizer: Any
    limit: int
    ready: Any
    delayed: list
    views: list
    live: dict
    final: dict[int, str]
    active: int
    bytes_done: int
    read_done: int
    findings: list[dict]
    mismatches: int
    slow_checksums: int
    checksum_retries: int
    delete_failures: int
    dataset: Any
    dest: Any
    source: Any
    staging: dict | None
    scheme: str
    kind: str
    choices: list
    local: Any
    cpu: Any  # DriverCpu: the driver's own CPU and its limit
    rule: Any  # LevelRule of a time-based level, or None
    level_end: dict | None

    def _judge_level(self, timeline: Timeline, now: float) -> None:  # dispatch.Campaign's
        raise NotImplementedError

    def _opt_interval(self) -> float:
        """The optimizer's interval (s): asked only while an optimizer runs."""
        assert self.spec.optimizer is not None
        return self.spec.optimizer.interval

    def totals(self) -> tuple[int, int, int, int]:
        with self.cond:
            moved = self.bytes_done + sum(p.transferred for _, p, _ in self.live.values())
            done = sum(1 for s in self.final.values() if s == "FINISHED")
            return moved, self.active, done, len(self.final) - done

    def read_moved(self) -> int:
        """Bytes read so far (finished attempts and the ones in flight): the timeline's split."""
        with self.cond:
            return self.read_done + sum(p.transferred for _, p, _ in self.live.values()
                                        if p.direction == "read")

    def _optimize(self, now: float) -> None:
        with self.cond:
            waiting = list(self.ready) + list(self.delayed)
            for v, p, _ in self.live.values():
                v.transferred = p.transferred
            state = observe(list(self.views), queue_size=len(waiting),
                            retry_waiting=sum(j.retry for j in waiting), now=now,
                            scale=self._opt_interval() / 60.0)
            d = self.optimizer.step(state)
            if d is not None:
                self.limit = d.decision
                self.cond.notify_all()
        if d is not None:
            self.out.add("optimizer", [optimizer_row(self.cell_id, self.spec.campaign_id, d)])

    def _monitor(self, done: threading.Event, timeline: Timeline, view) -> None:
        """Each second: a timeline row, the optimizer when due, the view, a flush. A failing
        sink or view loses rows (Buffered.lost) but never stops this loop: the optimizer
        must go on deciding while transfers run."""
        next_opt = time.time() + (self._opt_interval() if self.optimizer else 1e18)
        while not done.wait(1.0):
            try:
                next_opt = self._tick(timeline, view, next_opt)
            except Exception as e:  # noqa: BLE001 - a bug in a row or the view: keep going
                log.warning("campaign monitor: %s: %s", type(e).__name__, e)

    def _tick(self, timeline: Timeline, view, next_opt: float) -> float:
        """One second of the monitor; returns when the optimizer decides next."""
        now = time.time()
        moved, active, ok, failed = self.totals()
        r = timeline.sample(now, moved, active, ok, failed, self.read_moved())
        r.update(self.cpu.sample(now))
        self.out.add("timeline", [r])
        if self.rule is not None:
            self._judge_level(timeline, now)
        if self.optimizer and now >= next_opt:
            self._optimize(now)
            next_opt = now + self._opt_interval()
        if view is not None:
            view.update(r, moved, self.limit)
        self.out.flush()
        return next_opt

    def _findings(self) -> list[dict]:
        rows = list(self.findings)
        if self.mismatches:
            rows.append(finding(self.cell_id, f"{self.mismatches} transfers were acknowledged by "
                                "the gateway but the stored file differs (checksum/size mismatch)",
                                "seen with XRootD 5.5.3 on a full file system: short writes are "
                                "acknowledged and the file is stored truncated",
                                "keep checksum verification on; leave room on the target "
                                "(delete_after_verify)", "error"))
        if self.slow_checksums:
            rows.append(finding(self.cell_id, f"{self.slow_checksums} checksum queries took > "
                                f"{SLOW_CHECKSUM:.0f} s",
                                "the gateway answers kXR_wait when more checksums run than "
                                "`xrootd.chksum max` allows; the client then sleeps",
                                "raise `xrootd.chksum max` (xcbench's configs use 1024)"))
        return rows

    def _summary(self, start: float, end: float) -> dict:
        spec, rows = self.spec, self.out.kept.get("transfers", [])
        ok_rows = [r for r in rows if r["file_state"] == "FINISHED"]
        first = min((r["start_time"] for r in rows if r["start_time"]), default=start)
        last = max((r["finish_time"] for r in rows if r["finish_time"]), default=end)
        moved = sum(r["file_size"] for r in ok_rows)
        settings = {
            "spec": spec.settings(), "dataset": self.dataset.describe(),
            "dest": {"label": self.dest.label, "root_url": self.dest.root_url,
                     "http_url": self.dest.http_url, "backend": self.dest.backend},
            "source": None if self.source is None else {
                "root_url": self.source.root_url, "http_url": self.source.http_url,
                "backend": self.source.backend, "staging": self.staging},
            "scheme": self.scheme, "transfer_client": self.kind, "choices": self.choices,
            "xrdcl_env": XRDCL_ENV, "engine": "threads: one blocking transfer per worker thread",
            "timeout": f"{spec.timeout:g} s + {spec.timeout_per_mib:g} s/MiB",
            "delete_after_verify": spec.delete_after_verify,
            "delete_failures": self.delete_failures,
            "checksum_queries_retried_after_http_500": self.checksum_retries,
            "local_source": self.local.describe() if self.local else None,
            "local_source_staging": self.staging if self.local else None,
            "level": self.level_end,
            "attempts": len([r for r in rows if r["start_time"]]),
            "lost_rows": dict(self.out.lost) or None,  # rows its sink could not take
            "retried": sum(1 for r in rows if r["retry"]),
        }
        return campaign_row(
            cell_id=self.cell_id, campaign_id=spec.campaign_id, concurrency=spec.concurrency,
            repeat=spec.repeat, mode=spec.mode, client=spec.client,
            # a time-based level counts its transfers (the dataset's files are in settings)
            files=len(self.final) if self.rule is not None else len(self.dataset),
            bytes=moved, start_time=first, finish_time=last,
            rate=moved / (last - first) if last > first else 0.0,
            finished=sum(1 for s in self.final.values() if s == "FINISHED"),
            failed=sum(1 for s in self.final.values() if s != "FINISHED"), settings=settings,
            direction=spec.direction, **self.cpu.total(end))
