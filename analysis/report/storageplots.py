"""Per storage host panels under a cell's rate timeline: each OSD host's NICs against their link
speed, its OSD disks' busy fraction, its CPU against its cores (the prometheus device's rows)."""

from __future__ import annotations

import math

import numpy as np

from xcbench.analysis.report.render import fig_to_data_uri, new_figure

PANELS = (("node.nic_rx_bps", "node.nic_tx_bps"), ("node.disk_busy",), ("node.cpu_busy_cores",))


def _osd_rows(samples, cid: str, metric: str) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    out = {}
    for host, rows in samples.by_label(cid, metric, "host").items():
        keep = rows["labels"].map(lambda lab: "osd" in str(lab.get("role", "")).split(","))
        for dev, g in rows[keep].groupby(rows[keep]["labels"].map(lambda lab: lab.get("device", "")), sort=True):
            out[(host, str(dev))] = (g["wall"].to_numpy(dtype=float), g["value"].to_numpy(dtype=float))
    return out


def storage_host_panels(samples, cid: str, t0: float, title: str) -> str | None:
    """NIC (use of link speed, or Mb/s when the speed is unknown), disk busy and CPU per OSD
    host; None when the cell has no prometheus rows of OSD hosts."""
    rx, tx = _osd_rows(samples, cid, "node.nic_rx_bps"), _osd_rows(samples, cid, "node.nic_tx_bps")
    speed = _osd_rows(samples, cid, "node.nic_speed_bps")
    busy = _osd_rows(samples, cid, "node.disk_busy")
    osd_disks = {k for k, rows in samples.by_label(cid, "node.disk_busy", "osds").items() if k}
    if osd_disks:  # the OSDs' disks are known: the host's other disks are not drawn
        named = {(str(lab.get("host")), str(lab.get("device")))
                 for k, rows in samples.by_label(cid, "node.disk_busy", "osds").items() if k
                 for lab in rows["labels"]}
        busy = {k: v for k, v in busy.items() if k in named}
    cpu, cores = _osd_rows(samples, cid, "node.cpu_busy_cores"), _osd_rows(samples, cid, "node.cpu_cores")
    if not (rx or busy or cpu):
        return None
    fig, axes = new_figure(9.5, 4.2, nrows=3, sharex=True, squeeze=False)
    a_nic, a_disk, a_cpu = axes[:, 0]
    a_nic.set_title(title, fontsize=10)
    known = all(k in speed for k in rx)
    for key in sorted(set(rx) | set(tx)):
        sp = float(np.nanmean(speed[key][1])) if key in speed else math.nan
        for series, way in ((rx.get(key), "rx"), (tx.get(key), "tx")):
            if series is None or not np.isfinite(series[1]).any() or np.nanmax(series[1]) <= 0:
                continue  # an idle NIC: not drawn
            y = series[1] / sp * 100 if known and sp > 0 else series[1] * 8 / 1e6
            a_nic.plot(series[0] - t0, y, lw=1, label=f"{key[0]} {key[1]} {way}")
    if known and rx:
        a_nic.axhline(85, color="black", ls=":", lw=1, label="85 % of link speed")
    a_nic.set_ylabel("NIC (% of link)" if known and rx else "NIC (Mb/s)")
    for key, (w, v) in sorted(busy.items()):
        a_disk.plot(w - t0, v * 100, lw=1, label=f"{key[0]} {key[1]}")
    if busy:
        a_disk.axhline(85, color="black", ls=":", lw=1)
    a_disk.set_ylabel("disk busy (%)")
    for key, (w, v) in sorted(cpu.items()):
        n = float(np.nanmean(cores[key][1])) if key in cores else math.nan
        a_cpu.plot(w - t0, v, lw=1, label=f"{key[0]}" + (f" ({n:g} cores)" if math.isfinite(n) else ""))
        if math.isfinite(n):
            a_cpu.axhline(n, ls=":", lw=1, color="black")
    a_cpu.set_ylabel("CPU (cores)")
    for a in (a_nic, a_disk, a_cpu):
        a.set_ylim(bottom=0)
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    a_cpu.set_xlabel("time since the cell's first campaign (s)")
    return fig_to_data_uri(fig, dpi=90)


def fanout_text(evidences: list[tuple[float, dict]]) -> str:
    """'EC fan-out on the OSD hosts' NICs: 2.18 bytes per client byte at 4 (RAL's arithmetic
    2.25); ...' from the verdicts' evidence per level ('' when not measured)."""
    parts = []
    for conc, ev in evidences:
        f, e = ev.get("storage_fanout"), ev.get("storage_fanout_expected")
        if isinstance(f, (int, float)) and math.isfinite(f):
            parts.append(f"{f:.2f} at {conc:g}" + (f" (RAL's arithmetic {e:.2f})"
                                                   if isinstance(e, (int, float)) and math.isfinite(e) else ""))
    return ("bytes on the OSD hosts' NICs per client byte: " + "; ".join(parts)) if parts else ""
