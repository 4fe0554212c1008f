"""The planner's reader of the cores sweep: rate per core from quota-held cells only."""

from __future__ import annotations

import pandas as pd
import pytest

from xcbench.cell import Cell
from xcbench.plan.calibrate import Calibration
from xcbench.plan.rate_per_core import add_rate_per_core, rate_per_core_rows

CELLS = {
    "a": Cell("a", "tmpfs 2G o1 push 0.5c", "tmpfs", origins=1, cores=0.5),
    "b": Cell("b", "tmpfs 2G o2 push 1c", "tmpfs", origins=2, cores=1.0),
    "c": Cell("c", "tmpfs 2G o1 push", "tmpfs", origins=1),
}
RATES = {("a", 1): 0.1e9, ("a", 4): 0.25e9, ("b", 4): 0.4e9, ("c", 4): 2e9}


def test_rate_per_core_of_quota_held_cells():
    # gateway CPU measured: a used 0.5 of 0.5 cores (held), b 0.8 of 2 (not held)
    camp = pd.DataFrame([{"cell_id": "a", "concurrency": 4, "gateway_cpu_s_per_gb": 2.0},
                         {"cell_id": "b", "concurrency": 4, "gateway_cpu_s_per_gb": 2.0}])
    rows, notes = rate_per_core_rows("r1", CELLS, RATES, camp)
    assert [r["rate_per_core"] for r in rows] == [0.5e9]
    assert rows[0]["s_per_gb"] == pytest.approx(2.0) and rows[0]["mode"] == "push"
    assert rows[0]["checksum"] == "read-back" and "c=4" in rows[0]["from"]
    assert len(notes) == 1 and "cell b" in notes[0] and "0.8 of its 2 cores" in notes[0]


class _Run:
    path = type("P", (), {"name": "r1"})()

    def __init__(self, samples=None):
        self.samples = samples if samples is not None else pd.DataFrame()

    def table(self, name):
        return self.samples


def test_samples_decide_when_the_campaigns_have_no_gateway_cpu():
    def rows(cid, pid, values):
        return [{"cell_id": cid, "sampler": "gateway", "metric": "proc.cpu_seconds.rate",
                 "labels": f'{{"name": "xrootd:xcb", "pid": {pid}}}', "value": v} for v in values]
    # a: its origin at its 0.5-core quota; b: two origins, the busiest at 0.3 of 1 core
    samples = pd.DataFrame(rows("a", 1, [0.5] * 10) + rows("b", 2, [0.3] * 10) + rows("b", 3, [0.1] * 10))
    cal = Calibration(runs=["r1"], curve=[{"run": "r1", "cell_id": c, "concurrency": n, "rate": r}
                                          for (c, n), r in RATES.items()])
    add_rate_per_core(cal, _Run(samples), CELLS, None)
    assert [r["rate_per_core"] for r in cal.rate_per_core] == [0.5e9]
    assert any("busiest origin used 0.3 of its 1 cores" in n for n in cal.notes)


def test_without_gateway_cpu_every_cores_cell_counts():
    cal = Calibration(runs=["r1"], curve=[{"run": "r1", "cell_id": c, "concurrency": n, "rate": r}
                                          for (c, n), r in RATES.items()])
    add_rate_per_core(cal, _Run(), CELLS, None)
    assert sorted(r["rate_per_core"] for r in cal.rate_per_core) == [0.2e9, 0.5e9]
    assert cal.gateway_cpu == cal.rate_per_core
