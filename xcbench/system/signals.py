"""Stopping on SIGINT, SIGTERM and SIGHUP: one mechanism for every command.

    with signals.StopFlag() as stop:        # cli.main holds one for the whole command
        ...setup...                          # a signal here raises KeyboardInterrupt: unwind
        with stop.polite():                  # a loop that checks stop.event (campaign, matrix)
            ...                              # a signal here sets stop.event: finish the record
        stop.check()                         # raises Interrupted once the event is set

The first signal asks politely inside a ``polite()`` section (the current record finishes, then
everything is stopped and flushed) and raises KeyboardInterrupt outside one, so the command's
``with``/``finally`` blocks stop the processes it started and flush what it measured. A second
signal inside a polite section raises KeyboardInterrupt at once. After a KeyboardInterrupt has
been raised, further signals are only noted: the cleanup that is running is never cut short
(`kill -9` remains, and the next command stops what it left: xcbench.system.proc's records).

A StopFlag entered while another is active (``run_matrix`` inside ``xcbench demo``) shares it.
Handlers are installed from the main thread only; elsewhere the flag is a plain event.

:func:`deferred` holds the KeyboardInterrupt back while a child is started and registered
(xcbench.system.proc): raised inside Popen, or between Popen and the code that would stop the child, it
would leave a child that nobody stops. The signal is noted at once and raised when the section
ends. (Blocking it with pthread_sigmask instead would be inherited by the child through exec:
fio and xrootd would then ignore the SIGTERM that stops them.)
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_CODE = 130  # what a command returns after it stopped on a signal


class Interrupted(Exception):
    """The user (or a supervisor) asked the command to stop: SIGINT, SIGTERM or SIGHUP."""


_active: StopFlag | None = None


class SignalSafeEvent(threading.Event):
    """A threading.Event that a signal handler may set.

    The handler runs in the main thread between two bytecodes, wherever that thread is. When it
    is inside ``Event.wait`` (the polite loops wait on the stop event: `gateway up --wait` every
    second) it may hold the event's lock (``wait`` holds it before and after the timed wait);
    threading.Event's lock is not re-entrant, so ``set()`` in the handler then waits forever for
    the thread it interrupted, and every later signal does the same: `gateway up` hung after a
    SIGHUP (about one suite in six). Here the lock is re-entrant: the handler takes it again,
    sets the flag and wakes the wait it interrupted."""

    def __init__(self) -> None:
        super().__init__()
        self._safe = threading.Condition(threading.RLock())
        self._set = False

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        with self._safe:
            self._set = True
            self._safe.notify_all()

    def clear(self) -> None:
        with self._safe:
            self._set = False

    def wait(self, timeout: float | None = None) -> bool:
        with self._safe:
            if not self._set:
                self._safe.wait(timeout)
            return self._set


class StopFlag:
    """Signal handling for a command: a polite stop first, KeyboardInterrupt when needed."""

    def __init__(self) -> None:
        self.event: threading.Event = SignalSafeEvent()  # set by the handler: see its doc
        self.signum: int | None = None  # the first signal received
        self._old: dict[int, Any] = {}
        self._polite = 0
        self._raised = False
        self._outer: StopFlag | None = None
        self._shared: StopFlag | None = None
        self._deferred = 0  # depth of deferred() sections (main thread)
        self._pending = False  # a KeyboardInterrupt held back by one

    # -- entering and leaving ------------------------------------------------------------------
    def __enter__(self) -> StopFlag:
        global _active
        if _active is not None:  # nested: the outer flag already handles the signals
            self._shared = _active
            return _active
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        _active = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _active
        if self._shared is not None:
            self._shared = None
            return
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()
        _active = None

    # -- the handler ---------------------------------------------------------------------------
    def _handle(self, signum: int, frame: Any) -> None:
        first = not self.event.is_set()
        if first:
            self.signum = signum
        self.event.set()
        if self._raised:
            return  # cleanup is running: let it finish
        if self._polite and first:
            return  # the polite section sees the event and stops at the next record
        if self._deferred:
            self._pending = True  # deferred(): raised when the section ends
            return
        self._raised = True
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def polite(self) -> Iterator[threading.Event]:
        """A section whose code checks ``event``: the first signal only sets it."""
        self._polite += 1
        try:
            if self.event.is_set() and not self._raised:
                # a signal came before the section: stop before starting it
                self._raised = True
                raise KeyboardInterrupt
            yield self.event
        finally:
            self._polite -= 1

    # -- for the code ------------------------------------------------------------------------------
    @property
    def stopping(self) -> bool:
        return self.event.is_set()

    def check(self) -> None:
        if self.event.is_set():
            raise Interrupted(self.name)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else "a stop request"


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A section no signal interrupts: a KeyboardInterrupt the running command's StopFlag would
    raise inside it is raised as the section ends (whatever the section raised itself). Only the
    main thread is interrupted by signals, so elsewhere (and without a StopFlag) it does nothing.
    Keep it short: starting a process and writing down who it is."""
    flag = _active
    if flag is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    flag._deferred += 1
    try:
        yield
    finally:
        flag._deferred -= 1
        if not flag._deferred and flag._pending:
            flag._pending = False
            if not flag._raised:
                flag._raised = True
                raise KeyboardInterrupt


def active() -> StopFlag | None:
    """The StopFlag of the running command, if any."""
    return _active


def current() -> StopFlag:
    """The running command's StopFlag; a caller without one (a library user, a test) gets a
    flag of its own that no signal sets."""
    return _active or StopFlag()


def name(signum: int | None) -> str:
    return signal.Signals(signum).name if signum else "a signal"
