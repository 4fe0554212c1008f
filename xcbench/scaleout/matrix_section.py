"""The transfer engine's part of a matrix (xcbench.matrix.sections): ``campaign: engine`` and
``fts`` as written, and per cell what engine fts3 needs."""

from __future__ import annotations

from xcbench.cell import Cell
from xcbench.matrix import sections
from xcbench.scaleout.engine import cell_problems, engine_problems


def cell_engine(cell: Cell) -> list[tuple[str, str]]:
    return [(f"campaign.{f}", why) for f, why in cell_problems(cell.campaign, cell.mode)]


sections.register("campaign.engine", engine_problems)
sections.register("cell.engine", cell_engine)
