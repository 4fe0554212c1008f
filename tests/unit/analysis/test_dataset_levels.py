"""Transfers whose level is unknown: filled in from the campaigns table, or a one-line error
naming the run, table and column (it used to be a KeyError deep in RunData.points)."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from tests.support.synthrun import SynthCell, make_run
from xcbench.analysis.report.document import render_report
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.errors import XcbError


@pytest.fixture
def transfers_only(tmp_path):
    """A run with transfers whose concurrency column is empty, and no timeline."""
    path, _ = make_run(tmp_path, [SynthCell("tmpfs", concurrency=(2,), repeats=1, files=8)])
    tr = pd.read_parquet(path / "transfers.parquet")
    tr["concurrency"] = None
    tr.to_parquet(path / "transfers.parquet", index=False)
    _drop(path, "timeline")
    return path


def _drop(path, table: str) -> None:
    for f in (path / f"{table}.parquet", path / "records" / f"{table}.jsonl"):
        if f.exists():
            os.remove(f)


def test_without_campaigns_the_report_says_what_is_missing(transfers_only):
    _drop(transfers_only, "campaigns")
    with pytest.raises(XcbError, match=r"run \S+: transfers: 8 of 8 rows have no concurrency and "
                                        r"the run has no campaigns table to give it"):
        render_report([transfers_only], "md")


def test_the_campaigns_table_gives_the_level(transfers_only):
    rd = RunData(transfers_only)
    assert list(rd.points["concurrency"]) == [2]
    assert rd.points["rate"].iloc[0] > 0
