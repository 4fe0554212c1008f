"""The report's experiment-dimensions block: groups of cells that differ only in streams, in
size class, or in origins x cores; a rate per core for the planner."""

from __future__ import annotations

import pandas as pd
import pytest

from xcbench.analysis.report.dimensions import section
from xcbench.analysis.report.render import environment
from xcbench.cell import Cell
from xcbench.figures.units import GIB

BASE = {"backend": "tmpfs", "tmpfs_size": 2 << 30, "mode": "push", "files": 8,
        "file_size": 16 << 20, "size_dist": "fixed", "concurrency": [1, 4]}


def _run(cells: dict[str, tuple[str, dict, float]]):
    objects = {cid: Cell.from_settings({**BASE, **s}, id=cid, label=label)
               for cid, (label, s, _) in cells.items()}
    points = pd.DataFrame([{"cell_id": cid, "concurrency": c, "rate": rate * c / 4}
                           for cid, (_, _, rate) in cells.items() for c in (1, 4)])
    return points, objects


def test_no_block_without_the_dimensions():
    points, cells = _run({"a": ("tmpfs 2G o1 push", {"origins": 1}, GIB)})
    assert section(points, cells) is None


def test_streams_classes_and_cores_are_grouped():
    cells = {f"s{s}": (f"tmpfs 2G o1 push s{s}", {"origins": 1, "streams": s}, s * GIB / 4)
             for s in (1, 4, 16)}
    cells.update({f"c{o}{k}": (f"tmpfs 2G o{o} push {k:g}c", {"origins": o, "cores": k},
                               o * k * 0.5 * GIB) for o in (1, 2) for k in (0.5, 1.0)})
    cells.update({cl: (f"tmpfs 2G o1 push {cl}/4", {"origins": 1, "size_class": cl, "size_scale": 4,
                                                    "file_size": fs, "size_dist": "uniform"}, r)
                  for cl, fs, r in (("small", 1 << 20, 0.1 * GIB), ("medium", 128 << 20, GIB))})
    points, objects = _run(cells)
    out = section(points, objects)
    assert out is not None
    by = {}
    for r in out["rows"]:
        by.setdefault(r["dimension"], []).append(r)
    assert [r["value"] for r in by["streams"]] == ["1", "4", "16"]
    assert {r["cells"] for r in by["streams"]} == {"tmpfs 2G o1 push"}
    assert by["streams"][-1]["rate_gbps"] == pytest.approx(4 * GIB * 8 / 1e9)  # the best level (c=4): 4 GiB/s
    assert by["streams"][-1]["rate_gib"] == 4.0  # the field older report readers use
    assert {r["cells"] for r in by["origins x cores"]} == {"tmpfs 2G push"}
    assert len(by["origins x cores"]) == 4
    small = next(r for r in by["size_class"] if r["value"] == "small /4")
    assert small["files_per_s"] == 0.1 * GIB / (1 << 20)
    # a rate per core the planner can read: here 0.5 GiB/s per core by construction
    assert {round(p["rate_per_core"] / GIB, 6) for p in out["per_core"]} == {0.5}
    assert [f["id"] for f in out["figures"]][:2] == ["fig-streams", "fig-classes"]
    assert all(f["uri"].startswith("data:image/png;base64,") for f in out["figures"])
    for name in ("report.html.j2", "report.md.j2"):  # the block's template compiles
        assert environment().get_template(name) is not None
