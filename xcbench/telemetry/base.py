"""Samplers and the runner that samples them in the background, on the run's clock.

A sampler returns SAMPLE rows (xcbench.store.tables.SAMPLE) without ``cell_id``: the runner adds it.
Values are numbers; ``labels`` is a small dict saying what the value is of (pool, interface, pid).
Cumulative counters keep their own name; the rate derived from them gets a ``.rate`` suffix
(per second), so totals can be computed exactly from counters and plots can use rates.

A sampler that raises loses its tick, not the run: the runner writes a GAP row and goes on with
the others. Samplers must bound their own latency (one loop thread calls them all).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger(__name__)

Sink = Callable[[str, list[dict]], None]


class SampleGap(Exception):
    """Raised by a sampler that got part of its sample: ``rows`` are written, then a GAP row."""

    def __init__(self, error: str, rows: list[dict] | None = None):
        super().__init__(error)
        self.rows = rows or []


class Sampler:
    """A telemetry source. Lifecycle hooks are no-ops unless a sampler needs them."""

    name = "sampler"
    min_interval = 0.0  # seconds: a sampler whose source changes slowly skips ticks closer than this

    def start(self) -> None:
        pass

    def sample(self, wall: float, mono: float) -> list[dict]:
        return []

    def stop(self) -> None:
        pass

    def level_end(self, start: float, end: float, info: dict[str, Any]) -> list[dict]:
        """A campaign level ran from ``start`` to ``end`` (wall seconds): rows about that window
        (a device that reads a remote store after the fact, as Prometheus)."""
        return []

    def row(self, wall: float, mono: float, metric: str, value: float | None,
            labels: dict[str, Any] | None = None) -> dict:
        return {"wall": wall, "mono": mono, "sampler": self.name, "metric": metric,
                "value": value, "labels": dict(labels or {})}


class Rates:
    """Per-second rates from cumulative counters, keyed by (metric, labels).

    A counter that goes down (process restart) starts over: no rate for that step.
    """

    def __init__(self) -> None:
        self._last: dict[tuple, tuple[float, float]] = {}

    def update(self, key: tuple, mono: float, value: float) -> float | None:
        prev = self._last.get(key)
        self._last[key] = (mono, value)
        if prev is None or mono <= prev[0] or value < prev[1]:
            return None
        return (value - prev[1]) / (mono - prev[0])

    def counter_rows(self, sampler: Sampler, wall: float, mono: float, metric: str,
                     value: float, labels: dict[str, Any] | None = None) -> list[dict]:
        """The counter's row, plus its ``.rate`` row once there is a previous value."""
        rows = [sampler.row(wall, mono, metric, value, labels)]
        rate = self.update((metric, tuple(sorted((labels or {}).items()))), mono, value)
        if rate is not None:
            rows.append(sampler.row(wall, mono, metric + ".rate", rate, labels))
        return rows


