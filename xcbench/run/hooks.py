"""How a caller extends a run without subclassing the Runner: a RunHooks object in its options.

The Runner (xcbench.run.runner) calls each method at one point of a cell's life; every method
here does nothing (or says "measure it"), so ``RunOptions()`` runs exactly as `xcbench run`
does. The self-test's hooks (xcbench.selftest.capping.CapHooks) cap a role of each cell, take
the uncapped run's baseline and probes and count the OSDs' device writes through them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xcbench.backends.base import Target
    from xcbench.cell import Cell
    from xcbench.gateway import Gateway
    from xcbench.store.rundir import RunDir

# a cell's storage device's cumulative (write IOs, write bytes)
DeviceCounter = Callable[[], tuple[int, int]]


class RunHooks:
    """No-op hooks: a run as `xcbench run` runs it."""

    def baseline_rows(self) -> list[dict[str, Any]] | None:
        """Rows that stand for the run's iperf3 baseline (they are stored as its own); None or
        none: the baseline is measured."""
        return None

    def probe_rows(self, cell: Cell) -> tuple[list[dict[str, Any]], str] | None:
        """(rows that stand for the cell's fio probe, where they come from: the cell's
        ``probes_from``); None: the probe runs."""
        return None

    def cell_ready(self, cell: Cell, target: Target, gateway: Gateway) -> None:
        """The cell's gateway is up and its target verified; its telemetry starts next."""

    def device_counter(self, cell: Cell) -> DeviceCounter | None:
        """The cell's storage device's write counter, where the caller can count the IOs the
        cell costs there; None: not counted. Counted, the probe's write jobs and each level's
        campaign row carry ``device_write_iops`` and ``device_write_bytes_per_s``."""
        return None

    def level(self, cell: Cell, concurrency: int, repeat: int) -> AbstractContextManager[Any]:
        """A context around one level's campaign (entered before it starts, left after it
        ended, however it ended)."""
        return contextlib.nullcontext()

    def cell_end(self, cell: Cell, run: RunDir) -> None:
        """The cell ended, however it ended (complete, failed, interrupted); after its gateway
        stopped. A warning for the user goes to ``run.warn``."""
