"""The IOPS job counted at the device: with a device counter, each of fio's write jobs runs alone
while the counters are read, and its row carries the device's write IO/s and bytes/s over the
span the counter moved (real fio, files engine, in a temporary dir)."""

from __future__ import annotations

import math
import time

import pytest

from xcbench.backends.base import Target
from xcbench.cell import Cell
from xcbench.probe import jobs
from xcbench.probe.device_count import active_rate

RATE = 70.0  # the fake device's IO/s


def _cell() -> Cell:
    return Cell(id="dev1", label="tmpfs", backend="tmpfs", layout=None, pool=None, file_size=1 << 20,
                probe={"runtime": 1, "iodepth": 1, "size": 1 << 20, "direct": False})


def test_each_write_job_runs_alone_while_the_device_is_read(tmp_path):
    target = Target(cell_id="dev1", backend="tmpfs", path=str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    raw = tmp_path / "raw"
    seen = []

    t0 = time.monotonic()

    def device():  # what fio had written when the counters were read; a device at 70 IO/s, 1 kB each
        seen.append(sorted(p.name for p in raw.glob("*.json")))
        ios = int(RATE * (time.monotonic() - t0))  # by the clock the probe stamps its reads with
        return ios, 1000 * ios

    rows = jobs.run_probe(_cell(), target, workdir=tmp_path / "w", sink=None, raw_dir=raw, device=device)
    assert len(seen) >= 10  # polled while each write job ran (1 s each)
    assert seen[0] == []  # the IOPS job first, alone; then the bandwidth job, alone
    assert ["xcb-probe.dev1.randwrite.json"] in seen
    assert seen[-1] == ["xcb-probe.dev1.randwrite.json", "xcb-probe.dev1.write.json"]
    by = {r["job"]: r for r in rows}
    assert set(by) == {"randwrite", "write", "read"}  # the read job ran afterwards, uncounted
    for job in ("randwrite", "write"):  # the counter's rate over the span it moved (about 1 s): within
        # one IO (of ~70) at either end, and what the clock read between a stamp and its read
        assert RATE * 0.9 < by[job]["device_write_iops"] <= RATE * 1.1
        assert math.isclose(by[job]["device_write_bytes_per_s"], 1000 * by[job]["device_write_iops"])
    assert math.isnan(by["read"]["device_write_iops"]) and math.isnan(by["read"]["device_write_bytes_per_s"])


@pytest.mark.parametrize("samples, rate", [
    ([(0.0, 0, 0), (1.0, 0, 0), (2.0, 100, 10), (3.0, 200, 20), (4.0, 200, 20), (9.0, 200, 20)],
     (100.0, 10.0)),  # idle ends left out
    ([(0.0, 5, 0), (0.5, 55, 5), (1.0, 105, 10)], (100.0, 10.0)),
    ([(0.0, 5, 0), (1.0, 5, 0)], None),  # the device never moved
    ([(0.0, 5, 0)], None),
])
def test_the_active_rate_is_over_the_span_the_counter_moved(samples, rate):
    assert active_rate(samples) == rate


def test_without_a_counter_one_fio_run_and_no_device_figures(tmp_path):
    target = Target(cell_id="dev1", backend="tmpfs", path=str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    rows = jobs.run_probe(_cell(), target, workdir=tmp_path / "w", sink=None, raw_dir=tmp_path / "raw")
    assert {r["job"] for r in rows} == {"randwrite", "write", "read"}
    assert all(math.isnan(r["device_write_iops"]) and math.isnan(r["device_write_bytes_per_s"]) for r in rows)
    assert [p.name for p in (tmp_path / "raw").glob("*.json")] == ["xcb-probe.dev1.json"]
