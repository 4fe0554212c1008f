"""The IOPS job counted at the device: with a device counter, fio's randwrite job runs alone
between two reads of the counter, and its row carries the device's write IO/s over the job's
runtime (real fio, files engine, in a temporary dir)."""

from __future__ import annotations

import math

from xcbench.backends.base import Target
from xcbench.matrix.cell import Cell
from xcbench.probe import jobs as probe


def _cell() -> Cell:
    return Cell(id="dev1", label="tmpfs", backend="tmpfs", layout=None, pool=None, file_size=1 << 20,
                probe={"runtime": 1, "iodepth": 1, "size": 1 << 20, "direct": False})


def test_the_iops_job_runs_alone_between_the_device_reads(tmp_path):
    target = Target(cell_id="dev1", backend="tmpfs", path=str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    raw = tmp_path / "raw"
    seen = []

    def device():  # what fio had written when the counter was read; 500 IOs per read
        seen.append(sorted(p.name for p in raw.glob("*.json")))
        return 500 * len(seen), 0

    rows = probe.run_probe(_cell(), target, workdir=tmp_path / "w", sink=None, raw_dir=raw, device=device)
    assert seen == [[], ["xcb-probe.dev1.iops.json"]]  # before it, and after the IOPS job alone
    by = {r["job"]: r for r in rows}
    assert set(by) == {"randwrite", "write", "read"}  # the other jobs ran afterwards
    rw = by["randwrite"]
    assert rw["runtime_s"] > 0 and math.isclose(rw["device_write_iops"], 500 / rw["runtime_s"])
    assert math.isnan(by["write"]["device_write_iops"]) and math.isnan(by["read"]["device_write_iops"])


def test_without_a_counter_one_fio_run_and_no_device_figures(tmp_path):
    target = Target(cell_id="dev1", backend="tmpfs", path=str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    rows = probe.run_probe(_cell(), target, workdir=tmp_path / "w", sink=None, raw_dir=tmp_path / "raw")
    assert {r["job"] for r in rows} == {"randwrite", "write", "read"}
    assert all(math.isnan(r["device_write_iops"]) for r in rows)
    assert not list((tmp_path / "raw").glob("*.iops.json"))
