"""The campaign's monitor: the 1 s timeline, optimizer ticks, the live view, and at the end the
CAMPAIGN row and findings.

The campaign holds one :class:`Monitor` (``campaign.monitor``): its thread reads the counters
the dispatcher's workers keep (``bytes_done``, ``live``, ``final``, ``active``) under the
campaign's condition, and sets the dispatcher's ``limit`` when the optimizer decides.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from xcbench.campaign.optimizer import observe
from xcbench.campaign.rows import Timeline, campaign_row, optimizer_row
from xcbench.clients.base import XRDCL_ENV
from xcbench.store.findings import finding

log = logging.getLogger(__name__)
SLOW_CHECKSUM = 20.0  # s: a checksum query this slow is the server's kXR_wait, not adler32


class Monitor:
    """The campaign's 1 s loop and its closing rows (a part of the campaign)."""

    def __init__(self, campaign: Any):
        self.c = campaign  # xcbench.campaign.dispatch.Campaign: its dispatch state

    def opt_interval(self) -> float:
        """The optimizer's interval (s): asked only while an optimizer runs."""
        assert self.c.spec.optimizer is not None
        return self.c.spec.optimizer.interval

    def totals(self) -> tuple[int, int, int, int]:
        with self.c.cond:
            moved = self.c.bytes_done + sum(p.transferred for _, p, _ in self.c.live.values())
            done = sum(1 for s in self.c.final.values() if s == "FINISHED")
            return moved, self.c.active, done, len(self.c.final) - done

    def read_moved(self) -> int:
        """Bytes read so far (finished attempts and the ones in flight): the timeline's split."""
        with self.c.cond:
            return self.c.read_done + sum(p.transferred for _, p, _ in self.c.live.values()
                                        if p.direction == "read")

    def optimize(self, now: float) -> None:
        with self.c.cond:
            waiting = list(self.c.ready) + list(self.c.delayed)
            for v, p, _ in self.c.live.values():
                v.transferred = p.transferred
            state = observe(list(self.c.views), queue_size=len(waiting),
                            retry_waiting=sum(j.retry for j in waiting), now=now,
                            scale=self.opt_interval() / 60.0)
            d = self.c.optimizer.step(state)
            if d is not None:
                self.c.limit = d.decision
                self.c.cond.notify_all()
        if d is not None:
            self.c.out.add("optimizer", [optimizer_row(self.c.cell_id, self.c.spec.campaign_id, d)])

    def loop(self, done: threading.Event, timeline: Timeline, view) -> None:
        """Each second: a timeline row, the optimizer when due, the view, a flush. A failing
        sink or view loses rows (Buffered.lost) but never stops this loop: the optimizer
        must go on deciding while transfers run."""
        next_opt = time.time() + (self.opt_interval() if self.c.optimizer else 1e18)
        while not done.wait(1.0):
            try:
                next_opt = self.tick(timeline, view, next_opt)
            except Exception as e:  # noqa: BLE001 - a bug in a row or the view: keep going
                log.warning("campaign monitor: %s: %s", type(e).__name__, e)

    def tick(self, timeline: Timeline, view, next_opt: float) -> float:
        """One second of the monitor; returns when the optimizer decides next."""
        now = time.time()
        moved, active, ok, failed = self.totals()
        r = timeline.sample(now, moved, active, ok, failed, self.read_moved())
        r.update(self.c.cpu.sample(now))
        self.c.out.add("timeline", [r])
        if self.c.rule is not None:
            self.c.levels.judge(timeline, now)
        if self.c.optimizer and now >= next_opt:
            self.optimize(now)
            next_opt = now + self.opt_interval()
        if view is not None:
            view.update(r, moved, self.c.limit)
        self.c.out.flush()
        return next_opt

    def findings(self) -> list[dict]:
        rows = list(self.c.findings)
        if self.c.mismatches:
            rows.append(finding(self.c.cell_id, f"{self.c.mismatches} transfers were acknowledged by "
                                "the gateway but the stored file differs (checksum/size mismatch)",
                                "seen with XRootD 5.5.3 on a full file system: short writes are "
                                "acknowledged and the file is stored truncated",
                                "keep checksum verification on; leave room on the target "
                                "(delete_after_verify)", "error"))
        if self.c.slow_checksums:
            rows.append(finding(self.c.cell_id, f"{self.c.slow_checksums} checksum queries took > "
                                f"{SLOW_CHECKSUM:.0f} s",
                                "the gateway answers kXR_wait when more checksums run than "
                                "`xrootd.chksum max` allows; the client then sleeps",
                                "raise `xrootd.chksum max` (xcbench's configs use 1024)"))
        return rows

    def summary(self, start: float, end: float) -> dict:
        spec, rows = self.c.spec, self.c.out.kept.get("transfers", [])
        ok_rows = [r for r in rows if r["file_state"] == "FINISHED"]
        first = min((r["start_time"] for r in rows if r["start_time"]), default=start)
        last = max((r["finish_time"] for r in rows if r["finish_time"]), default=end)
        moved = sum(r["file_size"] for r in ok_rows)
        settings = {
            "spec": spec.settings(), "dataset": self.c.dataset.describe(),
            "dest": {"label": self.c.dest.label, "root_url": self.c.dest.root_url,
                     "http_url": self.c.dest.http_url, "backend": self.c.dest.backend},
            "source": None if self.c.source is None else {
                "root_url": self.c.source.root_url, "http_url": self.c.source.http_url,
                "backend": self.c.source.backend, "staging": self.c.staging},
            "scheme": self.c.scheme, "transfer_client": self.c.kind, "choices": self.c.choices,
            "xrdcl_env": XRDCL_ENV, "engine": "threads: one blocking transfer per worker thread",
            "timeout": f"{spec.timeout:g} s + {spec.timeout_per_mib:g} s/MiB",
            "delete_after_verify": spec.delete_after_verify,
            "delete_failures": self.c.delete_failures,
            "checksum_queries_retried_after_http_500": self.c.checksum_retries,
            "local_source": self.c.local.describe() if self.c.local else None,
            "local_source_staging": self.c.staging if self.c.local else None,
            "level": self.c.level_end,
            "attempts": len([r for r in rows if r["start_time"]]),
            "lost_rows": dict(self.c.out.lost) or None,  # rows its sink could not take
            "retried": sum(1 for r in rows if r["retry"]),
        }
        return campaign_row(
            cell_id=self.c.cell_id, campaign_id=spec.campaign_id, concurrency=spec.concurrency,
            repeat=spec.repeat, mode=spec.mode, client=spec.client,
            # a time-based level counts its transfers (the dataset's files are in settings)
            files=len(self.c.final) if self.c.rule is not None else len(self.c.dataset),
            bytes=moved, start_time=first, finish_time=last,
            rate=moved / (last - first) if last > first else 0.0,
            finished=sum(1 for s in self.c.final.values() if s == "FINISHED"),
            failed=sum(1 for s in self.c.final.values() if s != "FINISHED"), settings=settings,
            direction=spec.direction, **self.c.cpu.total(end))
