"""Headless Chromium as the browser tests drive it (Debian's chromium, offline), and its console."""

from __future__ import annotations

import functools
import html
import json
import re
import time
import warnings
from pathlib import Path

import pytest

from xcbench.system import proc

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_LIB = Path("/usr/lib/chromium")  # the binary and its paks (Debian)


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000"]


CONSOLE = re.compile(r":CONSOLE(?:\(\d+\)|:\d+)?\]\s*(.*)")


def chromium(profile: Path, *args: str) -> proc.Completed:
    _warm()
    t0 = time.monotonic()
    out = proc.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args], timeout=180,
                   check=False)
    if (took := time.monotonic() - t0) > SLOW_S:  # said in the run's warnings summary
        warnings.warn(f"headless chromium took {took:.1f} s ({' '.join(args[-1:])})", stacklevel=2)
    return out


SLOW_S = 10.0  # a launch takes 0.5-2 s here; two CIs saw the suite's first one take ~20 s


@functools.cache
def _warm() -> None:
    """Read Chromium's own files (~350 MB) front to back once, before the session's first launch.
    The suite's I/O pushes them out of the page cache (here it holds ~2 GB: chromium's resident
    pages fell from 273 to 181 MB over 20 minutes of the suite with 19 GB free), and a launch then
    faults them in page by page: 7.4 s against 2.2 s warm while the suite ran. One sequential read
    takes 0.3-0.8 s."""
    for f in sorted(CHROMIUM_LIB.glob("*")):
        if f.is_file():
            with f.open("rb") as fh:
                while fh.read(1 << 22):
                    pass


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
