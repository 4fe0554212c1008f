"""The run's one upgrade (xcbench.store.upgrade): a run in the oldest shape still supported reads
as today's, figure for figure; a run newer than this code is one line, exit 2."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.support.oldrun import old_shape
from tests.support.synthrun import SynthCell, make_run
from xcbench import cli
from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.errors import XcbError
from xcbench.store.rundir import RunDir
from xcbench.store.upgrade import TABLES_VERSION, update_table


@pytest.fixture(scope="module")
def current(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("store")
    cells = [SynthCell("tmpfs", concurrency=(2, 4), repeats=2, expect=None),
             SynthCell("cephfs", layout=(4 << 20, 1, 4 << 20), pool="rep1",
                       concurrency=(2, 4), repeats=2, expect=None)]
    path, _ = make_run(store, cells, name="current")
    rd = RunData(path)
    v = verdicts_of(rd)
    run = RunDir.open(path)
    run.append("verdicts", v.astype(object).where(v.notna(), None).to_dict("records"))
    run.finalize()
    return path


def test_synthetic_run_is_written_in_todays_shape(current):
    m = json.loads((current / "manifest.json").read_text())
    assert m["tables_version"] == TABLES_VERSION
    assert pd.read_parquet(current / "transfers.parquet")["direction"].eq("write").all()


def test_an_old_shape_run_gives_the_same_figures(current, tmp_path, capsys):
    old = old_shape(current, tmp_path / "old")
    assert "direction" not in pd.read_parquet(old / "transfers.parquet")
    a, b = RunData(current), RunData(old)
    assert b.run.state.tables_version == 1
    cols = ["cell_id", "concurrency", "direction", "repeats", "rate", "ci_low", "ci_high",
            "window_cv", "finished", "failed"]
    pd.testing.assert_frame_equal(a.points[cols], b.points[cols])
    assert len(a.points) >= 4 and set(b.points["direction"]) == {"write"}
    assert a.network_for("write")[0] == b.network_for("write")[0] > 0
    assert math.isnan(b.network_for("read")[0]) is math.isnan(a.network_for("read")[0])
    va, vb = verdicts_of(a), verdicts_of(b)
    assert len(va) and list(vb["direction"]) == list(va["direction"])
    assert list(vb["verdict"]) == list(va["verdict"])
    assert set(b.campaigns["security"]) == {"none"} and set(b.baseline["gateway"]) == {"127.0.0.1"}
    assert b.directions == a.directions
    assert cli.main(["runs", "show", str(old)]) == 0
    assert f"tables 1 (read as {TABLES_VERSION})" in capsys.readouterr().out
    # read, never rewritten
    assert "direction" not in pd.read_parquet(old / "transfers.parquet")
    assert "tables_version" not in json.loads((old / "manifest.json").read_text())


def test_an_old_timeline_without_derivable_columns():
    """1-s buckets: rate is the bucket's bytes, t counts from the campaign's first bucket."""
    df = pd.DataFrame({"campaign_id": ["a", "a", "b"], "wall": [10.0, 11.0, 20.0],
                       "bytes": [5.0, 7.0, 9.0], "rate": [None] * 3, "t": [None] * 3,
                       "repeat": [None] * 3})
    out = update_table("timeline", df, 1, {})
    assert list(out["rate"]) == [5.0, 7.0, 9.0] and list(out["t"]) == [0.0, 1.0, 0.0]
    assert list(out["repeat"]) == [0, 0, 0]


def test_an_old_transfer_without_throughput():
    df = pd.DataFrame({"file_size": [100.0, 100.0, 100.0], "tx_duration": [4.0, 0.0, 2.0],
                       "throughput": [None, None, 30.0]})
    out = update_table("transfers", df, 1, {})
    assert list(out["throughput"][[0, 2]]) == [25.0, 30.0] and pd.isna(out["throughput"][1])


def test_a_campaign_without_direction_takes_its_cells():
    m = {"cells": {"r": {"settings": {"direction": "read"}}, "w": {"settings": {}}}}
    df = pd.DataFrame({"cell_id": ["r", "w", "r"], "direction": [None, None, "mixed"],
                       "security": [None, "tls", None]})
    out = update_table("campaigns", df, 1, m)
    assert list(out["direction"]) == ["read", "write", "mixed"]
    assert list(out["security"]) == ["none", "tls", "none"]


def test_todays_rows_pass_an_old_runs_upgrade_unchanged():
    """A resumed old run appends today's rows to old ones: the step fills only what is missing."""
    df = pd.DataFrame({"cell_id": ["c"], "direction": ["read"], "verdict": ["gateway"]})
    assert update_table("verdicts", df.copy(), 1, {}).to_dict("records") == df.to_dict("records")


def test_a_run_from_a_newer_xcbench_is_one_line(current, tmp_path, capsys):
    new = tmp_path / "new"
    shutil.copytree(current, new)
    m = json.loads((new / "manifest.json").read_text())
    m["tables_version"] = TABLES_VERSION + 1
    (new / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(XcbError, match=rf"tables_version {TABLES_VERSION + 1} is newer than this "
                                       rf"xcbench understands \({TABLES_VERSION}\); upgrade xcbench"):
        RunData(new)
    capsys.readouterr()
    assert cli.main(["report", str(new), "--format", "md", "--out", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tables_version" in err[0] and "Traceback" not in err[0]
