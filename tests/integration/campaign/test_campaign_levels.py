"""Time-based campaign levels against a real tmpfs gateway: a level lasts at least its minimum
with a dataset far smaller than duration x rate (the dataset is cycled), stops at its maximum
when its rate is not steady, and overwrite-cycling never grows the target."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.campaign_rows import Rows
from tests.support.gwcheck import tmpfs_gateways
from xcbench.campaign import CampaignSpec, run_campaign
from xcbench.figures.steady import steady_table

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    wd = tmp_path_factory.mktemp("levels")
    with tmpfs_gateways(wd, ("lvl-dst",), size=256 << 20) as gws:
        yield gws[0]


def _run(gw, **kw):
    rows = Rows()
    spec = CampaignSpec(files=4, file_size="4M", mode="push", concurrency=2, timeout=60,
                        chunk_size="1M", **kw)
    t0 = time.monotonic()
    summary = run_campaign(spec, dest=gw, sink=rows, cell_id="cell-level")
    return summary, rows, time.monotonic() - t0


def _level(summary):
    import json
    return json.loads(summary["settings"])["level"]


def _stored(gw) -> list[Path]:
    return [p for p in Path(gw.target.path).rglob("*") if p.is_file()]


def test_a_level_runs_its_minimum_by_cycling_a_small_dataset(gateway):
    summary, rows, wall = _run(gateway, delete_after_verify=True,
                               duration={"min": "5s", "max": "10s"},
                               steady={"rule": "autoterm", "window": "4s", "points": 4,
                                       "tolerance": "50%"})
    level, ts = _level(summary), rows["transfers"]
    assert wall >= 5 and level["t_end"] >= 5
    assert level["ended_by"] in ("steady", "max") and level["t_end"] <= 10 + 1.5
    # 4 files of 4 MiB could not fill 5 s: the level moved far more transfers than files
    ok = [r for r in ts if r["file_state"] == "FINISHED"]
    assert len(ok) > 4 * 4 and summary["failed"] == 0 and summary["finished"] == len(ok)
    assert len({r["destination"] for r in ok}) == len(ok)  # delete-cycling: new names per cycle
    assert all(r["checksum_source"] == r["checksum_dest"] for r in ok)
    assert _stored(gateway) == []  # every verified file deleted
    st = steady_table(__import__("pandas").DataFrame(rows["timeline"]),
                      levels={summary["campaign_id"]: level}).iloc[0]
    assert st["ended_by"] == level["ended_by"] and st["window_n"] >= 3
    assert st["method"] == ("autoterm" if level["ended_by"] == "steady" else "not steady")


def test_a_level_that_never_becomes_steady_stops_at_its_maximum(gateway):
    # 0.01 %: no real rate on a shared box is that flat, so the rule never holds
    summary, rows, wall = _run(gateway, delete_after_verify=True,
                               duration={"min": "2s", "max": "5s"},
                               steady={"window": "3s", "points": 3, "tolerance": 0.0001})
    level = _level(summary)
    assert level["ended_by"] == "max" and not level["steady"]
    assert 5 <= level["t_end"] < 6.5 and wall < 5 + 10  # the drain is short: 4 MiB transfers
    # the window the rule judged: whole buckets, from the bucket end nearest 3 s before the end
    start, end = level["window"]
    ends = [0.0] + [r["t"] for r in rows["timeline"]]
    assert end == level["t_end"] and start in ends and abs(start - (end - 3)) <= 0.5


def test_overwrite_cycling_writes_the_same_names_again(gateway):
    # XRootD 5.5.3 now and then answers the checksum query of a file just overwritten with
    # "[3012] Program failed": FTS semantics retry it
    summary, rows, _ = _run(gateway, overwrite=True, delete_after_verify=False, retries=2,
                            duration={"min": "3s", "max": "3s"}, steady={"rule": "none",
                                                                       "window": "3s",
                                                                       "points": 3})
    ok = [r for r in rows["transfers"] if r["file_state"] == "FINISHED"]
    bad = [r["reason"] for r in rows["transfers"] if r["file_state"] != "FINISHED"]
    assert len(ok) > 4 and summary["failed"] == 0, bad
    assert len({urlsplit(r["destination"]).path for r in ok}) == 4
    stored = _stored(gateway)
    assert len(stored) == 4 and all(p.stat().st_size == 4 << 20 for p in stored)
    for p in stored:
        p.unlink()
