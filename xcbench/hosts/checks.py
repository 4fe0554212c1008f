"""Checks a run makes on its hosts before it starts: the same xcbench everywhere, and how far
each host's clock is from ours (to correct the merged timeline; cf. warp's clock-skew check)."""

from __future__ import annotations

import os
import select
import time
from concurrent.futures import ThreadPoolExecutor

from xcbench import __version__
from xcbench.errors import XcbError
from xcbench.hosts.inventory import Host, Inventory
from xcbench.hosts.transport import transport_for
from xcbench.system import proc

ROUNDS = 8
# answers each line on stdin with the host's wall clock (GNU date: ns resolution)
CLOCK = ["sh", "-c", "while read l; do date +%s.%N; done"]


def _each(inv: Inventory, fn):
    with ThreadPoolExecutor(max_workers=min(8, len(inv.hosts))) as pool:
        return dict(zip([h.name for h in inv.hosts], pool.map(fn, inv.hosts), strict=True))


def host_version(host: Host, timeout: float = 120) -> str:
    """The xcbench version on ``host`` (XcbError naming the host when there is none)."""
    t = transport_for(host)
    argv = [*t.xcbench_argv(), "--version"]
    try:
        out = t.run(argv, check=False, timeout=timeout)
    except (XcbError, OSError) as e:  # OSError: a local host whose command does not exist
        why = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise XcbError(f"host {host.name}: cannot run `{' '.join(argv)}`: {why}; install xcbench "
                       f"{__version__}, or set the host's `xcbench:` command") from None
    words = (out.stdout or "").split()
    if out.returncode != 0 or len(words) < 2 or words[0] != "xcbench":
        why = ((out.stderr or out.stdout).strip().splitlines() or [f"exit {out.returncode}"])[-1]
        raise XcbError(f"host {host.name}: no xcbench there (`{' '.join(argv)}`: {why}); "
                       f"install xcbench {__version__}, or set the host's `xcbench:` command")
    return words[1]


def check_versions(inv: Inventory) -> dict[str, str]:
    """Every host runs this xcbench version; else XcbError naming the first host that differs
    (or lacks it). Returns {host: version}."""
    found = _each(inv, host_version)
    for name, v in found.items():
        if v != __version__:
            raise XcbError(f"host {name}: xcbench {v} there, {__version__} here: install the same "
                           f"version on every host")
    return found


def _readline(fd: int, buf: bytearray, deadline: float) -> bytes:
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 4096)
        if not chunk:
            raise EOFError
        buf += chunk
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return line


def host_clock(host: Host, rounds: int = ROUNDS, timeout: float = 60) -> dict[str, float]:
    """{"offset_s": remote − local, "rtt_s"} from the round trip with the smallest RTT over one
    kept-open session (an ssh connection's setup is not in it)."""
    p = transport_for(host).spawn(CLOCK, name="clock", pipe=True)
    assert p.popen.stdin is not None and p.popen.stdout is not None
    fd, buf = p.popen.stdout.fileno(), bytearray()
    best: tuple[float, float] | None = None
    try:
        deadline = time.monotonic() + timeout
        for _ in range(rounds):
            w0, t0 = time.time(), time.perf_counter()
            p.popen.stdin.write(b"t\n")
            p.popen.stdin.flush()
            line = _readline(fd, buf, deadline)
            rtt, w1 = time.perf_counter() - t0, time.time()
            remote = float(line)
            offset = remote - (w0 + w1) / 2
            if best is None or rtt < best[1]:
                best = (offset, rtt)
    except (TimeoutError, EOFError, ValueError, OSError) as e:
        raise XcbError(f"host {host.name}: clock check failed ({type(e).__name__}: "
                       f"{p.tail(2) or 'no answer'})") from None
    finally:
        try:
            p.popen.stdin.close()
        except OSError:
            pass
        proc.stop(p, timeout=5)
        p.popen.stdout.close()
    assert best is not None
    return {"offset_s": best[0], "rtt_s": best[1]}


def clock_offsets(inv: Inventory, rounds: int = ROUNDS) -> dict[str, dict[str, float]]:
    """{host: {"offset_s", "rtt_s"}}: each host's clock minus ours, measured at the midpoint of
    the round trip with the smallest RTT (the error is at most half that RTT)."""
    return _each(inv, lambda h: host_clock(h, rounds))
