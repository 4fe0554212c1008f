"""Rows a campaign writes: TRANSFER (one per attempt), TIMELINE (1 s buckets), OPTIMIZER,
CAMPAIGN — exactly the columns of xcbench.store.tables."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from xcbench.store.tables import CAMPAIGN, OPTIMIZER, TIMELINE, TRANSFER

log = logging.getLogger(__name__)
Sink = Callable[[str, list[dict]], None]


def row(columns: tuple[str, ...], **values: Any) -> dict[str, Any]:
    """A record with every column of ``columns`` (missing ones None); unknown keys refused."""
    extra = set(values) - set(columns)
    if extra:
        raise KeyError(f"not columns of this table: {sorted(extra)}")
    return {c: values.get(c) for c in columns}


def transfer_row(**values: Any) -> dict[str, Any]:
    start, finish = values.get("start_time"), values.get("finish_time")
    if start is not None and finish is not None:
        dur = max(finish - start, 0.0)
        values.setdefault("tx_duration", dur)
        moved = values.get("transferred") or 0
        values.setdefault("throughput", moved / dur if dur > 0 else None)
    return row(TRANSFER, **values)


def optimizer_row(cell_id: str, campaign_id: str, d) -> dict[str, Any]:
    return row(OPTIMIZER, cell_id=cell_id, campaign_id=campaign_id, wall=d.wall,
               previous=d.previous, decision=d.decision, reason=d.reason,
               success_rate=d.success_rate, throughput=d.throughput, ema=d.ema)


def campaign_row(**values: Any) -> dict[str, Any]:
    settings = values.get("settings")
    if settings is not None and not isinstance(settings, str):
        values["settings"] = json.dumps(settings, sort_keys=True, default=str)
    return row(CAMPAIGN, **values)


class Timeline:
    """Aggregate rate and concurrency in 1 s buckets, from byte counters sampled each second."""

    def __init__(self, cell_id: str, campaign_id: str, concurrency: int, repeat: int,
                 start: float | None = None):
        self.base = dict(cell_id=cell_id, campaign_id=campaign_id, concurrency=concurrency,
                         repeat=repeat)
        self.start = time.time() if start is None else start
        self.rows: list[dict] = []
        self._last_total = self._last_read = 0
        self._last_wall = self.start

    def sample(self, wall: float, total_bytes: int, active: int, done: int, failed: int,
               read_bytes: int = 0) -> dict:
        """One bucket ending at ``wall``: bytes moved since the previous sample (of which
        ``read_bytes``, a running total too, were read; the rest written)."""
        moved = max(total_bytes - self._last_total, 0)
        read = min(max(read_bytes - self._last_read, 0), moved)
        span = max(wall - self._last_wall, 1e-9)
        r = row(TIMELINE, **self.base, t=round(wall - self.start, 3), wall=wall, bytes=moved,
                rate=moved / span, active=active, done=done, failed=failed, bytes_read=read,
                bytes_written=moved - read)
        self._last_total, self._last_wall = total_bytes, wall
        self._last_read = max(read_bytes, self._last_read)
        self.rows.append(r)
        return r


class Buffered:
    """Rows collected from worker threads, handed to the sink from one thread at a time.

    A sink that raises (a full disk behind it) loses those rows, not the campaign: they are
    counted in ``lost`` (table -> {rows, error}), logged once per table, and the monitor, the
    optimizer and the transfers go on."""

    def __init__(self, sink: Sink | None):
        self.sink = sink
        self._lock = threading.Lock()
        self._pending: dict[str, list[dict]] = {}
        self.kept: dict[str, list[dict]] = {}
        self.lost: dict[str, dict[str, Any]] = {}

    def add(self, table: str, rows: list[dict]) -> None:
        with self._lock:
            self._pending.setdefault(table, []).extend(rows)
            self.kept.setdefault(table, []).extend(rows)

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        if self.sink is not None:
            for table, rows in pending.items():
                if rows:
                    try:
                        self.sink(table, rows)
                    except Exception as e:  # noqa: BLE001 - count the loss, keep measuring
                        lost = self.lost.setdefault(table, {"rows": 0, "error": ""})
                        if not lost["rows"]:
                            log.warning("campaign: rows of %s lost: %s: %s", table,
                                        type(e).__name__, e)
                        lost["rows"] += len(rows)
                        lost["error"] = f"{type(e).__name__}: {e}"
