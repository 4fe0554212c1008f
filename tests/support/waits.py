"""Waiting with a deadline rather than a fixed sleep: for a condition, or for a process of this
machine to end."""

from __future__ import annotations

import time

from xcbench.system import proc


def until(cond, timeout: float, step: float = 0.5) -> bool:
    """Whether ``cond()`` became true within ``timeout`` s (polled every ``step`` s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


def gone(pid: int, timeout: float, step: float = 0.05) -> bool:
    """Whether ``pid`` ended within ``timeout`` s (polled every ``step`` s)."""
    return until(lambda: not proc.pid_alive(pid), timeout, step)
