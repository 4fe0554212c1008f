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