class TelemetryRunner:
    """Samples each sampler at its own interval in one background thread.

    A sampler's period is ``intervals[name]`` (default ``interval``), never shorter than its
    ``min_interval``. Each sampler has its own grid on the monotonic clock (start + k*period);
    the loop wakes at the earliest due point and samples whoever is due, so ``host:0.5`` and
    ``ceph:2`` keep their own pace. A sampler that comes too late (slow sampler) skips its missed
    points rather than bursting. ``clock``, ``mono`` and ``sleep`` are injectable so the loop can
    be driven by a fake clock in tests; with ``sleep=None`` the loop waits on an event, so
    stop() returns at once.
    """

    def __init__(self, samplers: Iterable[Sampler], *, interval: float = 1.0, sink: Sink,
                 cell_id: str = "", intervals: dict[str, float] | None = None,
                 clock: Callable[[], float] = time.time,
                 mono: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Any] | None = None):
        if interval <= 0 or any(v <= 0 for v in (intervals or {}).values()):
            raise ValueError("interval must be > 0")
        self.samplers = list(samplers)
        self.interval = float(interval)
        self.intervals = {k: float(v) for k, v in (intervals or {}).items()}
        self.sink = sink
        self.cell_id = cell_id
        self.clock, self.mono = clock, mono
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._thread: threading.Thread | None = None
        self._started: list[Sampler] = []
        # what the runner did, for the overhead benchmark and the run log
        self.ticks = 0
        self.skipped = 0
        self.gaps = 0
        self.busy_seconds = {s.name: 0.0 for s in self.samplers}  # wall time inside sample()
        self.cpu_by_sampler = {s.name: 0.0 for s in self.samplers}  # CPU time of this thread
        self.cpu_seconds = 0.0  # CPU time the sampling thread used (its own cost on the host)
        self._last: dict[int, float] = {}
        self.lost: dict[str, dict[str, Any]] = {}  # rows the sink refused, per table

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> TelemetryRunner:
        if self._thread is not None:
            return self
        self._stop.clear()
        for s in self.samplers:
            try:
                s.start()
                self._started.append(s)
            except Exception as e:  # noqa: BLE001 - a sampler must never stop the run
                self._gap(s, f"start: {_why(e)}")
        self._thread = threading.Thread(target=self._loop, name="xcb-telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the loop, take one last sample (so a run's end is covered), stop the samplers."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("telemetry loop still busy after %.0f s; leaving it", timeout)
        else:
            self.tick()
        self._thread = None
        for s in self._started:
            try:
                s.stop()
            except Exception as e:  # noqa: BLE001
                self._gap(s, f"stop: {_why(e)}")
        self._started = []

    def __enter__(self) -> TelemetryRunner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def level_end(self, start: float, end: float, **info: Any) -> None:
        """Tell every started sampler that a level ended (in the caller's thread: each
        sampler bounds its own latency); their rows are written like samples, failures as gaps."""
        for s in list(self._started):
            try:
                rows = s.level_end(start, end, info)
            except Exception as e:  # noqa: BLE001 - a sampler must never stop the run
                self._gap(s, f"level: {_why(e)}")
                continue
            if rows:
                for r in rows:
                    r["cell_id"] = self.cell_id
                self._write("samples", rows)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the loop ----------------------------------------------------------------------------
    def period(self, s: Sampler) -> float:
        """Seconds between two samples of ``s``."""
        return max(self.intervals.get(s.name, self.interval), s.min_interval)

    def _loop(self) -> None:
        t0 = self.mono()
        k: dict[int, int] = {}  # id(sampler) -> index of its next grid point
        while not self._stop.is_set():
            started = list(self._started)
            now = self.mono()
            due = [s for s in started if t0 + k.get(id(s), 0) * self.period(s) <= now + 1e-6]
            self._round(due, check_last=False)
            now = self.mono()
            for s in due:
                p, n = self.period(s), k.get(id(s), 0) + 1
                if now >= t0 + n * p:  # a slow round: skip what was missed, keep the grid
                    nk = int((now - t0) // p) + 1
                    self.skipped += nk - n
                    n = nk
                k[id(s)] = n
            wake = min((t0 + k.get(id(s), 0) * self.period(s) for s in started),
                       default=now + self.interval)
            self._sleep(max(wake - now, 0.0))

    def tick(self) -> None:
        """One sampling round over all started samplers (except those sampled less than their
        ``min_interval`` ago): the final sample at stop()."""
        self._round(list(self._started), check_last=True)

    def _round(self, samplers: list[Sampler], check_last: bool) -> None:
        cpu0 = time.thread_time()
        for s in samplers:
            wall, mono = self.clock(), self.mono()
            last = self._last.get(id(s))
            if check_last and last is not None and mono - last < s.min_interval - 1e-6:
                continue
            self._last[id(s)] = mono
            cpu = time.thread_time()
            try:
                rows = s.sample(wall, mono)
                err = None
            except SampleGap as e:
                rows, err = e.rows, str(e)
            except Exception as e:  # noqa: BLE001 - record the gap, the others go on
                rows, err = [], _why(e)
            self.busy_seconds[s.name] = self.busy_seconds.get(s.name, 0.0) + self.mono() - mono
            self.cpu_by_sampler[s.name] = self.cpu_by_sampler.get(s.name, 0.0) + time.thread_time() - cpu
            if rows:
                for r in rows:
                    r["cell_id"] = self.cell_id
                self._write("samples", rows)
            if err is not None:
                self._gap(s, err, wall)
        self.cpu_seconds += time.thread_time() - cpu0
        self.ticks += 1

    def _gap(self, s: Sampler, error: str, wall: float | None = None) -> None:
        self.gaps += 1
        self._write("gaps", [{"cell_id": self.cell_id, "wall": self.clock() if wall is None else wall,
                              "sampler": s.name, "error": error}])

    def _write(self, table: str, rows: list[dict]) -> None:
        """Hand rows to the sink. A sink that raises (a full disk behind it) loses these rows,
        not the sampling: they are counted in ``lost`` (table -> {rows, error}) for the run to
        report (xcbench.store.rundir counts its own losses in the manifest), and the loop goes on."""
        try:
            self.sink(table, rows)
        except Exception as e:  # noqa: BLE001 - a full disk must not kill the campaign either
            lost = self.lost.setdefault(table, {"rows": 0, "error": ""})
            if not lost["rows"]:
                log.warning("telemetry: rows of %s lost: %s", table, _why(e))
            lost["rows"] += len(rows)
            lost["error"] = _why(e)


def _why(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
