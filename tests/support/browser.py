"""Headless Chromium as the browser tests drive it (Debian's chromium, offline), and its console."""

from __future__ import annotations

import re
from pathlib import Path

from xcbench.system import proc

CHROMIUM = Path("/usr/bin/chromium")


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000"]


CONSOLE = re.compile(r":CONSOLE(?:\(\d+\)|:\d+)?\]\s*(.*)")


def chromium(profile: Path, *args: str) -> proc.Completed:
    return proc.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args], timeout=180,
                    check=False)


def console_messages(stderr: str) -> list[str]:
    return [m.group(1) for m in map(CONSOLE.search, stderr.splitlines()) if m]


