"""How long a run takes, said at its start and counted down while it runs: every phase of it, each
from the matrix and what it costs here.

- a time-based level runs between its duration's min and max (its middle is the estimate);
- a storage cell's level probes: at each level a write job on the gateway's path (the mount of a
  CephFS cell, and its pool; a RADOS cell's pool), each until fio sees it steady (its ramp and
  steady span at least, LEVEL_RUNTIME at most), after a settle step;
- the cell's own fio jobs (jobs x runtime, its write job dropped where level probes replace it);
- the iperf3 baseline: stream counts x directions x seconds a point;
- each cell's set-up and take-down (backend, gateway, mount), and the verdicts and report at the end.

A file-count level ends when its files are moved: its length depends on the rate measured, so it
is counted, not timed. The per-job, per-cell and report costs were measured on the project's
2-core reference box (docs/validation.md#the-demo; `benchmarks/bench_demo.py` prints the run's
phases beside this estimate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xcbench.campaign.spec import level_rule
from xcbench.errors import XcbError
from xcbench.network.baseline import DIRECTIONS, SECONDS, STREAMS
from xcbench.probe.job_settings import settings as probe_settings
from xcbench.probe.levels import LEVEL_RUNTIME
from xcbench.probe.levels import steady as level_steady

JOB_OVERHEAD_S = 0.35  # fio's start and exit around a job's runtime (wall_s - runtime_s: 0.33-0.42 s)
SETTLE_S = 1.1  # a level probe's settle step (sync, the OSDs quiet): 1.0-1.65 s, 1.1 s on average
POINT_OVERHEAD_S = 0.25  # iperf3's start per baseline point
SETUP_S = {"tmpfs": 3.0, "cephfs": 4.0, "rados": 4.0}  # a cell's set-up and take-down
# the verdicts and the HTML and Markdown reports of the demo: 3.3 + 8.3 + 1.2 s of CPU (measured
# on a demo run, 2026-11-28); a busy box stretches it (65 s at a load of 17 on 2 cores)
REPORT_S = 13.0
LEVEL_TARGETS = {"cephfs": 2, "rados": 1}  # level probe jobs per level: mount and pool, pool
# where a level job ends between its shortest and LEVEL_RUNTIME: the demo's 16 level jobs ran
# 115 s (7.2 s each, ss_dur 3 s: 3.85 s at least, 12.35 s at most; benchmarks/bench_probes.py)
LEVEL_LIKELY = 0.4
ORDER = ("levels", "fio probes", "iperf3", "set-up", "report")
DEFAULT_BASELINE = (len(STREAMS), len(DIRECTIONS), SECONDS)  # `xcbench run`'s iperf3 sweep


@dataclass
class Estimate:
    """Seconds by phase, each (lo, likely, hi); ``mid`` the likely seconds, summed."""
    phases: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    levels: int = 0
    untimed: int = 0

    def add(self, phase: str, lo: float, hi: float | None = None, likely: float | None = None) -> None:
        hi = lo if hi is None else hi
        likely = (lo + hi) / 2 if likely is None else likely
        a, m, b = self.phases.get(phase, (0.0, 0.0, 0.0))
        self.phases[phase] = (a + lo, m + likely, b + hi)

    @property
    def lo(self) -> float:
        return sum(a for a, _, _ in self.phases.values())

    @property
    def hi(self) -> float:
        return sum(b for _, _, b in self.phases.values())

    @property
    def mid(self) -> float:
        return sum(m for _, m, _ in self.phases.values())


def _ss_seconds(value: Any, default: float) -> float:
    """'500ms' / '3s' / 3 -> seconds."""
    s = str(value).strip()
    try:
        if s.endswith("ms"):
            return float(s[:-2]) / 1000
        return float(s.rstrip("s"))
    except ValueError:
        return default


def level_job_lo(cell: Any) -> float:
    """The shortest a level probe's job runs: its ramp and its steady span (the cell's probe
    settings, else xcbench.probe.levels.STEADY)."""
    s = level_steady(cell)
    return _ss_seconds(s["ss_ramp"], 0.5) + _ss_seconds(s["ss_dur"], 3.0)


def cell_seconds(cell: Any, *, repeats: int | None = None, probes: bool = True,
                 out: Estimate | None = None) -> Estimate:
    """One cell's phases: its levels, its probes and its set-up."""
    e = out if out is not None else Estimate()
    n = len(cell.concurrency) * (repeats or cell.repeats)
    e.levels += n
    camp = cell.campaign or {}
    try:
        rule = level_rule(camp.get("duration"), camp.get("steady"))
    except XcbError:
        rule = None
    if rule is None:
        e.untimed += n
    else:
        e.add("levels", n * rule.min, n * rule.max)
    e.add("set-up", SETUP_S.get(cell.backend, 4.0))
    if not probes:
        return e
    try:
        p = probe_settings(cell)
    except XcbError:
        return e
    level_jobs = LEVEL_TARGETS.get(cell.backend, 0) if cell.direction != "read" else 0
    jobs = [j for j in p["jobs"] if not (level_jobs and j == "write")]
    ramp = p["ramp"] if isinstance(p["ramp"], int) else 0
    e.add("fio probes", len(jobs) * (p["runtime"] + ramp + JOB_OVERHEAD_S))
    k = level_jobs * len(cell.concurrency)
    lo, hi = level_job_lo(cell), max(LEVEL_RUNTIME, int((cell.probe or {}).get("runtime") or 0))
    each = JOB_OVERHEAD_S + SETTLE_S
    e.add("fio probes", k * (lo + each), k * (hi + each), k * (lo + LEVEL_LIKELY * (hi - lo) + each))
    return e


def seconds(cells: list[Any], *, repeats: int | None = None, probes: bool = True,
            baseline: tuple[int, int, float] | None = DEFAULT_BASELINE,
            report: bool = True) -> Estimate:
    """The run's phases: ``baseline`` (stream counts, directions, seconds a point) or None."""
    e = Estimate()
    for c in cells:
        cell_seconds(c, repeats=repeats, probes=probes, out=e)
    if baseline and cells:
        n, d, s = baseline
        e.add("iperf3", n * d * (s + POINT_OVERHEAD_S))
    if report and cells:
        e.add("report", REPORT_S)
    return e


def dur(s: float) -> str:
    """'40 s', '7 min', '1.5 h'."""
    return f"{s:.0f} s" if s < 100 else f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h"


def line(cells: list[Any], *, repeats: int | None = None, probes: bool = True,
         baseline: tuple[int, int, float] | None = DEFAULT_BASELINE) -> str:
    """'estimate: ~10 min (8–12 min): 12 levels 4–8 min, fio probes 1–3 min, iperf3 36 s, ...'."""
    e = seconds(cells, repeats=repeats, probes=probes, baseline=baseline)
    if not e.levels:
        return "estimate: nothing left to run"
    parts = []
    for phase, (lo, _, hi) in sorted(e.phases.items(), key=lambda kv: ORDER.index(kv[0])):
        span = dur(lo) if dur(lo) == dur(hi) else _span(lo, hi)
        parts.append(f"{e.levels} levels {span}" if phase == "levels" else f"{phase} {span}")
    out = f"estimate: ~{dur(e.mid)} ({_span(e.lo, e.hi)}): " + ", ".join(parts)
    if e.untimed:
        out += f"; {e.untimed} file-count level{'s' * (e.untimed != 1)} not timed"
    return out


def _span(lo: float, hi: float) -> str:
    a, b = dur(lo), dur(hi)
    if a == b:
        return a
    return f"{a.split()[0]}–{b}" if a.split()[1] == b.split()[1] else f"{a}–{b}"
