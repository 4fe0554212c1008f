"""Headless Chromium as the browser tests drive it (Debian's chromium, offline), and its console."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

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




def need_chromium() -> None:
    """Skip, saying why, where Debian's chromium is not installed."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium not found: install the Debian package chromium (make setup)")


def page_check(page: Path, profile: Path, *args: str) -> dict:
    """What ``page`` wrote as JSON into its <pre id="xcb-check"> once loaded in headless chromium
    (``args``: more chromium flags, a window size)."""
    out = chromium(profile, *args, "--dump-dom", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    m = re.search(r'<pre id="xcb-check">(.*?)</pre>', out.stdout, re.S)
    assert m, out.stdout[-2000:]
    return json.loads(html.unescape(m.group(1)))


def clean_screenshot(page: Path, profile: Path, window: str) -> Path:
    """A screenshot of ``page`` beside it (.png) in a ``window`` ("1280,3200") taken with the
    console logged: chromium exits 0, the page logged nothing, the image is a PNG of some size."""
    shot = page.with_suffix(".png")
    out = chromium(profile, "--enable-logging=stderr", "--v=0", f"--screenshot={shot}",
                   f"--window-size={window}", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    assert console_messages(out.stderr) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    return shot
