"""The figures the progress view says once each: the iperf3 baseline's, a cell's fio probe's,
and a level's range of the busiest storage host (min-max of each of its live figures)."""

from __future__ import annotations

from typing import Any

from xcbench.figures.numbers import as_float
from xcbench.figures.units import fmt_gbps


def baseline_line(rows: list[dict]) -> str:
    """'iperf3: write 24.1 Gb/s (2 streams), read 20.2 Gb/s (1 stream)': the best of the sweep
    per direction (iperf3 counts bits/s)."""
    best: dict[str, tuple[float, Any]] = {}
    for r in rows:
        bits_per_s, d = as_float(r.get("bits_per_second")), str(r.get("direction") or "write")
        if bits_per_s == bits_per_s and bits_per_s > best.get(d, (-1.0, None))[0]:
            best[d] = (bits_per_s, r.get("streams"))
    if not best:
        errors = {str(r.get("error")) for r in rows if r.get("error")}
        return "iperf3: no figure" + (f" ({'; '.join(sorted(errors))[:120]})" if errors else "")
    parts = []
    for d, (b, s) in sorted(best.items(), key=lambda kv: kv[0] != "write"):
        n = as_float(s)
        parts.append(f"{d} {fmt_gbps(b / 8)}" + (f" ({n:.0f} stream{'s' * (n != 1)})" if n == n else ""))
    return "iperf3: " + ", ".join(parts)


def _iops(v: float) -> str:
    return f"{v / 1e3:.0f}k" if v >= 1e4 else f"{v:.0f}"


def probe_line(rows: list[dict]) -> str:
    """'fio: write 4.58 Gb/s, read 8.70 Gb/s, randwrite 411k IOPS' (one figure per job; a
    multi-host probe's jobs summed per job)."""
    bw: dict[str, float] = {}
    iops: dict[str, float] = {}
    for r in rows:
        job = str(r.get("job") or r.get("rw") or "?")
        b, i = as_float(r.get("bw")), as_float(r.get("iops"))
        if b == b:
            bw[job] = bw.get(job, 0.0) + b
        if i == i:
            iops[job] = iops.get(job, 0.0) + i
    parts = [f"{j} {_iops(iops[j])} IOPS" if j.startswith("rand") and j in iops
             else f"{j} {fmt_gbps(bw[j])}" for j in dict.fromkeys([*bw, *iops]) if j in bw or j in iops]
    return "fio: " + (", ".join(parts) if parts else "no figure")


def _span(lo: float, hi: float, fmt) -> str:
    a, b = fmt(lo), fmt(hi)
    return a if a == b else f"{a}–{b}"


def storage_range(rows: list[dict]) -> str | None:
    """'storage host vm over the level: NIC eth0 12–40 % of link, disk vda 30–36 % busy, CPU
    80–99 %' from the level's live rows (telemetry.prometheus LIVE_METRICS); None without."""
    if not rows:
        return None
    host = (rows[-1].get("labels") or {}).get("host", "?")
    vals: dict[str, list[float]] = {}
    dev: dict[str, str] = {}
    for r in rows:
        v = as_float(r.get("value"))
        if v == v:
            m = str(r.get("metric"))
            vals.setdefault(m, []).append(v)
            dev[m] = str((r.get("labels") or {}).get("device") or dev.get(m) or "")

    def pct(x: float) -> str:
        return f"{x * 100:.0f}"

    def rng(m: str, fmt) -> str:
        return _span(min(vals[m]), max(vals[m]), fmt)

    parts = []
    if "live.storage_nic_use" in vals:
        parts.append(f"NIC {dev['live.storage_nic_use']} {rng('live.storage_nic_use', pct)} % of link")
    elif "live.storage_nic_bytes_per_s" in vals:
        parts.append(f"NIC {dev['live.storage_nic_bytes_per_s']} "
                     f"{_span(min(vals['live.storage_nic_bytes_per_s']), max(vals['live.storage_nic_bytes_per_s']), lambda x: fmt_gbps(x).removesuffix(' Gb/s'))} "
                     f"Gb/s (link speed unknown)")
    if "live.storage_disk_busy" in vals:
        parts.append(f"disk {dev['live.storage_disk_busy']} {rng('live.storage_disk_busy', pct)} % busy")
    if "live.storage_cpu_use" in vals:
        parts.append(f"CPU {rng('live.storage_cpu_use', pct)} %")
    return f"storage host {host} over the level: " + ", ".join(parts) if parts else None
