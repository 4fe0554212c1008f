"""A cell's id names its results in every store: the ids of layouts/*.yaml are pinned (recorded
with the code before the cell moved to its own floor) so that no refactoring changes them."""

from __future__ import annotations

import json
from pathlib import Path

from xcbench.matrix import load_matrix

ROOT = Path(__file__).resolve().parents[3]


def test_layout_cell_ids_are_the_recorded_ones():
    pinned = json.loads((ROOT / "tests" / "data" / "layout-cell-ids.json").read_text())
    now = {f.name: [c.id for c in load_matrix(f).cells] for f in sorted((ROOT / "layouts").glob("*.yaml"))}
    assert set(pinned) <= set(now)
    for name, ids in pinned.items():
        assert now[name] == ids, name
