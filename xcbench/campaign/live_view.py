"""Live view of one campaign: Gb/s, active (and the limit), done, failed, ETA.

A rich live line on a terminal; elsewhere (CI, logs) one plain line every 10 s."""

from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.text import Text


def _eta(left_bytes: float, rate: float) -> str:
    if rate <= 0:
        return "--:--"
    s = int(left_bytes / rate)
    return f"{s // 3600:d}:{s // 60 % 60:02d}:{s % 60:02d}"


class CampaignView:
    def __init__(self, files: int, total_bytes: int, spec, console: Console | None = None):
        self.files, self.total, self.spec = files, total_bytes, spec
        self.console = console or Console(stderr=True)
        self.live: Live | None = None
        self._last_plain = 0.0
        self.line = Text("")

    def start(self) -> None:
        s = self.spec
        self.console.print(f"campaign {s.campaign_id}: {self.files} files, {self.total / 1e9:.2f} GB, "
                           f"{s.mode} with {s.client}, concurrency {s.concurrency}"
                           f"{' (optimizer)' if s.optimizer else ''}")
        if self.console.is_terminal:
            self.live = Live(self.line, console=self.console, refresh_per_second=2, transient=True)
            self.live.start()

    def render(self, r: dict, moved: int, limit: int) -> str:
        rate = float(r.get("rate") or 0.0)
        return (f"{8 * rate / 1e9:6.2f} Gb/s  active {r['active']:4d}/{limit:<4d}  "
                f"done {r['done']}/{self.files}  failed {r['failed']}  "
                f"{moved / 1e9:.2f}/{self.total / 1e9:.2f} GB  ETA {_eta(self.total - moved, rate)}")

    def update(self, r: dict, moved: int, limit: int) -> None:
        text = self.render(r, moved, limit)
        if self.live:
            self.live.update(Text(text))
        elif time.monotonic() - self._last_plain >= 10:
            self._last_plain = time.monotonic()
            self.console.print(text)

    def stop(self, row: dict) -> None:
        if self.live:
            self.live.stop()
        self.console.print(f"campaign {row['campaign_id']}: {8 * float(row['rate'] or 0) / 1e9:.2f} Gb/s, "
                           f"{row['finished']} finished, {row['failed']} failed, "
                           f"{row['bytes'] / 1e9:.2f} GB in {row['finish_time'] - row['start_time']:.1f} s")
