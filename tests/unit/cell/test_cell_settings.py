"""A cell comes back from its stored settings (Cell.from_settings inverts Cell.settings): every
cell of layouts/*.yaml through the manifest's JSON, with the same id; a run's RunData rebuilds its
cells that way and names pools and layouts with the cell's own code."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from xcbench.analysis.verdicts.run_data import cell_frame, stored_cells
from xcbench.cell import Cell, Layout, Protection
from xcbench.errors import XcbError
from xcbench.matrix import load_matrix
from xcbench.matrix.expand import cell_id

ROOT = Path(__file__).resolve().parents[3]
LAYOUTS = sorted((ROOT / "layouts").glob("*.yaml"))


@pytest.mark.parametrize("path", LAYOUTS, ids=[p.name for p in LAYOUTS])
def test_every_layout_cell_round_trips_through_the_manifest(path):
    cells = load_matrix(path).cells
    assert cells
    for c in cells:
        stored = json.loads(json.dumps(c.settings()))  # as manifest.json holds them
        back = Cell.from_settings(stored, id=c.id, label=c.label, source=c.source)
        assert back == c
        assert back.settings() == c.settings() and cell_id(back.settings()) == c.id


def test_settings_of_another_shape_name_the_field():
    s = load_matrix(ROOT / "layouts" / "quick.yaml").cells[-1].settings()
    with pytest.raises(ValueError, match="^colour: not a setting"):
        Cell.from_settings({**s, "colour": "blue"})
    with pytest.raises(ValueError, match="^pool: "):
        Cell.from_settings({**s, "pool": {"kind": "erasure", "k": 0, "m": 1}})
    with pytest.raises(ValueError, match="^layout: "):
        Cell.from_settings({**s, "layout": {"stripe_unit": 65536}})
    with pytest.raises(ValueError, match="^backend: missing"):
        Cell.from_settings({k: v for k, v in s.items() if k != "backend"})
    for key in ("backend", "mode", "direction", "security"):  # a choice: one of the cell's own
        with pytest.raises(ValueError, match=f"^{key}: 'sideways' is not one of "):
            Cell.from_settings({**s, key: "sideways"})


def _manifest(**cells) -> dict:
    return {"cells": {cid: {"label": f"cell {cid}", "status": "complete", "settings": s}
                      for cid, s in cells.items()}}


def test_run_data_names_pools_and_layouts_with_the_cells_code():
    ec = Cell("", "", "cephfs", layout=Layout(1 << 20, 2, 4 << 20), pool=Protection("erasure", k=8, m=3))
    rep = Cell("", "", "rados", layout=Layout(4 << 20, 1, 4 << 20), pool=Protection("replicated", size=2))
    tmp = Cell("", "", "tmpfs", tmpfs_size=1 << 30)
    m = _manifest(e=ec.settings(), r=rep.settings(), t=tmp.settings(), old={})
    cells = stored_cells(m, "run x")
    assert set(cells) == {"e", "r", "t"}  # a cell stored without settings is not rebuilt
    assert cells["e"].pool == ec.pool and cells["e"].label == "cell e" and cells["e"].id == "e"
    f = cell_frame(m, cells, {"seen-only"})
    assert f.loc["e", ["pool", "pool_label", "layout"]].tolist() == ["xcb-ec8-3", "ec8+3",
                                                                     "su=1M sc=2 os=4M"]
    assert f.loc["e", "raw_ratio_expected"] == pytest.approx(11 / 8)
    assert f.loc["r", ["pool", "pool_label", "raw_ratio_expected"]].tolist() == ["xcb-rep2", "rep2", 2.0]
    assert pd.isna(f.loc["t", "pool"]) and f.loc["t", "layout"] == "" and f.loc["t", "pool_label"] == ""
    assert math.isnan(f.loc["seen-only", "raw_ratio_expected"]) and f.loc["old", "status"] == "complete"


def test_a_manifest_cell_that_is_not_a_cell_is_one_line():
    bad = {**Cell("", "", "cephfs", layout=Layout(1 << 20, 1, 1 << 20),
                  pool=Protection("replicated")).settings(), "pool": {"kind": "striped"}}
    with pytest.raises(XcbError, match=r"^run x: manifest.json: cell b: settings: pool: "):
        stored_cells(_manifest(b=bad), "run x")
