"""Samplers and a fake clock for the telemetry runner tests."""

from __future__ import annotations

import threading

from xcbench.telemetry import Sampler, TelemetryRunner


class FakeTime:
    """wall/mono clocks that only move when the loop sleeps (or a sampler says so).

    Each sleep() hands control back to the test, which lets the loop go on with step().
    """

    def __init__(self) -> None:
        self.wall, self.mono = 1_700_000_000.0, 100.0
        self.sleeps: list[float] = []
        self._slept = threading.Semaphore(0)
        self._go = threading.Semaphore(0)
        self.free = False

    def clock(self) -> float:
        return self.wall

    def mono_clock(self) -> float:
        return self.mono

    def advance(self, d: float) -> None:
        self.wall += d
        self.mono += d

    def sleep(self, d: float) -> None:
        self.sleeps.append(d)
        self.advance(d)
        if self.free:
            return
        self._slept.release()
        assert self._go.acquire(timeout=10), "test did not step the loop"

    def step(self, n: int = 1) -> None:
        """Wait until the loop sleeps, then let it go on; n times."""
        for _ in range(n):
            assert self._slept.acquire(timeout=10), "loop did not reach sleep()"
            self._go.release()

    def finish(self, runner: TelemetryRunner) -> None:
        self.free = True
        self._go.release()
        runner.stop()


class Collect:
    def __init__(self) -> None:
        self.tables: dict[str, list[dict]] = {}

    def __call__(self, table: str, rows: list[dict]) -> None:
        self.tables.setdefault(table, []).extend(rows)

    def rows(self, table: str, sampler: str | None = None) -> list[dict]:
        return [r for r in self.tables.get(table, []) if sampler is None or r["sampler"] == sampler]


class Counting(Sampler):
    name = "counting"

    def __init__(self, fake: FakeTime | None = None, cost: float = 0.0):
        self.calls = 0
        self.started = self.stopped = False
        self.fake, self.cost = fake, cost

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def sample(self, wall: float, mono: float) -> list[dict]:
        self.calls += 1
        if self.fake and self.cost:
            self.fake.advance(self.cost)  # a slow sampler
        return [self.row(wall, mono, "calls", self.calls, {"k": "v"})]


