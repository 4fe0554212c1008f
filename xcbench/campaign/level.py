"""Time-based campaign levels: the dispatcher's dataset cycling and the level's end.

A mixin of :class:`xcbench.campaign.dispatch.Campaign` (its state, read and written under the
campaign's ``cond``). A time-based level (``spec.duration``) keeps every transfer slot busy by
cycling the dataset: transfer ``seq`` moves file ``seq % files``. The monitor asks
:meth:`_judge_level` once a second whether the level is over: its LevelRule holds (after the
minimum duration), the maximum duration is reached, or transfers keep failing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from xcbench.campaign.rows import Timeline


@dataclass(order=True)
class _Job:
    not_before: float
    seq: int  # the transfer's number: file index + cycle * files (file-count mode: the index)
    retry: int = 0


class LevelMixin:
    spec: Any
    cond: threading.Condition
    dataset: Any
    local: Any
    rule: Any
    ready: Any
    busy: dict[int, int]
    next_seq: int
    limit: int
    fail_streak: int
    level_end: dict | None

    def direction_of(self, seq: int) -> str:
        """write | read: what transfer ``seq`` does (the read campaign decides per transfer)."""
        return "write"

    def index(self, seq: int) -> int:
        """The dataset file a transfer moves."""
        return seq % len(self.dataset)

    def _cycle(self) -> None:
        """Time-based level: queue the next transfer of the cycled dataset (under ``cond``),
        preferring a file not in flight; overwrite-cycling and a local gfal2 source never move
        one file twice at once (they wait for a free one instead)."""
        n = len(self.dataset)
        for k in range(n):
            if not self.busy.get(self.index(self.next_seq + k)):
                self.next_seq += k
                break
        else:
            if self.local or not self.spec.delete_after_verify:
                return
        self.ready.append(_Job(0.0, self.next_seq))
        self.next_seq += 1

    def _judge_level(self, timeline: Timeline, now: float) -> None:
        """The monitor's check, once a second: end the level when its rule holds after the
        minimum duration, at the maximum, or when transfers keep failing (no point going on)."""
        rule, elapsed = self.rule, now - timeline.start
        with self.cond:
            if self.level_end is not None:
                return
            streak = self.fail_streak
        ended_by, steady, spread = None, False, float("nan")
        if elapsed >= rule.min or elapsed >= rule.max:  # the spread is recorded at max too
            rows = timeline.rows
            steady, spread = rule.check([r["t"] for r in rows], [r["bytes"] for r in rows])
        if steady:
            ended_by = "steady"
        elif elapsed >= rule.max:
            ended_by = "max"
        elif streak >= max(8, 2 * self.limit):
            ended_by = "failing"
        if ended_by is not None:
            self._end_level(ended_by, elapsed, spread)

    def _end_level(self, ended_by: str, elapsed: float, spread: float = float("nan")) -> None:
        rule = self.rule
        end = {"ended_by": ended_by, "steady": ended_by == "steady", "t_end": round(elapsed, 3),
               "window": [round(max(0.0, elapsed - rule.window), 3), round(elapsed, 3)],
               "spread": None if spread != spread else round(spread, 4),
               "rule": rule.settings(), "text": rule.describe(),
               "dataset_files": len(self.dataset), "transfers_started": self.next_seq}
        with self.cond:
            if self.level_end is None:
                self.level_end = end
                self.cond.notify_all()

    def _release(self, i: int) -> None:
        if self.busy.get(i, 0) > 1:
            self.busy[i] -= 1
        else:
            self.busy.pop(i, None)

