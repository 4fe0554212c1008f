"""Result store: manifest schema (refuse newer, upgrade older), JSONL -> Parquet, cells, lookup."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.support.synthrun import SynthCell
from xcbench.cell.layout import layout_xattrs
from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.store import fingerprint
from xcbench.store.catalog import list_runs, resolve_run
from xcbench.store.rundir import SCHEMA_VERSION, RunDir, write_json


def _run(tmp_path, name="r1", **kw):
    return RunDir.create(tmp_path, name=name, fingerprint=kw.pop("fingerprint", False), **kw)


def test_create_writes_a_manifest_with_the_schema_and_fingerprint(tmp_path):
    run = RunDir.create(tmp_path, name="r", matrix={"name": "quick", "path": "layouts/quick.yaml"})
    m = json.loads((run.path / "manifest.json").read_text())
    assert m["schema_version"] == SCHEMA_VERSION == 3
    assert m["run_id"] == "r" and m["status"] == "running" and m["end"] is None
    assert m["matrix"]["name"] == "quick"
    v = m["fingerprint"]["versions"]
    # the real tools of this machine (Debian 12: ceph 16.2, fio 3.33, xrootd 5.5)
    assert v["ceph"].startswith("16.") and v["fio"].startswith("3.") and v["xrootd"].startswith("5.")
    assert v["xcbench"] and m["fingerprint"]["host"]["cpus"] >= 1
    assert len(m["fingerprint"]["versions_digest"]) == 64


def test_same_name_twice_gets_a_suffix(tmp_path):
    assert _run(tmp_path, "x").path.name == "x"
    assert _run(tmp_path, "x").path.name == "x-2"


def test_append_then_finalize_to_parquet_with_nested_values_as_json(tmp_path):
    run = _run(tmp_path)
    run.append("samples", [
        {"cell_id": "c", "wall": 1.0, "metric": "pool.stored", "value": 1, "labels": {"pool": "xcb-rep1"}},
        {"cell_id": "c", "wall": 2.0, "metric": "cpu.busy", "value": 0.5, "labels": {}},
    ])
    before = run.table("samples")
    assert list(before["labels"]) == ['{"pool": "xcb-rep1"}', "{}"]
    run.finalize()
    assert (run.path / "samples.parquet").exists()
    after = run.table("samples")
    assert list(after["labels"]) == ['{"pool": "xcb-rep1"}', "{}"]
    assert after["value"].tolist() == [1.0, 0.5]
    m = RunDir.open(run.path).manifest
    assert m["status"] == "complete" and m["end"]


def test_columns_whose_type_changes_between_rows_still_convert(tmp_path):
    run = _run(tmp_path)
    run.append("campaigns", [{"cell_id": "a", "settings": {"x": 1}, "rate": 1},
                             {"cell_id": "b", "settings": {"x": "y"}, "rate": "n/a"}])
    run.finalize()
    df = run.table("campaigns")
    assert df["settings"].tolist() == ['{"x": 1}', '{"x": "y"}']
    assert df["rate"].tolist() == ["1", "n/a"]  # mixed scalars are kept, as text


def test_missing_tables_and_columns_come_back_empty_with_the_declared_columns(tmp_path):
    run = _run(tmp_path)
    run.append("verdicts", [{"cell_id": "a", "verdict": "gateway", "reason": "r", "evidence": "{}"}])
    run.finalize()
    v = run.table("verdicts")  # an older producer without the concurrency column
    assert "concurrency" in v.columns and v["concurrency"].isna().all()
    assert run.table("probes").empty and "iops" in run.table("probes").columns


def test_open_refuses_a_newer_schema_clearly(tmp_path):
    run = _run(tmp_path)
    run.state.schema_version = SCHEMA_VERSION + 1
    run.save_manifest()
    with pytest.raises(XcbError, match=r"schema_version 4 is newer than this xcbench understands \(3\); upgrade"):
        RunDir.open(run.path)


def test_open_upgrades_a_schema_1_manifest(tmp_path):
    d = tmp_path / "old"
    (d / "records").mkdir(parents=True)
    write_json(d / "manifest.json", {"schema_version": 1, "run_id": "old", "start": "s", "end": "e",
                                     "status": "complete", "matrix": None,
                                     "cells": {"abc": {"status": "complete"}, "def": {}}})
    run = RunDir.open(d)
    m = run.manifest
    assert m["schema_version"] == SCHEMA_VERSION and m["upgraded_from"] == 1
    assert m["fingerprint"] == {}
    assert m["cells"]["def"]["status"] == "complete" and m["cells"]["def"]["label"] == "def"
    on_disk = json.loads((d / "manifest.json").read_text())
    assert on_disk["schema_version"] == 1  # reading does not rewrite the run


def test_open_upgrades_a_schema_0_manifest_with_a_list_of_cells(tmp_path):
    d = tmp_path / "older"
    d.mkdir()
    write_json(d / "manifest.json", {"cells": [{"id": "abc", "label": "tmpfs"}]})
    m = RunDir.open(d).manifest
    assert m["upgraded_from"] == 0 and m["run_id"] == "older"
    assert m["cells"]["abc"]["label"] == "tmpfs" and m["cells"]["abc"]["status"] == "unknown"


@pytest.mark.parametrize("content, msg", [(None, "not a run directory"),
                                          ("[1]", "not a run manifest"),
                                          ("{", "not valid JSON"),
                                          ('{"schema_version": "two"}', "is not a version")])
def test_open_rejects_what_is_not_a_run(tmp_path, content, msg):
    if content is not None:
        (tmp_path / "manifest.json").write_text(content)
    with pytest.raises(XcbError, match=msg):
        RunDir.open(tmp_path)


def test_cells_status_and_fingerprint(tmp_path):
    run = _run(tmp_path)
    cell = SynthCell("cephfs", (4 << 20, 1, 4 << 20), "ec2+1").cell()
    run.register_cells([cell])
    c = run.cells[cell.id]
    assert c.status == "pending" and c.settings["pool"]["k"] == 2 and c.label == cell.label
    run.set_cell(cell.id, status="running")
    assert run.cells[cell.id].start
    run.set_cell(cell.id, status="failed", error="fio: EFBIG")
    assert run.cells[cell.id].end and run.cells[cell.id].error == "fio: EFBIG"
    with pytest.raises(XcbError, match=f"cell {cell.id}: status: 'done' is not one of"):
        run.set_cell(cell.id, status="done")
    fp1 = run.set_cell_fingerprint(cell.id, layout={"stripe_unit": 4 << 20}, configs={"xrootd.cfg": "ab"})
    fp2 = run.set_cell_fingerprint(cell.id, pool={"name": "xcb-ec2-1"})
    assert fp2["layout"] == {"stripe_unit": 4 << 20} and fp2["pool"]["name"] == "xcb-ec2-1"
    assert fp1["digest"] != fp2["digest"] and len(fp2["digest"]) == 64
    assert RunDir.open(run.path).manifest["cells"][cell.id]["fingerprint"]["digest"] == fp2["digest"]


def test_a_failed_run_marks_unfinished_cells_interrupted(tmp_path):
    run = _run(tmp_path)
    run.set_cell("a", status="complete")
    run.set_cell("b", status="running")
    run.set_cell("c", status="pending")
    run.finalize("interrupted")
    cells = RunDir.open(run.path).cells
    assert [cells[k].status for k in "abc"] == ["complete", "interrupted", "interrupted"]


def test_list_and_resolve_runs(tmp_path):
    a, b = _run(tmp_path, "20250101T000000Z"), _run(tmp_path, "20250102T000000Z")
    (tmp_path / "not-a-run").mkdir()
    assert [r.run_id for r in list_runs(tmp_path)] == [a.run_id, b.run_id]
    assert resolve_run("latest", tmp_path).run_id == b.run_id
    assert resolve_run("20250101", tmp_path).run_id == a.run_id
    assert resolve_run(str(b.path)).run_id == b.run_id
    with pytest.raises(XcbError, match="ambiguous"):
        resolve_run("2025", tmp_path)
    with pytest.raises(XcbError, match="not a run directory, nor a run id"):
        resolve_run("nope", tmp_path)
    with pytest.raises(XcbError, match="no such result store"):
        list_runs(tmp_path / "missing")


def test_runs_list_and_show_commands(tmp_path, capsys):
    run = _run(tmp_path, "r1", matrix={"name": "quick"})
    run.register_cells([SynthCell("tmpfs").cell()])
    run.append("transfers", [{"cell_id": "x", "file_size": 1}] * 3)
    run.finalize()
    assert main(["runs", "list", "--store", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "r1" in out and "quick" in out and "1 pending" in out
    assert main(["runs", "show", "r1", "--store", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "tmpfs o1 push" in out and "transfers" in out and " 3" in out
    assert "schema   3; tables 3\n" in out  # today's: read as written
    assert main(["runs", "show", "zz", "--store", str(tmp_path)]) == 2
    assert "run zz: not a run directory" in capsys.readouterr().err


def test_fingerprint_helpers(tmp_path):
    assert layout_xattrs(tmp_path) is None  # not on CephFS
    cfg = tmp_path / "xrootd.cfg"
    cfg.write_text("xrd.port 1094\n")
    h = fingerprint.config_hashes([cfg, tmp_path / "gone.cfg"])
    assert len(h["xrootd.cfg"]) == 64 and h["gone.cfg"] is None
    fp = fingerprint.cell_fingerprint(layout=None, configs=h)
    # rendered configs (ports, temp paths) are recorded, not hashed
    assert fp["digest"] == fingerprint.digest({k: v for k, v in fp.items() if k not in ("digest", "configs")})
    assert pd.notna(fingerprint.host_info()["kernel"])
