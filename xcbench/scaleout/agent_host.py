"""One client host's campaign agent as the coordinator (xcbench.scaleout.distributed) sees it: its
process, its stream reader's state, what it sent, and how it failed.

A host that goes away mid-level (a node that died, a link that broke) is *lost*: its stream
ended after it had started without a word of its own, or it said nothing for :data:`STALL`
seconds once its buckets were flowing (an agent flushes one every second; a dead node's srun
may wait for the controller to notice for much longer). Its records so far are kept, and its
share of the level fails alone.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

from xcbench.campaign.spec import CampaignSpec
from xcbench.system import proc

STALL = 15.0  # s without a line from an agent whose buckets were flowing: the host is gone


class Agent:
    """One host's agent: its process, its stream reader, what it sent."""

    def __init__(self, host: Any, transport: Any, spec: CampaignSpec, offset: float, raw: Path | None):
        self.host, self.transport, self.spec, self.offset = host, transport, spec, offset
        self.name = host.name
        self.raw = raw
        self.timeline: list[dict] = []
        self.campaign: dict | None = None
        self.hello: dict | None = None
        self.error: str | None = None
        self.stalled: str | None = None  # why it was let go (silent)
        self.ended = False
        self.heard = time.monotonic()  # when its last line came
        self.done = threading.Event()  # the stream ended
        self.p: proc.Proc | None = None
        self.reader: threading.Thread | None = None

    @property
    def last_wall(self) -> float | None:
        return self.timeline[-1]["wall"] if self.timeline else None

    def say(self, word: str) -> None:
        """A control line; an agent that already left is not an error here."""
        stdin = getattr(self.p.popen, "stdin", None) if self.p else None
        if stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            stdin.write(word.encode())
            stdin.flush()

    def silent(self, stall: float) -> bool:
        """Its buckets were flowing and nothing came for ``stall`` s (marked ``stalled`` once)."""
        if self.stalled is None and self.timeline and not self.done.is_set() and \
                self.p is not None and time.monotonic() - self.heard > stall:
            self.stalled = f"no word from it for {stall:g} s"
            return True
        return False

    def failure(self) -> str | None:
        if self.error:
            return self.error
        if self.done.is_set() and self.campaign is None:
            rc = self.p.popen.poll() if self.p else None
            tail = self.p.tail(3) if self.p and self.p.log else ""
            why = self.stalled or f"the agent ended without its records (exit {rc})"
            return f"{why}{': ' + tail if tail else ''}"
        return None

    @property
    def lost(self) -> bool:
        """The host went away mid-level (its stream ended after it had started, without a word
        of its own): a node that died, a link that broke. Its records so far are kept."""
        return self.error is None and self.hello is not None and self.done.is_set() \
            and self.campaign is None
