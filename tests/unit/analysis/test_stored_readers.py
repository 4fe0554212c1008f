"""The readers of a run's cells give the same figures from the stored runs (tests/data/runs/*)
as when they were written: tests/data/runs/readers.json holds what each reader gave, written
by ``python tests/unit/analysis/test_stored_readers.py`` with the code of the commit that added
it (each reader then parsed the manifest's settings dicts), before they took the cells
RunData.cell_objects rebuilds (Cell.from_settings).

The readers: the run's cell table (RunData.cells), campaign directions (a campaign without its
row takes its cell's), `xcbench compare` (a contender whose cells changed: one keeps its label,
one changes one setting and its label), the report's experiment dimensions, and the
calibration of `plan` (curve, gateway CPU per GB by checksum kind, rate per core).
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from xcbench.analysis.report import dimensions
from xcbench.analysis.verdicts.compare import compare_data
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.matrix.expand import cell_id
from xcbench.plan.calibrate import load_calibration

RUNS = Path(__file__).resolve().parents[2] / "data" / "runs"
GOLDEN = RUNS / "readers.json"
COMPARED = ("cell_id", "concurrency", "direction", "label", "base_rate", "contender_rate", "pct",
            "base_verdict", "contender_verdict", "config_fields", "only_in")


def stored_runs() -> list[Path]:
    return sorted(p.parent for p in RUNS.glob("*/manifest.json"))


def contender(src: Path, dest: Path) -> Path:
    """A copy of ``src`` whose first cell has another gateway tunable (its label kept) and whose
    second repeats once more (its label says so): both change id, every table follows."""
    shutil.copytree(src, dest)
    m = json.loads((dest / "manifest.json").read_text())
    first, second = sorted(c for c, v in m["cells"].items() if v.get("settings"))[:2]
    new = {}
    for cid, change, suffix in ((first, {"gateway": {"buffers_maxbsz": "2M"}}, ""),
                                (second, {"repeats": "+1"}, " (+1 repeat)")):
        c = m["cells"].pop(cid)
        s = dict(c["settings"])
        for k, v in change.items():
            s[k] = s[k] + 1 if v == "+1" else {**(s.get(k) or {}), **v}
        new[cid] = cell_id(s)
        m["cells"][new[cid]] = {**c, "settings": s, "label": c["label"] + suffix}
    (dest / "manifest.json").write_text(json.dumps(m, indent=1))
    for f in dest.glob("*.parquet"):
        df = pd.read_parquet(f)
        if "cell_id" in df:
            df["cell_id"] = df["cell_id"].replace(new)
            df.to_parquet(f, index=False)
    return dest


def figures(path: Path, tmp: Path) -> dict[str, Any]:
    rd = RunData(path)
    other = RunData(contender(path, tmp / path.name))
    df = dimensions.frame(rd.points, rd.cell_objects, rd.campaigns)
    dims: dict[str, Any] = {"frame": [], "groups": {}, "per_core": []}
    if len(df):
        dims = {"frame": df.drop(columns=["settings"]).to_dict("records"),
                "groups": {axis: {label: sorted(g["cell_id"]) for label, g in
                                  dimensions._groups(df, axis).items()}
                           for axis in dimensions.AXES if df[axis].notna().any()},
                "per_core": dimensions.rate_per_core(df)}
    cal = load_calibration([rd]).to_dict()
    cal.pop("runs")
    return _plain({
        "cells": rd.cells.to_dict("records"),
        "directions": rd.directions,
        "compare": [{k: r[k] for k in COMPARED} for r in compare_data(rd, other)],
        "dimensions": dims,
        "calibration": cal,
    })


def _plain(x: Any) -> Any:
    """JSON's view of a figure (tuples as lists, numpy scalars as Python's)."""
    return json.loads(json.dumps(x, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


def same(a: Any, b: Any, where: str = "") -> list[str]:
    """Where ``a`` and ``b`` differ (floats to 1e-9, NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: {'missing' if k not in b else 'extra'}" for k in set(a) ^ set(b)]
        return out + [d for k in a if k in b for d in same(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items, now {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in same(x, y, f"{where}[{i}]")]
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9):
            return []
    return [] if a == b else [f"{where}: {a!r}, now {b!r}"]


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


def test_every_stored_run_has_its_figures(golden):
    assert sorted(golden) == [p.name for p in stored_runs()]


@pytest.mark.parametrize("path", stored_runs(), ids=lambda p: p.name)
def test_the_readers_give_the_stored_runs_figures(path, golden, tmp_path):
    now = figures(path, tmp_path)
    assert not same(golden[path.name], now, path.name)
    if path.name == "dimensions":  # what each reader has to find there
        assert set(now["dimensions"]["groups"]) == {"streams", "size_class", "cores"}
        assert {(g["checksum"], g["mode"], g.get("security", "none")) for g in now["calibration"]["gateway_cpu"]} >= {
            ("on-the-fly", "tpc", "none"), ("read-back", "push", "tls"), ("none", "push", "none")}
        assert len(now["calibration"]["rate_per_core"]) == 2
        assert any("not held by its quota" in n for n in now["calibration"]["notes"])
        assert sorted(set(now["directions"].values())) == ["read", "write"]
    changed = sorted(tuple(r["config_fields"]) for r in now["compare"] if r["config_fields"])
    assert set(changed) == {("settings.gateway",), ("settings.repeats",)}


def main() -> None:
    import tempfile
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in stored_runs():
            out[path.name] = figures(path, Path(tmp))
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
