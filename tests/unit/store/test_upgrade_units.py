"""Tables' version 3 (xcbench.store.upgrade): a run the previous release stored, with names that
said ``bps`` (tests/data/runs/tables-v2, written by that release's code: make_tables_v2.py
there), reads with today's names, the same figures, and the same verdicts attributed again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from xcbench.analysis.report.run_section import confirmations
from xcbench.analysis.verdicts.attribution import attribute_data
from xcbench.analysis.verdicts.link_use import client_hosts
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.matrix.expand import cell_id
from xcbench.store.rundir import RunDir
from xcbench.store.upgrade import (
    COLUMNS_RENAMED,
    LINK_RENAMED,
    SCHEMA_VERSION,
    TABLES_VERSION,
    UNITS_RENAMED,
    update_confirmations,
)

STORED = Path(__file__).resolve().parents[2] / "data" / "runs" / "tables-v2"
EVIDENCE = ("network_bps", "device_write_Bps", "fio_device_Bps")  # what the release's keys were


@pytest.fixture(scope="module")
def old(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("store") / STORED.name
    shutil.copytree(STORED, path)
    return path


def test_the_stored_run_is_of_the_previous_release(old):
    m = json.loads((old / "manifest.json").read_text())
    assert (m["schema_version"], m["tables_version"]) == (2, 2) == (SCHEMA_VERSION - 1, TABLES_VERSION - 1)
    raw = pd.read_parquet(old / "samples.parquet")
    assert {k for k in UNITS_RENAMED if "." in k} <= set(raw["metric"])  # every renamed metric


def test_samples_read_with_todays_names_and_the_same_values(old):
    raw = pd.read_parquet(old / "samples.parquet")
    now = RunDir.open(old).table("samples")
    assert not set(now["metric"]) & set(UNITS_RENAMED)
    assert list(now["metric"]) == [UNITS_RENAMED.get(m, m) for m in raw["metric"]]
    pd.testing.assert_series_equal(now["value"], raw["value"])
    assert (now["metric"] == "node.nic_rx_bytes_per_s").sum() == (raw["metric"] == "node.nic_rx_bps").sum() > 0


@pytest.mark.parametrize("table", ["campaigns", "probes"])
def test_device_writes_read_with_todays_column(old, table):
    raw = pd.read_parquet(old / f"{table}.parquet")
    run = RunDir.open(old)
    for (was, new) in COLUMNS_RENAMED.items():
        got = run.table(table)
        assert was not in got and got[new].notna().sum() == raw[was].notna().sum() > 0
        pd.testing.assert_series_equal(got[new].astype(float), raw[was].astype(float), check_names=False)
        assert run.table(table, columns=["cell_id", new])[new].notna().sum() == raw[was].notna().sum()


def test_the_manifest_names_the_links_rate_in_bits(old):
    raw = json.loads((old / "manifest.json").read_text())["hosts"]["hosts"]["cl1"]["link"]
    (was, new), = LINK_RENAMED.items()
    link = RunDir.open(old).manifest["hosts"]["hosts"]["cl1"]["link"]
    assert link[new] == raw[was] == 1.6e9 and was not in link
    assert client_hosts(RunDir.open(old).manifest) == {"cl1": 1.6e9 / 8}


def test_the_stored_verdicts_and_the_ones_attributed_again_agree(old):
    raw = pd.read_parquet(old / "verdicts.parquet")
    rd = RunData(old)
    stored = rd.stored_verdicts
    again = pd.DataFrame(attribute_data(rd))
    key = ["cell_id", "concurrency", "direction"]
    stored, again, raw = (d.sort_values(key).reset_index(drop=True) for d in (stored, again, raw))
    assert list(again["verdict"]) == list(stored["verdict"]) == list(raw["verdict"])
    assert {"network", "storage-network"} <= set(stored["verdict"])  # the link and the OSD host's NIC
    for was_text, s_text, a_text in zip(raw["evidence"], stored["evidence"], again["evidence"], strict=True):
        was, s, a = json.loads(was_text), json.loads(s_text), json.loads(a_text)
        assert not any(k in s for k in EVIDENCE)
        for k in EVIDENCE:
            new = UNITS_RENAMED.get(k) or COLUMNS_RENAMED[k]
            if k in was:
                assert s[new] == was[k] == pytest.approx(a[new]), new
                assert (s["sources"].get(new) is None) == (was["sources"].get(k) is None)
        assert s.get("storage_nic") == was.get("storage_nic") == a.get("storage_nic")
        assert s.get("link_use") == was.get("link_use") == a.get("link_use")
        if "device_write_bytes_per_s" in s:  # a source names today's column
            assert s["sources"]["device_write_bytes_per_s"]["note"] == a["sources"]["device_write_bytes_per_s"]["note"]


def test_points_and_cells_read_as_stored(old):
    rd = RunData(old)
    m = json.loads((old / "manifest.json").read_text())
    for cid, c in m["cells"].items():  # the cells come back from the stored settings, same ids
        cell = rd.cell_objects[cid]
        assert json.loads(json.dumps(cell.settings())) == c["settings"] and cell_id(cell.settings()) == cid
        assert rd.cells.loc[cid, "label"] == c["label"]
    assert len(rd.points) == 6 and rd.points["rate"].gt(0).all()
    assert rd.network_for("write")[0] == 5e9


def test_confirmations_read_with_todays_keys(old):
    raw = json.loads((old / "confirmations.json").read_text())
    doc = update_confirmations(json.loads((old / "confirmations.json").read_text()))
    x, was = doc["confirmations"][0], raw["confirmations"][0]
    assert x["control_bytes_per_s"] == was["control_Bps"] and x["changed_bytes_per_s"] == was["changed_Bps"]
    assert [r["bytes_per_s"] for r in x["runs"]] == [r["Bps"] for r in was["runs"]]
    rows = confirmations(old, {})
    assert rows and rows[0]["control"].startswith("4.29 ±") and rows[0]["changed"].startswith("7.73 ±")
    assert update_confirmations(doc) == doc  # today's keys pass through


def test_rows_written_since_pass_through():
    """A resumed old run appends today's rows to the old ones: both come out in today's names."""
    from xcbench.store.upgrade import update_table
    df = pd.DataFrame({"metric": ["node.nic_rx_bps", "node.nic_rx_bytes_per_s", "cpu.busy"],
                       "value": [1.0, 2.0, 3.0]})
    out = update_table("samples", df.copy(), 2, {})
    assert list(out["metric"]) == ["node.nic_rx_bytes_per_s"] * 2 + ["cpu.busy"]
    camp = pd.DataFrame({"device_write_Bps": [5.0, None], "device_write_bytes_per_s": [None, 7.0]})
    out = update_table("campaigns", camp, 2, {})
    assert list(out.columns) == ["device_write_bytes_per_s"] and list(out.iloc[:, 0]) == [5.0, 7.0]
    ev = json.dumps({"network_bps": 1.0, "sources": {"x": {"column": "device_write_Bps",
                                                           "note": "pool.network_bps stays"}}})
    out = update_table("verdicts", pd.DataFrame({"evidence": [ev, None]}), 2, {})
    got = json.loads(out["evidence"][0])
    assert got["network_bytes_per_s"] == 1.0 and got["sources"]["x"]["column"] == "device_write_bytes_per_s"
    assert got["sources"]["x"]["note"] == "pool.network_bps stays" and pd.isna(out["evidence"][1])
