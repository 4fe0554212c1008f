"""The built-in known-answer scenarios: a bottleneck made on purpose, and the verdict it must get.

Two runs of the real chain make every answer:

- the **uncapped** run (tmpfs, CephFS on an unprotected replicated pool, and for EC the same
  layout on an EC 2+1 pool on the same OSDs). On this 2-core box the tmpfs cell's gateway and
  driver share one host and its CPU runs out: ``host-cpu``. The CephFS cells are no known
  host-cpu answer: their rate may be set by the OSDs' disks, which no CPU figure sees. The EC
  cell is ``ec-overhead`` at each level where it is >= 15 % slower than the replicated cell, and the raw/logical bytes of both pools are measured.
  The same run says how much CPU each role uses uncapped, cell by cell and level by level.
- one **capped** run per role: the role is put in a cgroup (xcbench.system.cgroups) with a CPU quota
  of ``fraction`` x the least it used uncapped at any level of that cell. The quota is derived,
  never chosen to make the answer come out: the rules must hold for limits nobody tuned.

Each scenario is checked at every concurrency level it runs; each level is time-based (Sizes),
long enough for its steady window to hold many role samples. The network scenario needs a
second host (the multi-host issue) and is listed as "not yet" until its module replaces the
placeholder (see xcbench/selftest/__init__.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from xcbench.analysis.attribution import NEAR, VERDICTS
from xcbench.selftest.registry import CELLS, SCENARIOS, CellDef, Scenario, register, register_cell

STORAGE = ("storage-bandwidth", "storage-iops")
REP_POOL = "rep1"  # unprotected: replicated on the same OSDs, one copy (raw/logical 1)
EC_POOL = "ec2+1"
LAYOUT = {"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"}
__all__ = ["CELLS", "FULL", "QUICK", "SCENARIOS", "STORAGE", "Check", "CellDef", "Scenario", "Sizes",
           "expectation", "expected_text", "ident", "matrix_yaml", "raw_check"]


def ident(cell: Any) -> tuple[str, str | None]:
    return cell.backend, cell.pool.label if cell.pool is not None else None


def _ceph(pool: str) -> tuple[tuple[str, Any], ...]:
    return (("layouts", [dict(LAYOUT)]), ("pools", [pool]))


@dataclass(frozen=True)
class Sizes:
    """The levels of the self-test's runs. Each level is time-based (campaign.duration): it
    lasts at least ``min`` s, so its steady window holds many role samples (0.5 s apart), and
    the dataset is cycled, so the level's length does not depend on how fast the cell is."""
    levels: tuple[int, ...]
    file_size: str
    files: int
    duration: tuple[str, str]  # (min, max)
    window: str  # the steady window: the last ``window`` s of the level
    points: int
    tolerance: str = "10%"

    def campaign(self) -> dict[str, Any]:
        return {"duration": {"min": self.duration[0], "max": self.duration[1]},
                "steady": {"rule": "autoterm", "window": self.window, "points": self.points,
                           "tolerance": self.tolerance}}


# At least two transfers in flight per core of this 2-core box: the uncapped scenario's known
# answer is host-cpu only when its load can exhaust the host. With 2 transfers on an idle box the
# host was 84 % busy (gateway 1.3 + client 0.3 cores): not exhausted, so not a known answer.
QUICK = Sizes(levels=(4, 8), file_size="16M", files=16, duration=("8s", "14s"), window="6s", points=3)
FULL = Sizes(levels=(4, 8, 16), file_size="32M", files=32, duration=("15s", "30s"), window="12s",
             points=4)


