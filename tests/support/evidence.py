"""Verdict evidence built by hand for the attribution tests (a point's figures, a role's use)."""

from __future__ import annotations

import math
import re

from tests.support.synthrun import GIB


def _ev(**kw):
    ev = {"rate": 1.0 * GIB, "concurrency": 8, "mode": "push", "cores": 8.0, "gateway_cores": math.nan,
          "cpu": math.nan, "host_busy": math.nan, "network_bytes_per_s": 10 * GIB, "starved_frac": 0.0}
    ev.update(kw)
    return ev


def _one_sentence(reason: str) -> bool:
    return reason.endswith(".") and not re.search(r"\.\s+[A-Z]", reason)



CG = "cgroup v1 cpu.cfs_quota_us=25000/100000 at /sys/fs/cgroup/cpu/xcb-r-gateway"
HOST = "host cores (2; no CFS quota or cpuset below them)"


def _role(cpu, limit, source=HOST):
    use = cpu / limit if limit else None
    return {"cpu": cpu, "limit": limit, "source": source, "use": use,
            "saturated": use is not None and use >= 0.85}
