"""Saturation seen directly on the real kernel: a busy process under a real cgroup CPU quota
waits on the run queue (CFS throttling shows in schedstat) and the reading says saturated; an
idle process beside it does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pandas as pd

from tests.support.quota import MECH, needs_quota
from xcbench.analysis.verdicts import saturation as sat
from xcbench.analysis.verdicts.roles import role_usage
from xcbench.analysis.verdicts.samples import SampleIndex
from xcbench.system.cgroups import CpuGroups
from xcbench.telemetry.host import HostSampler
from xcbench.telemetry.role_processes import CellRoleSampler

pytestmark = needs_quota
SPIN = [sys.executable, "-c", "while True: pass"]
IDLE = [sys.executable, "-c", "import time\nwhile True: time.sleep(0.01)"]


def test_a_quota_held_process_waits_and_reads_saturated_an_idle_one_does_not(tmp_path):
    busy, idle = subprocess.Popen(SPIN), subprocess.Popen(IDLE)
    try:
        with CpuGroups(tmp_path, f"sat{uuid.uuid4().hex[:6]}") as groups:
            g = groups.create("gateway", cores=0.25)
            g.add(busy.pid)
            roles = CellRoleSampler({"gateway": lambda: [busy.pid], "client": lambda: [idle.pid]})
            host = HostSampler(interfaces=[], per_cpu=False)
            rows = []
            for _ in range(5):  # four 1-s ticks after the first
                wall, mono = time.time(), time.monotonic()
                rows += roles.sample(wall, mono) + host.sample(wall, mono)
                time.sleep(1.0)
    finally:
        for p in (busy, idle):
            p.kill()
            p.wait()
    df = pd.DataFrame([{**r, "cell_id": "c", "labels": json.dumps(r["labels"])} for r in rows])
    s = SampleIndex(df)
    walls = df["wall"]
    u = role_usage(s, "c", [(walls.min(), walls.max())])
    gw, cl = u["gateway"], u["client"]
    # the spinner wants a whole core and gets a quarter: it waits the rest (measured 0.75)
    assert gw["wait_share"] is not None and gw["wait_share"] >= sat.WAIT_SAT, gw
    assert gw["saturated"] and "run-queue wait" in gw["limited_by"], gw
    assert gw["hot_thread"]["cores"] < 0.5  # held by its quota, not by one thread at a core
    assert not cl["saturated"] and cl["limited_by"] == [], cl
    assert not (cl["wait_share"] or 0) >= sat.WAIT_SAT  # an idle process: no wait of note
    pressure, _ = sat.host_pressure(s, "c", [(walls.min(), walls.max())])
    if os.path.exists("/proc/pressure/cpu"):
        assert 0 <= pressure <= 1
    # cgroup v1 groups have no cpu.pressure of their own: said once per role
    notes = {r["labels"]["role"]: r for r in rows if r["metric"] == "role_cpu_pressure" and r["value"] is None}
    if MECH.kind == "v1":
        assert "per-task" in notes["gateway"]["labels"]["source"]