def _ec_expect(s: Scenario, ev: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """Where the EC cell is not >= 15 % slower than its replicated twin there is no EC overhead
    to find: any verdict but ec-overhead is right (what the uncapped box itself gives is the
    host-cpu scenario's question, on its own cells)."""
    e = ev.get("ec_ratio")
    if not _finite(e):
        return s.expected, "no replicated twin measured at this level"
    if e <= NEAR:
        return s.expected, f"EC cell at {e * 100:.0f} % of the replicated one"
    return (tuple(v for v in VERDICTS if v != "ec-overhead"),
            f"EC cell at {e * 100:.0f} % of the replicated one: not slower, so not ec-overhead")


def raw_check(ev: dict[str, Any], tolerance: float = 0.2) -> tuple[bool, str]:
    """The pool's measured raw/logical bytes against (k+m)/k or the replica count."""
    got, want = ev.get("raw_per_logical"), ev.get("raw_expected")
    if not _finite(want):
        return True, ""
    if not _finite(got):
        return False, f"raw/logical not measured (expected {want:g})"
    ok = abs(got - want) <= tolerance * want
    return ok, f"raw/logical {got:.2f} (expected {want:g})"


for _cell in (
    CellDef("tmpfs", "tmpfs", (("size", ["2G"]),)),
    CellDef("cephfs-rep", "cephfs", _ceph(REP_POOL), REP_POOL),
    CellDef("cephfs-ec", "cephfs", _ceph(EC_POOL), EC_POOL, with_=("cephfs-rep",)),
    CellDef("rados-rep", "rados", _ceph(REP_POOL), REP_POOL),
):
    register_cell(_cell)

for _s in (
    Scenario("gateway", "the gateway's xrootd/cmsd in a cgroup with a CPU quota", ("gateway",),
             ("tmpfs", "cephfs-rep"), cap="gateway", quick_cells=("tmpfs",)),
    Scenario("storage", "the OSDs in a cgroup with a CPU quota", STORAGE,
             ("cephfs-rep", "rados-rep"), cap="osd", quick_cells=("cephfs-rep",)),
    Scenario("client", "the campaign driver (this process) in a cgroup with a CPU quota", ("client",),
             ("tmpfs",), cap="client"),
    Scenario("ec-overhead", "EC 2+1 vs an unprotected replicated pool, same layout, same OSDs",
             ("ec-overhead",), ("cephfs-ec",), expect=_ec_expect, extra=raw_check),
    Scenario("host-cpu", "nothing capped: every role shares this host's cores", ("host-cpu",),
             ("tmpfs",)),
    # a placeholder: the multi-host issue's module registers the real one (replace=True)
    Scenario("network", "a shaped link between client and gateway hosts", ("network",), (),
             needs="a second (emulated) host: comes with the multi-host issue"),
):
    register(_s)


def matrix_yaml(cells: list[CellDef], sizes: Sizes, name: str) -> dict[str, Any]:
    """A matrix with exactly these cells (one layout; push; no probe; time-based levels)."""
    backends: dict[str, dict[str, Any]] = {}
    for c in cells:
        b = backends.setdefault(c.backend, {})
        for key, values in c.entry:
            b.setdefault(key, [])
            b[key] += [v for v in values if v not in b[key]]
    return {"name": name, "description": "xcbench selftest",
            "defaults": {"origins": [1], "modes": ["push"], "concurrency": list(sizes.levels),
                         "file_size": sizes.file_size, "files": sizes.files, "repeats": 1,
                         "gateway": {"async": False, "buffers_maxbsz": "16M"},
                         "campaign": sizes.campaign()},
            "backends": backends}


@dataclass
class Check:
    """One (scenario, cell, level): what was expected, what the verdict said, and why."""
    scenario: str
    cell: str
    cell_id: str
    level: int
    expected: tuple[str, ...]
    verdict: str
    reason: str
    ok: bool
    note: str = ""
    cap: dict[str, Any] | None = None
    roles: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)


def _finite(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and math.isfinite(v)


def expectation(s: Scenario, ev: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """(right verdicts, note) for one level of a scenario, from what the cell measured."""
    return s.expect(s, ev) if s.expect is not None else (s.expected, "")


def expected_text(expected: tuple[str, ...]) -> str:
    """'gateway', 'storage-bandwidth or storage-iops', or 'not ec-overhead'."""
    missing = [v for v in VERDICTS if v not in expected]
    if len(expected) > 2 and len(missing) == 1:
        return f"not {missing[0]}"
    return " or ".join(expected)
