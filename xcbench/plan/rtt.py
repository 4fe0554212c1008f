"""RTT on paper: what a round-trip time does to a TCP stream, where it cannot be emulated.

This kernel has no netem, so a run cannot add delay; the planner takes
``--rtt`` instead (the US-CMS study swept 5-120 ms) and the TCP buffer maxima, and says:

    per-stream ceiling = window / RTT            window = min(tcp_rmem max, tcp_wmem max)
    streams needed     = ceil(target / per-stream ceiling)
    in flight          = target x RTT            (the bandwidth-delay product, all streams)
    origins needed     = ceil(target / per-origin rate)

The window is an upper bound: the kernel keeps part of each buffer for its own overhead
(tcp_adv_win_scale, or the measured scaling ratio on newer kernels), so a stream gets somewhat
less. The buffer maxima come from ``--tcp-window-max``, else the TCP audit of a ``--calibrate``
run (its manifest's tcp_audit: net.ipv4.tcp_rmem / tcp_wmem as the run's host had them), else
ESnet fasterdata's recommendation for the gateway spec's NIC speed (xcbench.network.tcpaudit.TIERS).
The per-origin rate is the calibrated per-gateway rate when there is one, else the US-CMS
figure (100 Gb/s over 4 origins = 25 Gb/s each).
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.errors import XcbError
from xcbench.figures.units import fmt_rate
from xcbench.network.tcpaudit import TIERS
from xcbench.plan.storage import ceil_count

RTT_MAX_MS = 10_000.0
USCMS_RTT: dict[str, Any] = {
    "range": "5-120 ms",
    "lines": ["one origin could not reach 100 Gb/s",
              "4 origins / 64 cores reached 100 Gb/s at long RTT (~25 Gb/s per origin)",
              "a single server capped near 260 Gb/s"],
    "per_origin": 100e9 / 8 / 4, "server_cap": 260e9 / 8,
}


def parse_rtts(values: list[str] | None) -> list[float]:
    """``--rtt 5 --rtt 40,120`` -> [5.0, 40.0, 120.0] (ms); XcbError names the flag."""
    out: list[float] = []
    for v in values or ():
        for part in str(v).split(","):
            try:
                ms = float(part.strip().removesuffix("ms"))
            except ValueError:
                ms = math.nan
            if not (math.isfinite(ms) and 0 < ms <= RTT_MAX_MS):
                raise XcbError(f"--rtt {v!r}: a round-trip time in milliseconds, > 0 and <= {RTT_MAX_MS:g} "
                               "(e.g. --rtt 5,40,120)")
            out.append(ms)
    return sorted(set(out))


def _triple_max(v: Any) -> int | None:
    try:
        return int(str(v).split()[-1])
    except (ValueError, IndexError):
        return None


def buffers(window_max: int | None, audits: list[tuple[str, dict]], nic_speed: float) -> dict[str, Any]:
    """The TCP window maxima and where they come from (see the module docstring).
    ``audits``: (run name, manifest tcp_audit) of the --calibrate runs; ``nic_speed`` B/s."""
    if window_max is not None:
        return {"rmem": window_max, "wmem": window_max, "from": "--tcp-window-max"}
    for name, audit in audits:
        vals = {c.get("key"): c.get("value") for c in (audit or {}).get("checks") or ()}
        r, w = _triple_max(vals.get("net.ipv4.tcp_rmem")), _triple_max(vals.get("net.ipv4.tcp_wmem"))
        if r and w:
            return {"rmem": r, "wmem": w, "from": f"the TCP audit of run {name} (net.ipv4.tcp_rmem "
                                                   f"{vals['net.ipv4.tcp_rmem']}, tcp_wmem {vals['net.ipv4.tcp_wmem']})"}
    gbit = nic_speed * 8 / 1e9
    tier = min((t for t in TIERS if t >= gbit), default=max(TIERS))
    _, rmem, wmem = TIERS[tier]
    return {"rmem": _triple_max(rmem), "wmem": _triple_max(wmem),
            "from": f"ESnet fasterdata's {tier} Gb/s tier for the gateway spec's {gbit:g} Gb/s NIC "
                    "(no --tcp-window-max, no TCP audit in a --calibrate run)"}


def rtt_section(rtts_ms: list[float], rate: float, buf: dict[str, Any],
                per_origin: float | None = None, per_origin_from: str = "") -> dict[str, Any]:
    """Rows per RTT: per-stream ceiling, streams and origins for ``rate`` (B/s)."""
    window = min(buf["rmem"], buf["wmem"])
    origin_rate: float = float(per_origin) if per_origin is not None and per_origin > 0 else 0.0
    if not origin_rate:
        origin_rate, per_origin_from = float(USCMS_RTT["per_origin"]), "US-CMS: 100 Gb/s over 4 origins"
    rows = []
    for ms in rtts_ms:
        per_stream = window / (ms / 1000.0)
        streams = ceil_count(rate / per_stream)
        origins = ceil_count(rate / origin_rate)
        rows.append({"rtt_ms": ms, "per_stream": per_stream, "per_stream_text": fmt_rate(per_stream),
                     "streams": streams, "bdp": rate * ms / 1000.0,
                     "bdp_text": f"{rate * ms / 1000.0 / 2**20:,.0f} MiB",
                     "origins": origins, "streams_per_origin": math.ceil(streams / origins)})
    return {"window": window, "window_text": f"{window / 2**20:g} MiB", "window_from": buf["from"],
            "rate": rate, "rate_text": fmt_rate(rate), "per_origin": origin_rate,
            "per_origin_text": fmt_rate(origin_rate), "per_origin_from": per_origin_from,
            "rows": rows, "reference": USCMS_RTT}


def rtt_lines(sec: dict[str, Any] | None, table) -> list[str]:
    """Text form; ``table(rows, cols)`` is the plan report's table helper."""
    if not sec:
        return []
    L = ["", f"RTT ON PAPER (no netem here): per-stream ceiling = window / RTT, window {sec['window_text']} "
             f"({sec['window_from']}); an upper bound (the kernel keeps part of each buffer)",
         f"  target {sec['rate_text']}; origins at {sec['per_origin_text']} each ({sec['per_origin_from']})"]
    L += table(sec["rows"], [("rtt_ms", "RTT (ms)"), ("per_stream_text", "per stream"),
                             ("streams", "streams for target"), ("bdp_text", "in flight (BDP)"),
                             ("origins", "origins"), ("streams_per_origin", "streams/origin")])
    ref = sec["reference"]
    L.append(f"  US-CMS reference (RTT {ref['range']}): " + "; ".join(ref["lines"]))
    return L
