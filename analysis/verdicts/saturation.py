"""Saturation seen directly: CPU pressure, each role's run-queue wait and its hottest thread.

Figures over a steady window, from the samplers' rows (xcbench/telemetry/host.py,
role_processes.py):

  pressure      system CPU pressure: share of the window in which some runnable task waited
                for a CPU (PSI ``some``, cpu.pressure.some [scope=system])
  runq_wait     a role's threads' run-queue wait, seconds per second (role_runq_wait)
  wait_share    runq_wait / (runq_wait + cpu): the share of its runnable time a role waited;
                only for a role that wanted at least DEMAND_MIN cores (a nearly idle role's
                share is a ratio of two specks)
  hot_thread    the busiest thread of a role: {name, cores, wait} (role_hot_thread_*)
  chain_wait    the same share summed over the chain's roles (the probe left out)

Thresholds, each from figures measured on the project's 2-core test box (kernel 6.18, cgroup
v1, shared with other work; 1-s samples, 15-90 per case, benchmarks in the branch's report):

  WAIT_SAT 0.5     a role under a quota of its own waits longer than it runs. Measured: one
                   spinning thread under a 0.25-core v1 quota waits 0.748 +- 0.006 of its
                   runnable time (1 - quota/demand; the CFS throttling shows in schedstat's
                   wait); the same thread without a quota 0.020 +- 0.037 (max 0.146)
  CHAIN_WAIT 0.15  the chain's tasks wait for a CPU: above what a busy process without a quota
                   waits on the shared box when the host has cores to spare (the 0.146 maximum
                   above); with cores+1 spinners the spinner waited 0.70 +- 0.07
  PSI_WAIT         system pressure above its idle noise: see the constant
  DEMAND_MIN 0.1   cores; an idle process (a 10-ms sleep loop) wants 0.013 +- 0.018 (max 0.07),
                   and its wait share then swings 0.02-0.97
  a thread near one core: NEAR (analysis.verdicts.rules' cut for every utilisation) of one core; a
                   spinning thread reads 0.98 +- 0.04 cores (min 0.85) beside others' work
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from xcbench.analysis.verdicts.borderline import Z
from xcbench.analysis.verdicts.samples import SampleIndex
from xcbench.figures.numbers import is_finite

WAIT_SAT = 0.5
CHAIN_WAIT = 0.15
DEMAND_MIN = 0.1
# system PSI some, window mean. Measured on the shared box: 1-s samples 0.11 +- 0.24 in its
# quietest 15 s (no chain, others' work, 70 % busy); a 5-sample window's mean then has a standard
# error of 0.24 / sqrt(5) = 0.11, and 0.11 + 2 x 0.11 = 0.32: above that some task surely waited
# beyond that background. Under a known saturation (cores+1 spinners) 0.83 +- 0.16; a 0.25-core
# quota alone 0.63 +- 0.19 (throttled tasks count as waiting); over 900 s of others' work
# filling the box (99 % busy) 0.90 +- 0.15: system pressure is everyone's, so host-cpu below
# the busy cut asks the chain's own wait (CHAIN_WAIT) too
PSI_WAIT = 0.3


def _in(rows, windows) -> np.ndarray:
    if rows is None or not len(rows):
        return np.zeros(0)
    w = rows["wall"].to_numpy()
    keep = np.zeros(w.size, dtype=bool)
    for w0, w1 in windows:
        keep |= (w >= w0) & (w <= w1)
    v = rows["value"].to_numpy(dtype=float)[keep]
    return v[np.isfinite(v)]


def _mean(rows, windows) -> float:
    v = _in(rows, windows)
    return float(v.mean()) if v.size else math.nan


def host_pressure(s: SampleIndex, cell_id: str, windows) -> tuple[float, float]:
    """(mean system CPU pressure some over the windows, its relative standard error)."""
    rows = s.by_label(cell_id, "cpu.pressure.some", "scope").get("system")
    v = _in(rows, windows)
    if not v.size:
        return math.nan, math.nan
    m = float(v.mean())
    se = float(v.std(ddof=1) / (m * math.sqrt(v.size))) if v.size >= 2 and m > 0 else math.nan
    return m, se


def role_sched(s: SampleIndex, cell_id: str, windows) -> dict[str, dict[str, Any]]:
    """{role: {runq_wait, hot_thread: {name, cores, wait} | None, pressure, pressure_source}}."""
    wait = s.by_label(cell_id, "role_runq_wait", "role")
    hot = s.by_label(cell_id, "role_hot_thread_cores", "role")
    hot_w = s.by_label(cell_id, "role_hot_thread_wait", "role")
    psi = s.by_label(cell_id, "role_cpu_pressure", "role")
    out: dict[str, dict[str, Any]] = {}
    for role in set(wait) | set(hot) | set(psi):
        x: dict[str, Any] = {"runq_wait": _mean(wait.get(role), windows), "hot_thread": None}
        h = hot.get(role)
        if h is not None and _in(h, windows).size:
            names = Counter(lab.get("thread", "?") for lab, w in zip(h["labels"], h["wall"], strict=True)
                            if any(a <= w <= b for a, b in windows))
            x["hot_thread"] = {"name": names.most_common(1)[0][0] if names else "?",
                               "cores": _mean(h, windows), "wait": _mean(hot_w.get(role), windows)}
        p = psi.get(role)
        if p is not None and len(p):
            x["pressure"] = _mean(p, windows)
            x["pressure_source"] = str(p["labels"].iloc[-1].get("source", ""))
        out[role] = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in x.items()}
    return out


def wait_share(wait: Any, cpu: Any) -> float | None:
    """The share of its runnable time a role waited; None when it barely wanted a CPU."""
    if not (is_finite(wait) and is_finite(cpu)) or wait + cpu < DEMAND_MIN:
        return None
    return float(wait / (wait + cpu))


def chain_wait(roles: dict[str, dict[str, Any]]) -> float | None:
    """The chain's wait share: its roles' run-queue wait over their runnable time (no probe)."""
    pairs = [(x.get("runq_wait"), x.get("cpu")) for r, x in roles.items() if r != "probe"]
    pairs = [(w, c) for w, c in pairs if is_finite(w) and is_finite(c)]
    if not pairs:
        return None
    return wait_share(sum(w for w, _ in pairs), sum(c for _, c in pairs))


# Parallel efficiency below one half: past the knee of the speedup/efficiency profile, where
# adding a worker buys less than half a worker's worth (Eager, Zahorjan & Lazowska, "Speedup
# versus efficiency in parallel systems", IEEE Trans. Computers 38(3), 1989).
EFFICIENCY_LOW = 0.5


def efficiency(levels: list[tuple[float, float]], conc: float) -> tuple[float, float, float] | None:
    """(efficiency, from level, to level) at ``conc``: rate ratio / concurrency ratio to the next
    higher level, or from the next lower one at the highest level (a level whose neighbour
    gains little for more transfers in flight is held by something shared). None with one level."""
    pts = sorted((float(c), float(r)) for c, r in levels if is_finite(c) and is_finite(r) and c > 0 and r > 0)
    at = [i for i, (c, _) in enumerate(pts) if c == float(conc)]
    if not at or len(pts) < 2:
        return None
    i = at[0]
    a, b = (pts[i], pts[i + 1]) if i + 1 < len(pts) else (pts[i - 1], pts[i])
    return (b[1] / a[1]) / (b[0] / a[0]), a[0], b[0]


def add_evidence(view: Any, s: SampleIndex, cell_id: str, conc: float, windows, ev: dict[str, Any],
                 rel_se: Any) -> None:
    """The point's system CPU pressure and scaling efficiency into ``ev`` (cpu_pressure,
    cpu_pressure_rel_se, scaling_efficiency {value, high, rel_se, from, to}); ``rel_se(point)`` is a
    level's relative rate error (its upper bound is the efficiency's one-sided 95 % end)."""
    ev["cpu_pressure"], ev["cpu_pressure_rel_se"] = host_pressure(s, cell_id, windows)
    got = efficiency(view.levels_rate(cell_id), conc)
    if got is None:
        return
    eff, a, b = got
    se = math.hypot(*(x if is_finite(x) else 0.0 for x in (rel_se(view.point(cell_id, a) or {}),
                                                     rel_se(view.point(cell_id, b) or {}))))
    ev["scaling_efficiency"] = {"value": eff, "high": eff * math.exp(Z * se), "rel_se": se,
                                "from": a, "to": b}
