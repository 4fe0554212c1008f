"""A shaped link of an emulated host xcbench made, tightened for an experiment and restored
(`xcbench confirm`'s network experiment: the link at half its rate, the rate must follow).

Only links `xcbench hosts up` made and records: a tbf (no netem) on both ends of the host's
veth, in a complete record of this user on this host. The new rate goes into the record
(``reshaped_bits_per_s``) before tc changes anything, so a confirm that dies leaves a record that says
what to undo: ``restore_left`` puts every such link back to the rate the record was made with
(the next confirm does it first), and `xcbench hosts down` removes it all anyway.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.hosts.emulate import PEER, Record, recorded_hosts, records, tbf_args
from xcbench.hosts.transport import NETNS_DIR
from xcbench.system import proc


def _tbf(h: dict[str, Any]) -> bool:
    """A link of ours shaped by a tbf alone (``rtt`` recorded and empty: no netem on it)."""
    rate = h.get("rate_bits_per_s")
    return (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0
            and "rtt" in h and not h["rtt"])


def _up(h: dict[str, Any]) -> bool:
    return (NETNS_DIR / str(h.get("netns"))).exists() and Path("/sys/class/net", str(h.get("veth"))).exists()


def _ours(path: Path) -> Record | None:
    try:
        rec = Record.load(path)
    except XcbError:
        return None
    return rec if rec.problem() is None and rec.data.get("complete") else None


def shaped(state: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """{host: {"rate_bits_per_s", "record"}} of the emulated hosts up whose link xcbench shaped (tbf):
    the links an experiment may tighten."""
    out: dict[str, dict[str, Any]] = {}
    for path in records(state):
        rec = _ours(path)
        for name, h in ((rec.data.get("hosts") or {}).items() if rec else ()):
            if _tbf(h) and _up(h):
                out[name] = {"rate_bits_per_s": float(h["rate_bits_per_s"]), "record": path}
    return out


def _tc(h: dict[str, Any], rate_bits_per_s: float) -> None:
    # both ends, as `hosts up` shaped them: towards the host, and out of it
    for ns, dev in ((None, h["veth"]), (h["netns"], PEER)):
        proc.run(["tc", *(["-n", ns] if ns else []), "qdisc", "change", "dev", dev, "root",
                  *tbf_args(rate_bits_per_s)], timeout=60)


def _host(rec: Record, host: str) -> dict[str, Any]:
    h = (rec.data.get("hosts") or {}).get(host)
    if not isinstance(h, dict) or not _tbf(h):
        raise XcbError(f"{rec.path}: host {host!r} has no link xcbench shaped with a tbf")
    return h


@contextlib.contextmanager
def tightened(record: Path, host: str, rate_bits_per_s: float) -> Iterator[None]:
    """The host's link at ``rate_bits_per_s`` for the block, then back at its recorded rate."""
    rec = _ours(record)
    if rec is None:
        raise XcbError(f"{record}: not a complete record of emulated hosts of this user here")
    h = _host(rec, host)
    if not 0 < rate_bits_per_s:
        raise XcbError(f"host {host}: a link rate must be positive, not {rate_bits_per_s!r}")
    h["reshaped_bits_per_s"] = float(rate_bits_per_s)
    rec.save()  # recorded before tc changes it
    try:
        _tc(h, rate_bits_per_s)
        yield
    finally:
        restore(record, host)


def restore(record: Path, host: str) -> bool:
    """The host's link back at its recorded rate, and the record says so; False: nothing to do."""
    rec = _ours(record)
    if rec is None:
        return False
    h = _host(rec, host)
    if "reshaped_bits_per_s" not in h:
        return False
    if _up(h):
        _tc(h, float(h["rate_bits_per_s"]))
    del h["reshaped_bits_per_s"]
    rec.save()
    return True


def restore_left(state: str | Path | None = None) -> list[str]:
    """Links an experiment tightened and did not put back (it died): restored; their hosts."""
    done = []
    for path in records(state):
        rec = _ours(path)
        for name, h in ((rec.data.get("hosts") or {}).items() if rec else ()):
            if isinstance(h, dict) and "reshaped_bits_per_s" in h and _tbf(h) and restore(path, name):
                done.append(name)
    return done


def current_rates(state: str | Path | None = None) -> dict[str, float]:
    """{host: bits/s} of the links an experiment holds tightened now (telemetry's limit)."""
    out: dict[str, float] = {}
    for name, h in recorded_hosts(state):
        r = h.get("reshaped_bits_per_s")
        if isinstance(r, (int, float)) and math.isfinite(r) and r > 0:
            out[name] = float(r)
    return out
