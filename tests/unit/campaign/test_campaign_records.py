"""Campaign rows carry exactly the columns of xcbench.store.tables."""

import json

import pytest

from xcbench.campaign.rows import Buffered, Timeline, campaign_row, transfer_row
from xcbench.store.tables import CAMPAIGN, TIMELINE, TRANSFER


def test_transfer_row_columns_and_derived_fields():
    r = transfer_row(campaign_id="c", file_index=3, start_time=10.0, finish_time=12.0,
                     transferred=4 << 20, file_state="FINISHED")
    assert tuple(r) == TRANSFER
    assert r["tx_duration"] == 2.0 and r["throughput"] == 2 << 20
    with pytest.raises(KeyError):
        transfer_row(bogus=1)


def test_campaign_row_settings_are_json_text():
    r = campaign_row(campaign_id="c", settings={"b": 1, "a": [1]})
    assert tuple(r) == CAMPAIGN and json.loads(r["settings"]) == {"a": [1], "b": 1}


def test_timeline_buckets_are_deltas():
    t = Timeline("cell", "c", 4, 0, start=100.0)
    a = t.sample(101.0, 1000, 4, 0, 0)
    b = t.sample(102.0, 3000, 3, 1, 0)
    assert tuple(a) == TIMELINE
    assert (a["bytes"], a["rate"], b["bytes"], b["rate"], b["t"]) == (1000, 1000, 2000, 2000, 2.0)


def test_buffered_hands_rows_to_the_sink_once():
    got = []
    out = Buffered(lambda table, rows: got.append((table, list(rows))))
    out.add("transfers", [{"x": 1}])
    out.flush()
    out.flush()
    assert got == [("transfers", [{"x": 1}])] and out.kept["transfers"] == [{"x": 1}]
