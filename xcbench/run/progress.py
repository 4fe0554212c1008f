"""Progress across a matrix: cells done / total, the current cell and phase, the current rate,
the time left.

On a terminal a rich live view; otherwise (CI, logs, `| tee`) one plain line per event, each
stamped with the time of day, and a line every LEVEL_TICK_S while a level runs. Said once each:
the run's estimated length by phase (xcbench.run.estimate), the iperf3 and fio figures, and per
level the busiest storage host's range (min-max) where its NIC is in the path: not on a one-box
run, where no byte crosses it. At each cell and level: the time elapsed and about how long is
left (the estimate of what is not done yet). Rates are printed as the closing table prints them
(figures.units.gbps_num).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from xcbench.cell import Cell
from xcbench.figures.steady import SteadyWindow, level_steady
from xcbench.figures.units import fmt_gbps, gbps_num
from xcbench.run import estimate
from xcbench.run.figures import baseline_line, probe_line, storage_range
from xcbench.telemetry.prometheus import LIVE_PREFIX, live_line

LEVEL_TICK_S = 10.0  # piped: a line this often while a level runs, so a log shows it is alive


class MatrixView:
    def __init__(self, console: Console | None = None, *, one_box: bool = False,
                 probes: bool = True, repeats: int | None = None,
                 baseline: tuple[int, int, float] | None = estimate.DEFAULT_BASELINE,
                 clock=time.monotonic, quiet: bool = False):
        self.console = console or Console(stderr=True)
        # one box: the storage hosts are this machine; their NIC carries none of the run's bytes
        self.one_box, self.probes, self.repeats = one_box, probes, repeats
        self.baseline = baseline  # (stream counts, directions, seconds a point) or None: not run
        self.clock = clock
        self.quiet = quiet  # no progress at all (run --quiet): the closing table says the rest
        self.left: dict[str, float] = {}  # cell id -> its estimated seconds, for cells not done
        self.cell_id: str | None = None
        self.cell_t0 = self.level_t0 = self.last_tick = 0.0
        self.level = ""
        self.live_rows: list[dict] = []  # the level's live storage rows, for its min-max line
        self.live: Live | None = None
        self.total = self.done = self.failed = 0
        self.cell = self.what = ""
        self.rate = 0.0  # bytes/s of the last 1 s bucket
        self.transfers = self.transfer_failures = 0
        self.t0 = self.clock()
        self.buckets: dict[str, list[dict]] = {}  # campaign_id -> its 1-s timeline rows
        # the busiest storage host while a level runs (the prometheus device's live query)
        self.storage: str | None = None
        self.in_level = False

    def begin(self, run: Any, matrix: Any) -> None:
        self.total = len(matrix.cells)
        self.done = sum(1 for c in run.manifest["cells"].values()
                        if c.get("status") in ("complete", "degraded"))
        self._say(f"run {run.path} — {self.total} cells, {self.done} already done")
        left = [c for c in matrix.cells if (run.manifest["cells"].get(c.id) or {}).get("status")
                not in ("complete", "degraded")]
        self._say(estimate.line(left, repeats=self.repeats, probes=self.probes, baseline=self.baseline))
        self.left = {c.id: estimate.cell_seconds(c, repeats=self.repeats, probes=self.probes).mid
                     for c in left}
        self.tail = estimate.REPORT_S
        if self.console.is_terminal and not self.quiet:
            self.live = Live(self._render(), console=self.console, refresh_per_second=2,
                             transient=True)
            self.live.start()

    def start_cell(self, cell: Cell) -> None:
        self.cell, self.what, self.rate = cell.label, "start", 0.0
        self.cell_id, self.cell_t0 = cell.id, self.clock()
        self._say(f"[{self.done + 1}/{self.total}] {cell.label} ({cell.id}){self._eta()}")

    def remaining(self) -> float | None:
        """Seconds left: the estimate of the cells not started, what the current one has left
        of its own, and the report."""
        if not self.left and self.cell_id is None:
            return None
        now = self.clock()
        todo = sum(s for cid, s in self.left.items() if cid != self.cell_id)
        cur = self.left.get(self.cell_id or "", 0.0)
        return todo + max(0.0, cur - (now - self.cell_t0)) + getattr(self, "tail", 0.0)

    def _eta(self) -> str:
        left = self.remaining()
        if left is None:
            return ""
        return f" — {estimate.dur(self.clock() - self.t0)} in, about {estimate.dur(left)} left"

    def phase(self, label: str, what: str) -> None:
        self.cell, self.what = label, what
        self.in_level, self.storage = what.startswith("campaign"), None
        self.level_t0 = self.last_tick = self.clock()
        self.live_rows = []
        self._say(f"    {what}")

    def observe(self, table: str, rows: list[dict]) -> None:
        if table == "timeline" and rows:
            self.rate = float(rows[-1].get("rate") or 0.0)
            for r in rows:
                self.buckets.setdefault(str(r.get("campaign_id")), []).append(r)
            self._tick(rows[-1])
        elif table == "transfers":
            self.transfers += len(rows)
            self.transfer_failures += sum(1 for r in rows if r.get("file_state") != "FINISHED")
        elif table == "samples":
            live = [r for r in rows if r.get("sampler") == "prometheus"
                    and str(r.get("metric", "")).startswith(LIVE_PREFIX)]
            if not live or not self.in_level or self.one_box:
                return  # most sample rows: nothing to show (and no re-render for them)
            self.storage = live_line(live)
            self.live_rows.extend(live)
        elif table == "baseline" and rows:
            self._say(f"    {baseline_line(rows)}")
        elif table == "probes" and rows:
            self._say(f"    {probe_line(rows)}")
        elif table == "campaigns":
            said = storage_range(self.live_rows)
            self.in_level, self.storage, self.live_rows = False, None, []  # the level ended
            for r in rows:
                whole = gbps_num(float(r.get("rate") or 0))
                w = self._steady(r)
                if w is None or w.method == "whole":
                    rate = f"{whole} Gb/s over the whole level (no steady window)"
                else:
                    how = "steady" if w.method != "not steady" else "over its last window (not steady)"
                    rate = f"{gbps_num(w.rate)} Gb/s {how} ({whole} over the whole level)"
                self._say(f"    c={r.get('concurrency')}: {rate}, "
                          f"{r.get('finished')} finished, {r.get('failed')} failed{self._eta()}")
            if said:
                self._say(f"    {said}")
        if self.live:
            self.live.update(self._render())

    def _tick(self, row: dict) -> None:
        """Piped, while a level runs: every LEVEL_TICK_S a line with how long it has run, the
        last second's rate and the transfers done (a terminal has the live view for that)."""
        now = self.clock()
        if self.live or not self.in_level or now - self.last_tick < LEVEL_TICK_S:
            return
        self.last_tick = now
        self._say(f"    c={row.get('concurrency')} running {estimate.dur(now - self.level_t0)}: "
                  f"{gbps_num(self.rate)} Gb/s in the last second, {int(row.get('done') or 0)} "
                  f"transfers done")

    def _steady(self, campaign: dict) -> SteadyWindow | None:
        """The level's steady window and rate (figures.steady.level_steady: the report's
        figure, from the same timeline rows and, for a time-based level, the same window)."""
        rows = self.buckets.pop(str(campaign.get("campaign_id")), None)
        if not rows:
            return None
        rows.sort(key=lambda r: float(r.get("t") or 0))
        try:
            settings = campaign.get("settings")
            level = (json.loads(settings) if isinstance(settings, str) else settings or {}).get("level")
            w = level_steady([r.get("t") for r in rows], [r.get("bytes") for r in rows],
                             [r.get("rate") for r in rows], [r.get("active") for r in rows],
                             concurrency=float(campaign.get("concurrency") or 0) or None,
                             level=level if isinstance(level, dict) else None)
        except (TypeError, ValueError, AttributeError):
            return None
        return w if w.rate == w.rate else None

    def end_cell(self, cell: Cell, status: str, error: str | None) -> None:
        self.left.pop(cell.id, None)
        self.cell_id = None
        self.done += 1
        self.failed += status == "failed"
        self._say(f"    -> {status}" + (f": {error}" if error else ""))

    def finish(self) -> None:
        if self.live:
            self.live.stop()
            self.live = None

    def _say(self, text: str) -> None:
        if self.quiet:
            return
        if self.live:
            self.live.console.print(text, highlight=False)
            self.live.update(self._render())
        else:
            print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    def _render(self) -> Table:
        t = Table.grid(padding=(0, 2))
        t.add_row("cells", f"{self.done}/{self.total} done, {self.failed} failed")
        t.add_row("current", f"{self.cell} — {self.what}")
        t.add_row("rate", f"{fmt_gbps(self.rate, gib=True)} in the last second")
        if self.storage:
            t.add_row("storage", self.storage.removeprefix("storage "))
        t.add_row("transfers", f"{self.transfers} ({self.transfer_failures} not finished)")
        left = self.remaining()
        t.add_row("elapsed", f"{estimate.dur(self.clock() - self.t0)}"
                  + (f", about {estimate.dur(left)} left" if left is not None else ""))
        return t
