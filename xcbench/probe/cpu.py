"""The host's and the OSDs' CPU while a probe job runs: a probe that filled the host's cores
measured the host, not the storage (analysis.verdicts.probes says so and leaves it out as a ceiling).

host_busy is the share of the host's cores busy over the job (/proc/stat through psutil: all
but idle and iowait); osd_cores the cores the cluster's ceph-osd processes used, read only
where they run on this host (the embedded cluster), else NaN.
"""

from __future__ import annotations

import math
import time
from typing import Any

import psutil

from xcbench.ceph.cluster import Cluster

OSD_NAME = "ceph-osd"


def _busy_total() -> tuple[float, float]:
    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0)
    total = sum(t)
    return total - idle, total


def _osds(cluster: Cluster | None) -> list[psutil.Process]:
    if cluster is None or not getattr(cluster, "embedded", False):
        return []
    out = []
    for p in psutil.process_iter(["name"]):
        if p.info.get("name") == OSD_NAME:
            out.append(p)
    return out


def _cpu_s(procs: list[psutil.Process]) -> dict[int, float]:
    out = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except psutil.Error:  # an OSD gone meanwhile: not counted
            pass
    return out


class Meter:
    """``with Meter(cluster) as m: ...; m.result()`` -> {host_busy, host_cores, osd_cores}."""

    def __init__(self, cluster: Cluster | None = None):
        self.cluster = cluster
        self._res: dict[str, Any] = {"host_busy": math.nan, "host_cores": psutil.cpu_count(),
                                     "osd_cores": math.nan}

    def __enter__(self) -> Meter:
        self._procs = _osds(self.cluster)
        self._t0 = time.monotonic()
        self._host0 = _busy_total()
        self._osd0 = _cpu_s(self._procs)
        return self

    def __exit__(self, *exc: Any) -> None:
        wall = time.monotonic() - self._t0
        busy, total = _busy_total()
        dt = total - self._host0[1]
        if dt > 0:
            self._res["host_busy"] = (busy - self._host0[0]) / dt
        if self._procs and wall > 0:
            osd1 = _cpu_s(self._procs)
            self._res["osd_cores"] = sum(osd1[p] - self._osd0[p] for p in osd1 if p in self._osd0) / wall

    def result(self) -> dict[str, Any]:
        return dict(self._res)
