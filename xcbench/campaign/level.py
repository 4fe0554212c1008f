"""Time-based campaign levels: the dispatcher's dataset cycling and the level's end.

The campaign holds one :class:`Levels` (``campaign.levels``), which reads and writes the
campaign's dispatch state under its ``cond``. A time-based level (``spec.duration``) keeps every transfer slot busy by
cycling the dataset: transfer ``seq`` moves file ``seq % files``. The monitor asks
:meth:`Levels.judge` once a second whether the level is over: its LevelRule holds (after the
minimum duration), the maximum duration is reached, or transfers keep failing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xcbench.campaign.rows import Timeline


@dataclass(order=True)
class _Job:
    not_before: float
    seq: int  # the transfer's number: file index + cycle * files (file-count mode: the index)
    retry: int = 0


class Levels:
    """The level of a campaign: dataset cycling and the level's end (a part of the campaign)."""

    def __init__(self, campaign: Any):
        self.c = campaign  # xcbench.campaign.dispatch.Campaign: its dispatch state

    def cycle(self) -> None:
        """Time-based level: queue the next transfer of the cycled dataset (under ``cond``),
        preferring a file not in flight; overwrite-cycling and a local gfal2 source never move
        one file twice at once (they wait for a free one instead)."""
        n = len(self.c.dataset)
        for k in range(n):
            if not self.c.busy.get(self.c.index(self.c.next_seq + k)):
                self.c.next_seq += k
                break
        else:
            if self.c.local or not self.c.spec.delete_after_verify:
                return
        self.c.ready.append(_Job(0.0, self.c.next_seq))
        self.c.next_seq += 1

    def judge(self, timeline: Timeline, now: float) -> None:
        """The monitor's check, once a second: end the level when its rule holds after the
        minimum duration, at the maximum, or when transfers keep failing (no point going on)."""
        rule, elapsed = self.c.rule, now - timeline.start
        with self.c.cond:
            if self.c.level_end is not None:
                return
            streak = self.c.fail_streak
        ended_by, steady, spread, window = None, False, float("nan"), None
        if elapsed >= rule.min or elapsed >= rule.max:  # the spread is recorded at max too
            rows = timeline.rows
            ts = [r["t"] for r in rows]
            steady, spread = rule.check(ts, [r["bytes"] for r in rows])
            window = rule.window_at(ts) if ts else None
        if steady:
            ended_by = "steady"
        elif elapsed >= rule.max:
            ended_by = "max"
        elif streak >= max(8, 2 * self.c.limit):
            ended_by = "failing"
        if ended_by is not None:
            self.end(ended_by, elapsed, spread, window)

    def end(self, ended_by: str, elapsed: float, spread: float = float("nan"),
            window: tuple[float, float] | None = None) -> None:
        """Record the level's end; ``window``: the one its rule judged (LevelRule.window_at),
        else the last ``rule.window`` s before ``elapsed`` (a level stopped between checks)."""
        rule = self.c.rule
        end = {"ended_by": ended_by, "steady": ended_by == "steady", "t_end": round(elapsed, 3),
               # the window check() judged, which the analysis averages and the plots shade
               "window": [round(x, 3) for x in (window or rule.window_at(elapsed))],
               "spread": None if spread != spread else round(spread, 4),
               "rule": rule.settings(), "text": rule.describe(),
               "dataset_files": len(self.c.dataset), "transfers_started": self.c.next_seq}
        with self.c.cond:
            if self.c.level_end is None:
                self.c.level_end = end
                self.c.cond.notify_all()

    def release(self, i: int) -> None:
        if self.c.busy.get(i, 0) > 1:
            self.c.busy[i] -= 1
        else:
            self.c.busy.pop(i, None)

