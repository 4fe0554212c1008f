"""The stdout of an agent (``xcbench campaign-agent``, ``xcbench gateway-agent``): JSON lines to
the coordinator that started it over a pipe or ssh.

    fh = claim_stdout()                  # stdout kept for the stream; stray prints go to stderr
    out = Stream(fh, on_broken=stop.set)
    out.send({"hello": {...}})
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any


def claim_stdout() -> IO[str]:
    """This process's stdout as the stream's file; fd 1 then points at stderr, so anything a
    library prints cannot corrupt the stream."""
    stream_fd = os.dup(sys.stdout.fileno())
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return os.fdopen(stream_fd, "w", encoding="utf-8")


class Stream:
    """JSON lines to the coordinator, one writer at a time. A reader gone (EPIPE) sets
    ``broken`` and calls ``on_broken`` once: nobody is left to record what the agent does, so
    the caller stops it."""

    def __init__(self, fh: IO[str], on_broken: Any = None):
        self.fh, self.on_broken, self._lock = fh, on_broken, threading.Lock()
        self.broken = threading.Event()

    def send(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, default=str) + "\n"
        with self._lock:
            if self.broken.is_set():
                return
            try:
                self.fh.write(line)
                self.fh.flush()
            except (OSError, ValueError):
                self.broken.set()
                if self.on_broken is not None:
                    self.on_broken()


# --- the coordinator's side: an agent's stream read with bounds ----------------------------
MAX_LINE = 8 << 20  # one message; an agent's flush of one second's rows is far below this
_CHUNK = 1 << 16


def read_lines(fh: IO, limit: int = MAX_LINE) -> Iterator[str | None]:
    """The lines of an agent's stream (bytes or text), each at most ``limit`` characters: a
    longer line is read through in chunks and dropped (``None`` in its place), so a peer that
    never sends a newline costs ``limit`` of memory, not all it sends."""
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n" if isinstance(line, bytes) else "\n"):
            yield line.decode(errors="replace") if isinstance(line, bytes) else line
            continue
        while line and not line.endswith(b"\n" if isinstance(line, bytes) else "\n"):
            line = fh.readline(_CHUNK)
        yield None


def parse_message(text: str) -> dict[str, Any] | None:
    """A JSON object of one line, or None (not JSON, not an object, nested too deep)."""
    try:
        msg = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return msg if isinstance(msg, dict) else None
