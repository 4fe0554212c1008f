"""Writes tests/data/runs/dimensions: a run whose cells set what a cell's stored settings alone
say (read by tests/unit/analysis/test_stored_readers.py): a cores sweep (origins x cores, one
gateway that stayed below its quota), streams, file-size classes, a read cell with a level whose
campaign row is missing (its direction is the cell's), and RADOS and CephFS cells whose gateway
checksums on the fly (third-party copy), reads back (cksio off; TLS, which its campaign rows do
not name) or not at all (a campaign that asks no target checksum).

    PYTHONPATH=. .venv/bin/python tests/data/runs/make_dimensions.py tests/data/runs

The run goes through this release's code: the synthetic run generator and RunDir (records,
finalize) and the verdicts (analysis.conclude); the gateway's CPU per GB is added to the
campaign rows as the runner writes it.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.support.synthrun import GIB, MIB, SynthCell, make_run
from xcbench.analysis.conclude import conclude
from xcbench.store.rundir import RunDir

NAME = "dimensions"
M4 = 4 << 20
SMALL = {"concurrency": (2, 4), "files": 12, "repeats": 1}


def _tmpfs(gateway: float, **fields) -> SynthCell:
    return SynthCell("tmpfs", gateway=gateway, per_stream=200 * MIB, cell_fields=fields, **SMALL)


CELLS = [
    # the cores sweep: each origin's gateway held by its quota (0.5 GiB/s a core), but o2 0.5c
    _tmpfs(0.25 * GIB, cores=0.5), _tmpfs(0.5 * GIB, cores=1.0),
    _tmpfs(0.5 * GIB, cores=0.5, origins=2),
    _tmpfs(1.0 * GIB, streams=1), _tmpfs(1.0 * GIB, streams=4),
    SynthCell("tmpfs", file_size=1 << 20, cell_fields={"size_class": "small", "size_scale": 4,
                                                       "size_dist": "uniform"}, **SMALL),
    SynthCell("tmpfs", file_size=32 << 20, cell_fields={"size_class": "medium", "size_scale": 4,
                                                        "size_dist": "uniform"}, **SMALL),
    _tmpfs(0.8 * GIB, direction="read"),
    SynthCell("rados", (M4, 1, M4), "rep3", fio_bw=3 * GIB, fio_iops=20000, mode="tpc-root",
              cell_fields={"gateway_settings": {"cksio": True}}, **SMALL),
    SynthCell("rados", (M4, 1, M4), "ec2+1", fio_bw=3 * GIB, fio_iops=20000,
              cell_fields={"gateway_settings": {"cksio": False}, "security": "tls"}, **SMALL),
    SynthCell("cephfs", (M4, 1, M4), "rep3", fio_bw=3 * GIB, fio_iops=20000,
              cell_fields={"campaign": {"checksum": "none"}}, **SMALL),
]
NOT_HELD = 2  # the o2 0.5c cell: its gateway used half its quota


def _edit(run: RunDir, table: str, edit) -> None:
    path = run.path / "records" / f"{table}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows = [r for r in (edit(r) for r in rows) if r is not None]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as store:
        path, _ = make_run(Path(store), CELLS, name=NAME, finalize=False)  # rows go in before it
        run = RunDir.open(path)
        _edit(run, "campaigns", _campaign_row([c.cell() for c in CELLS]))
        run.finalize("complete")
        conclude(run)
        shutil.rmtree(out / NAME, ignore_errors=True)  # the Parquet tables hold the records' rows
        shutil.copytree(run.path, out / NAME, ignore=shutil.ignore_patterns("records"))


def _campaign_row(cells: list) -> Callable[[dict], dict | None]:
    """A campaign row as the runner writes it, with the gateway's CPU per GB; None: dropped."""
    by_id = {c.id: (i, c) for i, c in enumerate(cells)}
    read_cell = next(c.id for c in cells if c.direction == "read")

    def campaign(r: dict) -> dict | None:
        i, cell = by_id[r["cell_id"]]
        if cell.id == read_cell and r["concurrency"] == 4:
            return None  # a level cut short before its row was written
        if cell.cores:  # s/GB such that the gateway used its quota (or half of it)
            quota = cell.cores * cell.origins * (0.5 if i == NOT_HELD else 1.0)
            r["gateway_cpu_s_per_gb"] = quota / (r["rate"] / 1e9)
        else:
            r["gateway_cpu_s_per_gb"] = 1.2 + 0.1 * i
        if cell.security != "none":
            r["security"] = None  # an older runner's row: the cell says it
        return r
    return campaign

if __name__ == "__main__":
    main(Path(sys.argv[1]))
