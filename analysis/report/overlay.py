"""`xcbench report A B`: the runs overlaid in one throughput-vs-concurrency figure (each run its
own line and marker, each point its verdict's colour), ahead of each run's own report."""

from __future__ import annotations

from typing import Any

import pandas as pd

from xcbench.analysis.report import scaling
from xcbench.analysis.report.overview import TARGET_BYTES_PER_S
from xcbench.cell import BACKENDS


def cells_of(runs: list[Any]) -> pd.DataFrame:
    """Every run's cells once (a cell id is the hash of its settings: the same cell in two runs
    of one matrix), in the report's reading order: tmpfs, cephfs, rados, then by label."""
    cells = pd.concat([rd.cells for rd in runs])
    cells = cells[~cells.index.duplicated(keep="first")]
    rank = {b: i for i, b in enumerate(BACKENDS)}
    return cells.assign(_r=cells["backend"].map(rank).fillna(len(rank))) \
        .sort_values(["_r", "label"], kind="stable").drop(columns="_r")


def section(runs: list[Any], inputs: list[tuple[str, pd.DataFrame, dict[str, Any]]]) -> dict[str, Any] | None:
    """{id, title, uri, caption} of the overlay; None for one run or no point."""
    if len(inputs) < 2:
        return None
    uri = scaling.overlay(inputs, cells_of(runs), TARGET_BYTES_PER_S)
    if not uri:
        return None
    names = ", ".join(n for n, _, _ in inputs)
    return {"id": "fig-overlay", "title": f"Runs overlaid: steady rate vs concurrency ({names})", "uri": uri,
            "caption": f"Each run's chain in its own line and marker (legend); each point in its "
                       f"verdict's colour and labelled with it; a hollow diamond on the ceiling that "
                       f"decided the verdict; the ceiling lines are those of the first run, "
                       f"{inputs[0][0]}. Cells matched by id (the hash of their settings)."}
