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
long enough for its steady window to hold many role samples. Every run is made the way
``xcbench run`` makes it: a fio probe per cell (PROBE, as layouts/quick.yaml) and the iperf3
baseline. A capped level is right only with its cause (xcbench.selftest.cause): slower than
the same level uncapped beyond both levels' noise, the role at its quota. The ``decoy`` caps
the gateway at DECOY x the most it could have used (its use plus the CPU others' load held, at
most the host's cores: judging.could_use): it must not bind and must not be named;
``shared-quota`` puts the driver and the gateway in one group: both must be named. The
network scenario (xcbench.selftest.network) replaces its placeholder here; the storage-*
and ec-overhead ones come from xcbench.selftest.storage_io.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from xcbench.analysis.verdicts.attribution import NEAR, VERDICTS
from xcbench.backends.base import backend_class
from xcbench.cell import Cell
from xcbench.figures.numbers import is_finite
from xcbench.selftest.registry import CELLS, SCENARIOS, CellDef, Scenario, register, register_cell

STORAGE = ("storage-bandwidth", "storage-iops")
REP_POOL = "rep1"  # unprotected: replicated on the same OSDs, one copy (raw/logical 1)
EC_POOL = "ec2+1"
LAYOUT = {"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"}
__all__ = ["CELLS", "FULL", "QUICK", "SCENARIOS", "STORAGE", "Check", "CellDef", "Scenario", "Sizes",
           "expectation", "expected_text", "ident", "matrix_yaml", "raw_check"]


def ident(cell: Cell) -> tuple[str, str | None]:
    return cell.backend, cell.pool.label if cell.pool is not None else None


def _ceph(pool: str, backend: str = "cephfs") -> tuple[tuple[str, Any], ...]:
    # gateways on CephFS write through ceph-fuse's page cache: probe the same way (quick.yaml)
    # fio on a CephFS mount buffers (ceph-fuse: no O_DIRECT)
    probe = (("probe", {"direct": False}),) if getattr(backend_class(backend), "uses_fs", False) else ()
    return (("layouts", [dict(LAYOUT)]), ("pools", [pool]), *probe)


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


def host_cores() -> int:
    """The cores this process may run on (its affinity: a cpuset or taskset counts)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def sizes_for(quick: bool, cores: int | None = None) -> Sizes:
    """The levels for a host of ``cores`` cores (default: this one's). At least two transfers in
    flight per core: the uncapped scenario's known answer is host-cpu only when its load can
    exhaust the host. With 2 transfers on an idle 2-core box the host was 84 % busy (gateway 1.3
    + client 0.3 cores): not exhausted, so not a known answer. Levels 2 and 4 (full: 2, 4, 8)
    transfers per core; a host of other size gets other levels, the same load per core."""
    n = cores or host_cores()
    if quick:
        return Sizes(levels=(2 * n, 4 * n), file_size="16M", files=16, duration=("8s", "14s"),
                     window="6s", points=3)
    return Sizes(levels=(2 * n, 4 * n, 8 * n), file_size="32M", files=32, duration=("15s", "30s"),
                 window="12s", points=4)


QUICK = sizes_for(True)
FULL = sizes_for(False)
# a decoy cap: this many times the MOST the role could have used uncapped at any level (its
# use plus the CPU others' load held, at most the host's cores: judging.could_use; what it
# used alone, measured under heavier contention than the decoy's run, bound once). A quota that
# generous never holds the role, so the rules must not name it (a rule that names whichever
# role sits in a quota group would)
DECOY = 1.5
# the fio probe of a self-test cell, as layouts/quick.yaml has it (the rules see what a run sees),
# without the sequential read job: every self-test cell writes (push), and a write point is held
# against the write jobs only (analysis.verdicts.attribution), so a read ceiling would be measured for nothing
PROBE = {"runtime": 3, "iodepth": 4, "numjobs": 1, "size": "64M", "patterns": ["randwrite", "write"]}


def _ec_expect(s: Scenario, ev: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """Where the EC cell is not >= 15 % slower than its replicated twin there is no EC overhead
    to find: any verdict but ec-overhead is right (what the uncapped box itself gives is the
    host-cpu scenario's question, on its own cells)."""
    e = ev.get("ec_ratio")
    if not is_finite(e):
        return s.expected, "no replicated twin measured at this level"
    if e <= NEAR:
        return s.expected, f"EC cell at {e * 100:.0f} % of the replicated one"
    return (tuple(v for v in VERDICTS if v != "ec-overhead"),
            f"EC cell at {e * 100:.0f} % of the replicated one: not slower, so not ec-overhead")


def _both_named(ev: dict[str, Any]) -> tuple[bool, str]:
    """A shared quota: the verdict's evidence names every role of the group (limited_roles)."""
    named = ev.get("limited_roles") or ([ev["limited_role"]] if ev.get("limited_role") else [])
    ok = {"gateway", "client"} <= set(named)
    return ok, f"named at the shared limit: {', '.join(named) or 'none'}" + ("" if ok else " (both expected)")


def raw_check(ev: dict[str, Any], tolerance: float = 0.2) -> tuple[bool, str]:
    """The pool's measured raw/logical bytes against (k+m)/k or the replica count."""
    got, want = ev.get("raw_per_logical"), ev.get("raw_expected")
    if not is_finite(want):
        return True, ""
    if not is_finite(got):
        return False, f"raw/logical not measured (expected {want:g})"
    ok = abs(got - want) <= tolerance * want
    return ok, f"raw/logical {got:.2f} (expected {want:g})"


for _cell in (
    CellDef("tmpfs", "tmpfs", (("size", ["2G"]),)),
    CellDef("cephfs-rep", "cephfs", _ceph(REP_POOL), REP_POOL),
    CellDef("cephfs-ec", "cephfs", _ceph(EC_POOL), EC_POOL, with_=("cephfs-rep",)),
    CellDef("rados-rep", "rados", _ceph(REP_POOL, "rados"), REP_POOL),
):
    register_cell(_cell)

for _s in (
    Scenario("gateway", "the gateway's xrootd/cmsd in a cgroup with a CPU quota", ("gateway",),
             ("tmpfs", "cephfs-rep"), cap="gateway", quick_cells=("tmpfs",)),
    Scenario("storage", "the OSDs in a cgroup with a CPU quota", STORAGE,
             ("cephfs-rep", "rados-rep"), cap="osd", quick_cells=("cephfs-rep",)),
    Scenario("client", "the campaign driver (this process) in a cgroup with a CPU quota", ("client",),
             ("tmpfs",), cap="client"),
    Scenario("decoy", f"the gateway's xrootd/cmsd under a generous CPU quota ({DECOY:g} x the most "
             "it could have used uncapped) that must not bind: the verdict must not name it",
             tuple(v for v in VERDICTS if v != "gateway"), ("tmpfs",), cap="gateway", decoy=True),
    Scenario("shared-quota", "the campaign driver and the gateway's xrootd/cmsd in ONE cgroup with a "
             "CPU quota: the answer must name both roles", ("gateway", "client"), ("tmpfs",),
             cap="gateway+client", extra=_both_named),
    # the uncapped box: ec-overhead where the EC cell is >= 15 % slower, else not (raw bytes
    # checked). Its answer leans on the rule's own threshold; the device-throttled
    # "ec-overhead" scenario (storage_io) derives it from measured raw bytes instead
    Scenario("ec-uncapped", "EC 2+1 vs an unprotected replicated pool, same layout, same OSDs, "
             "nothing capped; then both again, EC first (interleaved)", ("ec-overhead",), ("cephfs-ec",),
             expect=_ec_expect, extra=raw_check, intervene="ec-twin"),
    # named on the uncapped run, proven by intervention: every role under one quota at half
    # the host must halve the rate (xcbench.selftest.intervene), not by the rule's own line
    Scenario("host-cpu", "nothing capped: every role shares this host's cores; then every role "
             "under one CPU quota at half the host", ("host-cpu",), ("tmpfs",), intervene="half-host"),
    # a placeholder: the multi-host issue's module registers the real one (replace=True)
    Scenario("network", "a shaped link between client and gateway hosts", ("network",), (),
             needs="a second (emulated) host: comes with the multi-host issue"),
):
    register(_s)


def matrix_yaml(cells: list[CellDef], sizes: Sizes, name: str) -> dict[str, Any]:
    """A matrix with exactly these cells (one layout; push; quick.yaml's fio probe; time-based
    levels)."""
    backends: dict[str, dict[str, Any]] = {}
    include: list[dict[str, Any]] = []
    plain = {c.backend for c in cells if not c.file_size}
    for c in cells:
        if c.file_size and plain.isdisjoint((c.backend,)):  # alone on its backend: its size there
            b = backends.setdefault(c.backend, {"file_size": c.file_size})
            b.update({k: v for k, v in c.entry})
            continue
        if c.file_size:  # a cell of its own size beside others of its backend: an include entry
            e = {"backend": c.backend, "file_size": c.file_size}
            for key, values in c.entry:
                if key == "layouts":
                    e.update(values[0])
                elif key == "pools":
                    e["pool"] = values[0]
                else:
                    e[key] = values
            include.append(e)
            continue
        b = backends.setdefault(c.backend, {})
        for key, values in c.entry:
            if isinstance(values, dict):  # a backend's settings (its probe)
                b.setdefault(key, {}).update(values)
                continue
            b.setdefault(key, [])
            b[key] += [v for v in values if v not in b[key]]
    return {"name": name, "description": "xcbench selftest",
            "defaults": {"origins": [1], "modes": ["push"], "concurrency": list(sizes.levels),
                         "file_size": sizes.file_size, "files": sizes.files, "repeats": 1,
                         "probe": dict(PROBE),
                         "gateway": {"async": False, "buffers_maxbsz": "16M"},
                         "campaign": sizes.campaign()},
            "backends": backends, **({"include": include} if include else {})}


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
    # a capped level against the same level uncapped (xcbench.selftest.cause.compare)
    cause: dict[str, Any] | None = None


def expectation(s: Scenario, ev: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """(right verdicts, note) for one level of a scenario, from what the cell measured."""
    return s.expect(s, ev) if s.expect is not None else (s.expected, "")


NOT_CONFIRMED = ("refuted", "inconclusive", "proportion checked", "not testable here")  # a wrong name's outcomes


def expected_text(expected: tuple[str, ...]) -> str:
    """'gateway', 'storage-bandwidth or storage-iops', 'not ec-overhead', or (a confirmation
    case's wrong name) 'not confirmed'."""
    if set(expected) == set(NOT_CONFIRMED):
        return "not confirmed"
    missing = [v for v in VERDICTS if v not in expected]
    if len(expected) > 2 and len(missing) == 1:
        return f"not {missing[0]}"
    return " or ".join(expected)
