"""The EC cell's replicated twin: the size-3 pool a site compares EC with, whatever the names."""

from __future__ import annotations

import json

from tests.support.synthrun import GIB, SynthCell, make_run
from xcbench.analysis.verdicts.attribution import attribute

LAYOUT = (4 << 20, 1, 4 << 20)


def _ec_evidence(tmp_path, pools):
    cells = [SynthCell("cephfs", LAYOUT, p, concurrency=(4, 8), repeats=1, files=16,
                       gateway=4 * GIB, fio_bw=1 * GIB) for p in pools]
    cells.append(SynthCell("cephfs", LAYOUT, "ec2+1", concurrency=(4, 8), repeats=1, files=16,
                           gateway=4 * GIB, fio_bw=1 * GIB, ec_factor=0.6))
    path, _ = make_run(tmp_path, cells)
    rows = attribute(path)
    evs = [json.loads(r["evidence"]) for r in rows]
    return [e for e in evs if e.get("pool", "").startswith("xcb-ec")]


def test_the_ec_cell_is_compared_with_the_size_3_pool_when_there_is_one(tmp_path):
    # rep1 sorts first by name; the size-3 pool is still the one compared with
    ec = _ec_evidence(tmp_path, ["rep1", "rep3", "rep2"])
    assert len(ec) == 2 and all(e["rep_pool"] == "rep3" for e in ec), ec


def test_without_a_size_3_pool_another_replicated_pool_is_the_twin_and_named(tmp_path):
    ec = _ec_evidence(tmp_path, ["rep2", "rep1"])
    assert len(ec) == 2 and all(e["rep_pool"] == "rep1" for e in ec), ec
