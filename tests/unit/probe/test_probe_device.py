"""The IOPS job counted at the device: with a device counter, fio's randwrite job runs alone
while the counter is read, and its row carries the device's write IO/s over the span the
counter moved (real fio, files engine, in a temporary dir)."""

from __future__ import annotations

import math

import pytest

from xcbench.backends.base import Target
from xcbench.matrix.cell import Cell
from xcbench.probe import jobs as probe


def _cell() -> Cell:
    return Cell(id="dev1", label="tmpfs", backend="tmpfs", layout=None, pool=None, file_size=1 << 20,
                probe={"runtime": 1, "iodepth": 1, "size": 1 << 20, "direct": False})


def test_the_iops_job_runs_alone_while_the_device_is_read(tmp_path):
    target = Target(cell_id="dev1", backend="tmpfs", path=str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    raw = tmp_path / "raw"
    seen = []

    def device():  # what fio had written when the counter was read; 7 IOs per read
        seen.append(sorted(p.name for p in raw.glob("*.json")))
        return 7 * len(seen), 0

    rows = probe.run_probe(_cell(), target, workdir=tmp_path / "w", sink=None, raw_dir=raw, device=device)
    assert len(seen) >= 5  # polled while the job ran (1 s)
    assert seen[0] == [] and seen[-1] == ["xcb-probe.dev1.iops.json"]  # the IOPS job alone
    by = {r["job"]: r for r in rows}
    assert set(by) == {"randwrite", "write", "read"}  # the other jobs ran afterwards
    # 7 IOs per read, a read every POLL s: the rate the counter moved at
    assert 7 / probe.POLL * 0.5 < by["randwrite"]["device_write_iops"] <= 7 / probe.POLL * 1.05
    assert math.isnan(by["write"]["device_write_iops"]) and math.isnan(by["read"]["device_write_iops"])


@pytest.mark.parametrize("samples, rate", [
    ([(0.0, 0), (1.0, 0), (2.0, 100), (3.0, 200), (4.0, 200), (9.0, 200)], 100.0),  # idle ends left out
    ([(0.0, 5), (0.5, 55), (1.0, 105)], 100.0),
    ([(0.0, 5), (1.0, 5)], None),  # the device never moved
    ([(0.0, 5)], None),
])
def test_the_active_rate_is_over_the_span_the_counter_moved(samples, rate):
    assert probe.active_rate(samples) == rate


def test_without_a_counter_one_fio_run_and_no_device_figures(tmp_path):
    target = Target(cell_id="dev1", backend="tmpfs", path=str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    rows = probe.run_probe(_cell(), target, workdir=tmp_path / "w", sink=None, raw_dir=tmp_path / "raw")
    assert {r["job"] for r in rows} == {"randwrite", "write", "read"}
    assert all(math.isnan(r["device_write_iops"]) for r in rows)
    assert not list((tmp_path / "raw").glob("*.iops.json"))
