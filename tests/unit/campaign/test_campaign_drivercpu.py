"""The driver's CPU figure and its limit (the limit reader itself: tests/unit/system/test_limits.py)."""

from __future__ import annotations

import os
import time

from xcbench.campaign.dataset import Dataset
from xcbench.campaign.drivercpu import DriverCpu
from xcbench.campaign.staging import local_source


def test_driver_cpu_counts_this_process_in_cores():
    d = DriverCpu()
    t0 = time.process_time()
    while time.process_time() - t0 < 0.2:  # burn 0.2 s of CPU
        sum(range(1000))
    s, total = d.sample(), d.total()
    assert set(s) == {"driver_cpu_cores", "driver_cpu_limit_cores", "driver_cpu_limit_source"}
    assert 0 < s["driver_cpu_cores"] and 0 < total["driver_cpu_cores"]
    assert s["driver_cpu_limit_cores"] > 0 and s["driver_cpu_limit_source"]


def test_only_gfal2_http_pushes_stage_local_files(tmp_path):
    ds = Dataset.generate(2, 4096, block_size=4096)
    assert local_source(ds, "cx", "push", "gfal2", "root") is None  # streamed
    assert local_source(ds, "cx", "push", "xrootd", "root") is None
    assert local_source(ds, "cx", "tpc-http", "gfal2", "http") is None
    src = local_source(ds, "cx", "push", "gfal2", "http")
    try:
        info = src.stage_all()
        assert info["before_clock"] and all(os.path.getsize(src.path(i)) == 4096 for i in range(2))
    finally:
        src.cleanup()
    assert not src.dir.exists()
