"""Known-answer scenarios: a bottleneck made on purpose, and the verdict it must get.

Two runs of the real chain make every answer:

- the **uncapped** run (tmpfs, CephFS on an unprotected replicated pool, and for EC the same
  layout on an EC 2+1 pool on the same OSDs). On this 2-core box the tmpfs cell's gateway and
  driver share one host and its CPU runs out: ``host-cpu``. The CephFS cells are no known
  host-cpu answer: their rate may be set by the OSDs' disks, which no CPU figure sees. The EC cell is ``ec-overhead`` at each level where it is >= 15 %
  slower than the replicated cell, and the raw/logical bytes of both pools are measured.
  The same run says how much CPU each role uses uncapped, cell by cell and level by level.
- one **capped** run per role: the role is put in a cgroup (xcbench.cgroups) with a CPU quota
  of ``fraction`` x the least it used uncapped at any level of that cell. The quota is derived,
  never chosen to make the answer come out: the rules must hold for limits nobody tuned.

Each scenario is checked at every concurrency level it runs. The network scenario needs a
second host (the multi-host issue) and is listed as "not yet".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from xcbench.analysis.attribution import NEAR, VERDICTS

STORAGE = ("storage-bandwidth", "storage-iops")
REP_POOL = "rep1"  # unprotected: replicated on the same OSDs, one copy (raw/logical 1)
EC_POOL = "ec2+1"
LAYOUT = {"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"}


@dataclass(frozen=True)
class CellDef:
    key: str  # a short name: "tmpfs", "cephfs-rep", "cephfs-ec", "rados-rep"
    backend: str
    entry: tuple[tuple[str, Any], ...]  # its matrix entry under backends.<backend>
    pool: str | None = None

    @property
    def ident(self) -> tuple[str, str | None]:
        """(backend, pool label): what tells its cell apart in a matrix."""
        return self.backend, _label(self.pool) if self.pool else None


def ident(cell: Any) -> tuple[str, str | None]:
    return cell.backend, cell.pool.label if cell.pool is not None else None


def _label(pool: str) -> str:
    from xcbench.cell import PoolSpec
    return PoolSpec.parse(pool).label


def _ceph(pool: str) -> tuple[tuple[str, Any], ...]:
    return (("layouts", [dict(LAYOUT)]), ("pools", [pool]))


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str  # one line: the bottleneck made
    expected: tuple[str, ...]  # verdicts that are right (storage: bandwidth or IOPS)
    cells: tuple[str, ...]  # CellDef keys it is checked on
    cap: str | None = None  # the role put under a CPU quota ("gateway", "osd", "client")
    run: str = "uncapped"  # which run it is judged on: "uncapped" or its own capped run
    needs: str | None = None  # a second host, ...: not runnable yet (listed, not run)


CELLS = {c.key: c for c in (
    CellDef("tmpfs", "tmpfs", (("size", ["2G"]),)),
    CellDef("cephfs-rep", "cephfs", _ceph(REP_POOL), REP_POOL),
    CellDef("cephfs-ec", "cephfs", _ceph(EC_POOL), EC_POOL),
    CellDef("rados-rep", "rados", _ceph(REP_POOL), REP_POOL),
)}

SCENARIOS = {s.name: s for s in (
    Scenario("gateway", "the gateway's xrootd/cmsd in a cgroup with a CPU quota", ("gateway",),
             ("tmpfs", "cephfs-rep"), cap="gateway", run="gateway"),
    Scenario("storage", "the OSDs in a cgroup with a CPU quota", STORAGE,
             ("cephfs-rep", "rados-rep"), cap="osd", run="storage"),
    Scenario("client", "the campaign driver (this process) in a cgroup with a CPU quota", ("client",),
             ("tmpfs",), cap="client", run="client"),
    Scenario("ec-overhead", "EC 2+1 vs an unprotected replicated pool, same layout, same OSDs",
             ("ec-overhead",), ("cephfs-ec",)),
    Scenario("host-cpu", "nothing capped: every role shares this host's cores", ("host-cpu",),
             ("tmpfs",)),
    Scenario("network", "a shaped link between client and gateway hosts", ("network",), (),
             needs="a second (emulated) host: comes with the multi-host issue"),
)}
QUICK_CELLS = {"gateway": ("tmpfs",), "storage": ("cephfs-rep",), "client": ("tmpfs",),
               "ec-overhead": ("cephfs-ec",), "host-cpu": ("tmpfs",)}


@dataclass
class Sizes:
    levels: tuple[int, ...]
    file_size: str
    files: int


QUICK = Sizes(levels=(2, 4), file_size="16M", files=16)
FULL = Sizes(levels=(2, 4, 8), file_size="32M", files=24)


def matrix_yaml(cells: list[CellDef], sizes: Sizes, name: str) -> dict[str, Any]:
    """A matrix with exactly these cells (one layout; push; no probe)."""
    backends: dict[str, dict[str, Any]] = {}
    for c in cells:
        b = backends.setdefault(c.backend, {})
        for key, values in c.entry:
            b.setdefault(key, [])
            b[key] += [v for v in values if v not in b[key]]
    return {"name": name, "description": "xcbench selftest",
            "defaults": {"origins": [1], "modes": ["push"], "concurrency": list(sizes.levels),
                         "file_size": sizes.file_size, "files": sizes.files, "repeats": 1,
                         "gateway": {"async": False, "buffers_maxbsz": "16M"}},
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
    """(right verdicts, note) for one level of a scenario, from what the cell measured. Only
    the EC scenario depends on the measurement: where the EC cell is not >= 15 % slower than
    its replicated twin there is no EC overhead to find, and the uncapped box's answer holds."""
    if s.name != "ec-overhead":
        return s.expected, ""
    e = ev.get("ec_ratio")
    if not _finite(e):
        return s.expected, "no replicated twin measured at this level"
    if e <= NEAR:
        return s.expected, f"EC cell at {e * 100:.0f} % of the replicated one"
    # nothing to find for this scenario at this level: any verdict but ec-overhead is right (what
    # the uncapped box itself gives is the host-cpu scenario's question, on its own cells)
    return (tuple(v for v in VERDICTS if v != "ec-overhead"),
            f"EC cell at {e * 100:.0f} % of the replicated one: not slower, so not ec-overhead")


def expected_text(expected: tuple[str, ...]) -> str:
    """'gateway', 'storage-bandwidth or storage-iops', or 'not ec-overhead'."""
    missing = [v for v in VERDICTS if v not in expected]
    if len(expected) > 2 and len(missing) == 1:
        return f"not {missing[0]}"
    return " or ".join(expected)


def raw_check(ev: dict[str, Any], tolerance: float = 0.2) -> tuple[bool, str]:
    """The pool's measured raw/logical bytes against (k+m)/k or the replica count."""
    got, want = ev.get("raw_per_logical"), ev.get("raw_expected")
    if not _finite(want):
        return True, ""
    if not _finite(got):
        return False, f"raw/logical not measured (expected {want:g})"
    ok = abs(got - want) <= tolerance * want
    return ok, f"raw/logical {got:.2f} (expected {want:g})"
