"""Per storage host panels under a cell's rate timeline: each OSD host's NICs against their link
speed, its OSD disks' busy fraction, its CPU against its cores (the prometheus device's rows)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from xcbench.analysis.report.render import fig_to_data_uri, new_figure


def _osd_rows(samples, cid: str, metric: str) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    out = {}
    for host, rows in samples.by_label(cid, metric, "host").items():
        keep = rows["labels"].map(lambda lab: "osd" in str(lab.get("role", "")).split(","))
        for dev, g in rows[keep].groupby(rows[keep]["labels"].map(lambda lab: lab.get("device", "")), sort=True):
            out[(host, str(dev))] = (g["wall"].to_numpy(dtype=float), g["value"].to_numpy(dtype=float))
    return out


def _legend(a) -> None:
    if a.get_legend_handles_labels()[0]:
        a.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
                 borderaxespad=0.0, handlelength=1.6)


def panels(samples, cid: str, min_bytes_per_s: float = 0.0) -> list[Callable[[Any, float], None]]:
    """The storage-host panels of ``cid`` that have something to show, each a function drawing
    onto an axis given the time origin: the OSD hosts' NICs, their OSD disks' busy fraction,
    their CPU against cores. A NIC is drawn when it moved more than ``min_bytes_per_s`` at some point
    (the report passes 1 % of the chain's peak rate: a NIC in the chain's path carries its share
    of the bytes, one outside it only background, 806 B/s of ssh and scrapes recorded on the
    one-box cluster, whose OSDs talk over loopback); no NIC drawn, no NIC panel.
    [] when the cell has no prometheus rows of OSD hosts."""
    rx = _osd_rows(samples, cid, "node.nic_rx_bytes_per_s")
    tx = _osd_rows(samples, cid, "node.nic_tx_bytes_per_s")
    speed = _osd_rows(samples, cid, "node.nic_speed_bytes_per_s")
    busy = _osd_rows(samples, cid, "node.disk_busy")
    osd_disks = {k for k, rows in samples.by_label(cid, "node.disk_busy", "osds").items() if k}
    if osd_disks:  # the OSDs' disks are known: the host's other disks are not drawn
        named = {(str(lab.get("host")), str(lab.get("device")))
                 for k, rows in samples.by_label(cid, "node.disk_busy", "osds").items() if k
                 for lab in rows["labels"]}
        busy = {k: v for k, v in busy.items() if k in named}
    cpu, cores = _osd_rows(samples, cid, "node.cpu_busy_cores"), _osd_rows(samples, cid, "node.cpu_cores")
    nics = [(key, way, series) for key in sorted(set(rx) | set(tx))
            for series, way in ((rx.get(key), "rx"), (tx.get(key), "tx"))
            if series is not None and np.isfinite(series[1]).any() and np.nanmax(series[1]) > max(min_bytes_per_s, 0.0)]
    known = bool(nics) and all(k in speed for k, _, _ in nics)
    out: list[Callable[[Any, float], None]] = []

    def nic(a, t0: float) -> None:
        for key, way, (w, v) in nics:
            sp = float(np.nanmean(speed[key][1])) if key in speed else math.nan
            y = v / sp * 100 if known and sp > 0 else v * 8 / 1e6
            a.plot(w - t0, y, lw=1, label=f"{key[0]} {key[1]} {way}")
        if known:
            a.axhline(85, color="black", ls=":", lw=1, label="85 % of link speed")
        a.set_ylabel("storage NIC\n(% of link)" if known else "storage NIC\n(Mb/s)")
        a.set_ylim(bottom=0)
        _legend(a)

    def disk(a, t0: float) -> None:
        for key, (w, v) in sorted(busy.items()):
            a.plot(w - t0, v * 100, lw=1, label=f"{key[0]} {key[1]}")
        a.axhline(85, color="black", ls=":", lw=1, label="85 % busy")
        a.set_ylabel("OSD disk\nbusy (%)")
        a.set_ylim(0, 105)
        _legend(a)

    def host_cpu(a, t0: float) -> None:
        for key, (w, v) in sorted(cpu.items()):
            n = float(np.nanmean(cores[key][1])) if key in cores else math.nan
            a.plot(w - t0, v, lw=1, label=f"{key[0]} CPU" + (f" ({n:g} cores)" if math.isfinite(n) else ""))
            if math.isfinite(n):
                a.axhline(n, ls=":", lw=1, color="black")
        a.set_ylabel("storage host\nCPU (cores)")
        a.set_ylim(bottom=0)
        _legend(a)
    if nics:
        out.append(nic)
    busy = {k: (w, v) for k, (w, v) in busy.items() if np.isfinite(v).any() and np.nanmax(v) > 0}
    if busy:  # a disk that was never busy (or never read) says nothing: no empty panel
        out.append(disk)
    if cpu:
        out.append(host_cpu)
    return out


def storage_host_panels(samples, cid: str, t0: float, title: str) -> str | None:
    """The panels of :func:`panels` in a figure of their own (the report draws them under the
    cell's timeline instead, on its time axis); None when there is none."""
    draw = panels(samples, cid)
    if not draw:
        return None
    fig, axes = new_figure(9.0, 0.6 + 1.3 * len(draw), nrows=len(draw), sharex=True, squeeze=False)
    for a, d in zip(axes[:, 0], draw, strict=True):
        d(a, t0)
        a.tick_params(labelsize=8)
    axes[0, 0].set_title(title, fontsize=10)
    axes[-1, 0].set_xlabel("time since the cell's first campaign (s)")
    return fig_to_data_uri(fig, dpi=110)


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


def timeline_panels(samples, cid: str, verdicts: Any, peak: float, storage: bool = True) -> tuple[list, str]:
    """The cell's storage-host panels (Prometheus) for under its timeline, and their caption
    with the EC fan-out measured; ([], "") when the run has no such rows, or the cell has no
    storage in its path (``storage`` False: a tmpfs cell). ``peak``: the chain's highest rate
    (B/s): a NIC that never moved 1 % of it is not in the chain's path."""
    draw = panels(samples, cid, 0.01 * peak if math.isfinite(peak) else 0.0) if storage else []
    if not draw:
        return [], ""
    v = verdicts[verdicts["cell_id"] == cid]
    evs = [(float(c), json.loads(e)) for c, e in zip(v["concurrency"], v["evidence"], strict=True)
           if isinstance(e, str) and e.startswith("{")]
    fan = fanout_text(evs)
    return draw, (" Storage hosts: the OSD hosts as the site's Prometheus sees them (samples of "
                  "sampler prometheus: NIC rx/tx against link speed, a NIC that never moved 1 % of "
                  "the chain's peak rate left out as outside its path; OSD disk busy; CPU against "
                  "cores; the PromQL is in raw/prometheus/"
                  f"{cid}/queries.promql)" + (f"; {fan}." if fan else "."))
