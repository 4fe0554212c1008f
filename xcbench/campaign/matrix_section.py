"""The campaign's part of a matrix (xcbench.matrix.sections): its ``campaign:`` values, and
per cell the time-based levels, the reads and the driver's memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xcbench.campaign.access import read_problems
from xcbench.campaign.spec import check_campaign_settings, level_problems, memory_problem
from xcbench.cell import Cell
from xcbench.matrix import sections


def campaign_values(section: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every value finite and in range; unknown keys are the matrix schema's to report."""
    return check_campaign_settings(dict(section), unknown=False)


def cell_levels(cell: Cell) -> list[tuple[str, str]]:
    return [(f"campaign.{f}", why) for f, why in
            level_problems(cell.campaign, cell.files, max(cell.concurrency, default=1))]


def cell_dataset(cell: Cell) -> list[tuple[str, str]]:
    """Direction and reads, then the driver's memory on this host (files x concurrency)."""
    mem = memory_problem(cell.files, max(cell.concurrency, default=1))
    return read_problems(cell) + ([mem] if mem is not None else [])


sections.register("campaign", campaign_values)
sections.register("cell.levels", cell_levels)
sections.register("cell.dataset", cell_dataset)
