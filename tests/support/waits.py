"""Waiting on a process of this machine to end, with a deadline rather than a fixed sleep."""

from __future__ import annotations

import time

from xcbench.system import proc


def gone(pid: int, timeout: float, step: float = 0.05) -> bool:
    """Whether ``pid`` ended within ``timeout`` s (polled every ``step`` s)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not proc.pid_alive(pid):
            return True
        time.sleep(step)
    return False
