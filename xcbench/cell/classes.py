"""File-size classes of Fermilab's 100GE study (small 8 KB-4 MB, medium 8 MB-1 GB, large
2-8 GB) as campaign size distributions, divided by a stated ``size_scale`` where the target
is too small for the published sizes."""

from __future__ import annotations

from typing import Any

from xcbench.cell import Cell

SIZE_CLASSES: dict[str, tuple[int, int]] = {
    "small": (8 << 10, 4 << 20),
    "medium": (8 << 20, 1 << 30),
    "large": (2 << 30, 8 << 30),
}
MIN_FILE = 1 << 10  # a scaled class never goes below 1 KiB: a file must hold a tail block


def class_range(name: str, scale: int = 1) -> tuple[int, int]:
    """The (smallest, largest) file size of a class after dividing by ``scale``."""
    lo, hi = SIZE_CLASSES[name]
    return max(MIN_FILE, lo // scale), max(MIN_FILE, hi // scale)


def class_sizes(name: str, scale: int = 1) -> dict[str, Any]:
    """The campaign settings that draw sizes uniformly between the class's bounds: the
    dataset's uniform distribution is mean*(1 +- spread), so mean and spread follow from them."""
    lo, hi = class_range(name, scale)
    return {"file_size": (lo + hi) // 2, "size_dist": "uniform",
            "size_spread": (hi - lo) / (hi + lo)}


def campaign_sizes(cell: Cell) -> dict[str, Any]:
    """CampaignSpec keywords for a cell's sizes (its size class when it has one)."""
    if cell.size_class:
        return class_sizes(cell.size_class, cell.size_scale or 1)
    return {"file_size": cell.file_size, "size_dist": cell.size_dist}
