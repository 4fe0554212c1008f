"""An emulation of FTS3's connection optimizer (one source->destination pair).

Follows cern-fts/fts3 src/server/services/optimizer/OptimizerConnections.cpp (read, not copied):
the decision rules of ``optimizeConnectionsForPair`` with the defaults of ServerConfig and
OptimizerConstants.h, and the input state of the MySQL data source (OptimizerDataSource.cpp):
throughput = bytes moved inside the window / window, success rate = ceil(100 * finished /
(finished + recoverable failures)), 100 when nothing terminated yet. Not emulated: SE/link
throughput limits (no t_se rows here) and the stream optimizer (streams stay what the spec says).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

from xcbench.campaign.spec import OptimizerSpec

_MODE_LEVEL = {"conservative": 1, "normal": 2, "aggressive": 3}


@dataclass
class PairState:
    """One optimizer input sample (FTS's PairState)."""
    timestamp: float
    throughput: float = 0.0     # bytes/s over the window
    success_rate: float = 100.0
    retry_count: int = 0
    active: int = 0
    queue_size: int = 0         # files waiting (SUBMITTED)
    filesize_avg: float = 0.0
    ema: float = 0.0


@dataclass
class Decision:
    wall: float
    previous: int
    decision: int
    reason: str
    success_rate: float
    throughput: float
    ema: float


def _ema(sample: float, alpha: float, cur: float) -> float:
    return sample * alpha + (1 - alpha) * cur if sample > 0 else cur


def _lg(x: float) -> float:
    """round(log10(x)) as C++ computes it (log10(0) = -inf)."""
    return round(math.log10(x)) if x > 0 else -math.inf


class Optimizer:
    """Decides the number of active transfers, one ``step`` per optimizer interval."""

    def __init__(self, spec: OptimizerSpec, max_active: int):
        self.spec = spec
        self.min = spec.min_active
        self.max = max(spec.max_active or max_active, self.min)
        self.specific = spec.range_configured
        self.storage_specific = not spec.max_active  # max came from the SE limit, not a link
        self.level = _MODE_LEVEL[spec.mode]
        self.value = 0  # FTS: 0 = no decision stored yet
        self.previous: PairState | None = None

    def step(self, cur: PairState) -> Decision | None:
        """One optimizer run; None when FTS would skip (steady state, too early)."""
        s, prev_value = self.spec, self.value
        if prev_value == 0:
            if self.specific:
                decision, why = self.max, "No information. Use configured range max."
            else:
                decision, why = self.min + (self.max - self.min) // 2, "No information. Start halfway."
            cur.ema = cur.throughput
            return self._store(cur, decision, why)
        prev = self.previous
        assert prev is not None  # _store keeps it with the first decision (value != 0)
        cur.ema = _ema(cur.throughput, s.ema_alpha, prev.ema)
        if self.min == self.max:
            return self._store(cur, self.min, "Range fixed")
        if (cur.success_rate == prev.success_rate and cur.ema == prev.ema
                and cur.timestamp - prev.timestamp < s.steady_interval):
            return None  # "Same success rate and throughput EMA, not enough time passed"

        if cur.success_rate < s.low_success_rate:
            decision, why = self._low_success(cur, prev, prev_value)
        elif cur.ema == 0:
            decision, why = prev_value, "Steady, not enough throughput information"
        else:
            inc = s.aggressive_increase_step if self.level >= 2 else s.increase_step
            decision, why = self._good_success(cur, prev, prev_value, inc)

        if decision < self.min:
            decision, why = self.min, why + ". Hit lower range limit"
            if not self.specific:
                why += ". Using *->* link configuration"
        elif decision > self.max:
            decision, why = self.max, why + ". Hit upper range limit"
            if not self.specific:
                why += ". Using *->* link configuration"
            elif self.storage_specific:
                why += ". Link not configured. Using SE limits"
        if self.level == 1 and decision > prev_value and cur.queue_size < decision:
            decision, why = prev_value, why + ". Not enough files in the queue"
        if self.level >= 2 and decision > cur.queue_size * s.max_streams:
            decision, why = prev_value, why + ". Too many streams"
        return self._store(cur, decision, why)

    def _low_success(self, cur: PairState, prev: PairState, value: int) -> tuple[int, str]:
        s = self.spec
        if (cur.success_rate > prev.success_rate and cur.success_rate >= s.base_success_rate
                and cur.retry_count <= prev.retry_count):
            return value, "Bad link efficiency but progressively improving"
        if cur.success_rate < prev.success_rate:
            return value - s.decrease_step, "Bad link efficiency"
        return value - s.decrease_step, "Bad link efficiency, no changes"

    def _good_success(self, cur: PairState, prev: PairState, value: int, inc: int) -> tuple[int, str]:
        dec = self.spec.decrease_step
        if cur.queue_size < value:
            return value, "Queue emptying. Hold on."
        if cur.ema < prev.ema:
            if _lg(cur.filesize_avg) < _lg(prev.filesize_avg):
                return value + inc, "Good link efficiency, throughput deterioration, avg. filesize decreasing"
            if _lg(cur.ema) < _lg(prev.ema):
                return value - dec, "Good link efficiency, throughput deterioration"
            return value, "Good link efficiency, small throughput deterioration"
        if cur.ema > prev.ema:
            return value + inc, ("Good link efficiency, current average throughput is larger than "
                                 "the preceding average")
        return value + inc, "Good link efficiency. Increment"

    def _store(self, cur: PairState, decision: int, why: str) -> Decision:
        d = Decision(cur.timestamp, self.value, decision, why, cur.success_rate, cur.throughput,
                     cur.ema)
        self.value, self.previous = decision, cur
        return d


@dataclass
class AttemptView:
    """What the data source needs of one transfer attempt."""
    start: float
    end: float | None           # None while active
    size: int
    transferred: int
    state: str                  # ACTIVE | FINISHED | FAILED
    recoverable: bool = True
    retry: int = 0


def _time_frame(avg_duration: float, scale: float) -> float:
    """FTS's calculateTimeFrame (5/15/30 min by average duration), scaled."""
    if 0 < avg_duration < 30 * scale:
        return 300 * scale
    if 30 * scale < avg_duration < 900 * scale:
        return 900 * scale
    return 1800 * scale


def observe(attempts: Iterable[AttemptView], *, queue_size: int, retry_waiting: int,
            now: float | None = None, scale: float = 1.0) -> PairState:
    """The optimizer input at ``now`` from the campaign's attempts (FTS's data source)."""
    now = time.time() if now is None else now
    attempts = list(attempts)
    done = [a.end - a.start for a in attempts if a.end is not None and a.state == "FINISHED"
            and a.end > now - 1800 * scale and a.end > a.start]  # durations
    avg = sum(done) / len(done) if done else 0.0
    window = _time_frame(avg, scale)
    start_w = now - window
    total, sizes = 0.0, []
    for a in attempts:
        if a.end is None and a.state == "ACTIVE":
            dur = now - a.start
            if dur > 0:
                total += a.transferred / dur * (now - max(a.start, start_w))
        elif a.state == "FINISHED" and a.end is not None and a.end >= start_w:
            dur = a.end - a.start
            total += a.size / dur * (a.end - max(a.start, start_w)) if dur > 0 else a.size
        else:
            continue
        if a.size > 0:
            sizes.append(a.size)
    finished = failed = 0
    for a in attempts:
        if a.end is not None and a.end > start_w:
            if a.state == "FINISHED":
                finished += 1
            elif a.state == "FAILED" and a.recoverable:
                failed += 1
    rate = math.ceil(finished * 100.0 / (finished + failed)) if finished + failed else 100.0
    return PairState(timestamp=now, throughput=total / window, success_rate=float(rate),
                     retry_count=retry_waiting, queue_size=queue_size,
                     active=sum(1 for a in attempts if a.end is None),
                     filesize_avg=sum(sizes) / len(sizes) if sizes else 0.0)
