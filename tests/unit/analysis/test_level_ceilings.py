"""Level probes in the verdicts (analysis.verdicts.probes): each level is held against the probe of its
own level, whose noise enters the share; a CPU-bound probe is no storage ceiling; a probe the
chain beats beyond noise casts doubt on the probes made the same way."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from tests.support.evidence import _ev, _one_sentence
from tests.support.synthrun import GIB
from xcbench.analysis.verdicts import borderline, probes
from xcbench.analysis.verdicts.attribution import NEAR, decide


def _probe(cell: str, c: int, target: str, bw: float, se: float = 0.05, busy: float = 0.5) -> dict:
    engine = "rados" if target == "pool" else "psync"
    return {"cell_id": cell, "job": f"{'pool' if target == 'pool' else 'write'}-c{c}", "host": "local",
            "rw": "write", "bw": bw * 1.02, "iops": bw / (4 << 20), "engine": engine, "direct": False,
            "concurrency": c, "target": target, "bw_steady": bw, "bw_rel_se": se, "bw_cv": se * 3,
            "bw_n": 12, "host_busy": busy, "host_cores": 2, "osd_cores": 0.7, "settled": True,
            "settle_s": 1.0, "wall_s": 6.0}


def _point(cell: str, c: int, rate: float, cv: float = 0.05) -> dict:
    return {"cell_id": cell, "concurrency": c, "rate": rate, "repeats": 1, "rate_cv_repeats": math.nan,
            "window_cv": cv, "window_n": 15, "direction": "write"}


def _rd(probe_rows, point_rows, backends):
    cells = pd.DataFrame([{"cell_id": k, "backend": v, "label": k} for k, v in backends.items()]
                         ).set_index("cell_id", drop=False)
    return SimpleNamespace(probes=pd.DataFrame(probe_rows), points=pd.DataFrame(point_rows),
                           cells=cells, run_id="r1")


def test_a_probe_on_a_full_host_is_flagged_cpu_bound():
    t = probes.level_table(pd.DataFrame([_probe("a", 1, "mount", GIB, busy=0.97),
                                         _probe("a", 4, "mount", GIB, busy=0.40)]))
    assert list(t["cpu_bound"]) == [True, False]
    assert probes.CPU_FULL == NEAR  # the host-cpu rule's own line


def test_the_level_probe_replaces_the_cells_ceiling_with_its_noise():
    rd = _rd([_probe("a", 4, "mount", 2 * GIB, se=0.2), _probe("a", 4, "pool", 3 * GIB)],
             [_point("a", 4, 1.8 * GIB)], {"a": "cephfs"})
    ev, src = _ev(rate=1.8 * GIB, backend="cephfs", fio_bw=9 * GIB), {}
    probes.apply_level(rd, "a", 4, ev, src)
    assert ev["fio_bw"] == 2 * GIB and ev["fio_bw_rel_se"] == 0.2 and ev["fio_bw_job"] == "write-c4"
    assert ev["fio_pool_bw"] == 3 * GIB  # the pool, measured apart
    assert src["fio_bw"]["query"] == "cell_id == \"a\" & job == \"write-c4\""
    # 90 % of the ceiling: storage-bandwidth, and within the probe's noise of NEAR
    v, reason = decide(ev)
    assert v == "storage-bandwidth"
    (c,) = [c for c in ev["borderline_candidates"] if c["rule"] == "storage-bandwidth"]
    assert math.isclose(c["high"] / c["value"], math.exp(borderline.Z * math.hypot(0.0, 0.2)))


def test_a_rados_cell_is_held_against_its_pool_probe():
    rd = _rd([_probe("r", 1, "pool", GIB)], [_point("r", 1, 0.5 * GIB)], {"r": "rados"})
    ev = _ev(rate=0.5 * GIB, backend="rados")
    probes.apply_level(rd, "r", 1, ev, {})
    assert ev["fio_bw"] == GIB and ev["fio_bw_job"] == "pool-c1"


def test_a_cpu_bound_probe_is_no_storage_ceiling():
    rd = _rd([_probe("a", 1, "mount", 0.5 * GIB, busy=0.99)], [_point("a", 1, 0.45 * GIB)], {"a": "cephfs"})
    ev = _ev(rate=0.45 * GIB, backend="cephfs", fio_bw=0.5 * GIB)
    probes.apply_level(rd, "a", 1, ev, {})
    assert "fio_bw" not in ev and ev["fio_cpu_bound"] is True
    v, reason = decide(ev)
    assert v != "storage-bandwidth"
    assert "fio probe was CPU-bound (host 99 % busy" in reason and _one_sentence(reason)


def test_a_probe_the_chain_beats_casts_doubt_on_its_method():
    # cell b's chain does 1.5x its probe (each +-3 %): beyond noise; a is probed the same way
    rows = [_probe("a", 1, "mount", GIB, se=0.03), _probe("b", 1, "mount", GIB, se=0.03)]
    points = [_point("a", 1, 0.9 * GIB, 0.05), _point("b", 1, 1.5 * GIB, 0.05)]
    rd = _rd(rows, points, {"a": "cephfs", "b": "cephfs"})
    table = probes.chain_vs_probe(probes.level_table(rd.probes), rd.points, rd.cells)
    assert list(table["beats"]) == [False, True]
    ev = _ev(rate=0.9 * GIB, backend="cephfs")
    probes.apply_level(rd, "a", 1, ev, {})
    assert "mount: fio psync" in ev["probe_doubt"] and "b c=1 (150 %)" in ev["probe_doubt"]
    v, reason = decide(ev)
    assert "in doubt" in reason and _one_sentence(reason)


@pytest.mark.parametrize("rate, beats", [(1.10, False), (1.60, True)])
def test_beating_is_judged_with_both_noises(rate, beats):
    rd = _rd([_probe("a", 1, "mount", GIB, se=0.10)], [_point("a", 1, rate * GIB, 0.05)], {"a": "cephfs"})
    (row,) = probes.chain_vs_probe(probes.level_table(rd.probes), rd.points, rd.cells).to_dict("records")
    assert row["beats"] is beats and row["share_low"] < rate < row["share_high"]


def test_runs_without_level_probes_keep_the_cells_ceiling():
    rd = _rd([{"cell_id": "a", "job": "write", "host": "local", "rw": "write", "bw": GIB,
               "iops": 1.0, "engine": "psync", "direct": False}], [_point("a", 1, 0.5 * GIB)],
             {"a": "cephfs"})
    ev = _ev(rate=0.5 * GIB, backend="cephfs", fio_bw=GIB)
    probes.apply_level(rd, "a", 1, ev, {})
    assert ev["fio_bw"] == GIB and "fio_level" not in ev
