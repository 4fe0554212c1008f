"""The self-test's registry: the cells scenarios run on, and the scenarios themselves.

A scenario module (``xcbench.selftest.scenarios`` holds the built-in ones) calls
:func:`register_cell` for any cell it needs that is not registered yet and :func:`register`
for each scenario, at import. The package imports every module of ``SCENARIO_MODULES``
(xcbench/selftest/__init__.py), so ``SCENARIOS`` and ``CELLS`` hold them all in the order
they were registered (the order the self-test runs and prints them in).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xcbench.cell import PoolSpec

# (right verdicts, note) for one level of a scenario, from the evidence its cell measured
Expect = Callable[["Scenario", dict[str, Any]], tuple[tuple[str, ...], str]]
# (ok, note): a further check of one level's evidence (e.g. raw/logical bytes of the pool)
Extra = Callable[[dict[str, Any]], tuple[bool, str]]
# a scenario that makes its own runs (e.g. network: emulated hosts): called as
# own_run(cluster, quick=, out=, workdir=, stamp=, log=) -> {"checks", "runs", "seconds", "figures"}
OwnRun = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class CellDef:
    key: str  # a short name: "tmpfs", "cephfs-rep", "cephfs-ec", "rados-rep"
    backend: str
    entry: tuple[tuple[str, Any], ...]  # its matrix entry under backends.<backend>
    pool: str | None = None
    with_: tuple[str, ...] = ()  # cells that must run in the same run (an EC cell's twin)
    # a file size of its own ("256K"; None: the self-test's): the cell goes into the matrix as
    # an include entry, told apart from a same-backend, same-pool cell by its file size
    file_size: str | None = None

    @property
    def ident(self) -> tuple[str, str | None]:
        """(backend, pool label): what tells its cell apart in a matrix."""
        return self.backend, _label(self.pool) if self.pool else None


def _label(pool: str) -> str:
    return PoolSpec.parse(pool).label


@dataclass(frozen=True)
class Scenario:
    """A bottleneck made on purpose and the verdicts that are right for it.

    ``cap``: the role the scenario puts under a CPU quota in its own run ("gateway", "osd",
    "client"; capping.CapHooks makes the cgroup); None: judged on the uncapped run. ``needs``: what
    is missing to run it here (it is listed as "not yet", never run). ``expect``: the right
    verdicts at one level when they depend on what was measured (default: ``expected``);
    ``extra``: a further check of each level's evidence; ``own_run``: the scenario makes and
    judges its own runs (xcbench.selftest.network), its ``cells`` stay empty.
    """
    name: str
    what: str  # one line: the bottleneck made
    expected: tuple[str, ...]  # verdicts that are right (storage: bandwidth or IOPS)
    cells: tuple[str, ...]  # CellDef keys it is checked on
    cap: str | None = None
    needs: str | None = None
    quick_cells: tuple[str, ...] | None = None  # the cells of --quick (default: cells)
    expect: Expect | None = None
    extra: Extra | None = None
    own_run: OwnRun | None = None  # runs of its own instead of the uncapped/capped ones
    # a decoy cap: the quota is scenarios.DECOY x the most the role could have used uncapped (it must not
    # bind, and the verdict must not name the role); else fraction x the least it used
    decoy: bool = False
    # "bandwidth" | "iops": the OSDs' disk writes throttled (cgroup v1 blkio, xcbench.system.blkio) instead
    # of a CPU quota (cap "osd"); the limit is derived from the uncapped cell (storage_io)
    io: str | None = None
    # proven by intervention as well as named (xcbench.selftest.intervene): "half-host", every
    # role under one CPU quota at half the host's cores; the rate must fall in proportion
    intervene: str | None = None
    uses_cluster: bool = False  # an own_run scenario that runs on the session's cluster (confirm cases)

    def cells_of(self, quick: bool) -> tuple[str, ...]:
        return self.quick_cells if quick and self.quick_cells is not None else self.cells


SCENARIOS: dict[str, Scenario] = {}
CELLS: dict[str, CellDef] = {}


def register_cell(cell: CellDef) -> CellDef:
    """Add a cell (the same definition twice is fine; another one under a taken key is not)."""
    old = CELLS.get(cell.key)
    if old is not None and old != cell:
        raise ValueError(f"selftest: cell {cell.key!r} is already registered differently")
    CELLS[cell.key] = cell
    return cell


def register(scenario: Scenario, *, replace: bool = False) -> Scenario:
    """Add a scenario; its cells must be registered first. ``replace``: take the place of a
    scenario of that name (e.g. a "not yet" placeholder), keeping its place in the order."""
    if scenario.name in SCENARIOS and not replace:
        raise ValueError(f"selftest: scenario {scenario.name!r} is already registered")
    missing = [k for k in (*scenario.cells, *(scenario.quick_cells or ())) if k not in CELLS]
    if missing:
        raise ValueError(f"selftest: scenario {scenario.name!r}: unknown cell {missing[0]!r}")
    if scenario.quick_cells is not None and not set(scenario.quick_cells) <= set(scenario.cells):
        raise ValueError(f"selftest: scenario {scenario.name!r}: quick_cells not in its cells")
    SCENARIOS[scenario.name] = scenario
    return scenario
