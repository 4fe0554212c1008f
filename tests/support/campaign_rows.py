"""Campaign rows as the campaign tests read them: finals per file, the most transfers in flight."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit


class Rows(dict):
    def __call__(self, table, rows):
        self.setdefault(table, []).extend(rows)


def local(gw, url: str) -> Path:
    return Path(gw.target.path) / urlsplit(url).path.lstrip("/")


def max_overlap(rows) -> int:
    """Most attempts active at one instant, from the records' start/finish times."""
    events = sorted([(r["start_time"], 1) for r in rows if r["start_time"]] +
                    [(r["finish_time"], -1) for r in rows if r["start_time"]],
                    key=lambda e: (e[0], e[1]))  # a finish before a start at the same instant
    best = cur = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def finals(rows) -> dict[int, dict]:
    """The last attempt of each file."""
    last: dict[int, dict] = {}
    for r in rows:
        if r["file_index"] not in last or r["retry"] > last[r["file_index"]]["retry"]:
            last[r["file_index"]] = r
    return last


