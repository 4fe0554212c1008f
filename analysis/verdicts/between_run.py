"""Between-run noise: how much one level differs between two runs on two fresh clusters, beyond
what its own steady window says.

A level's own noise (figures.stats, analysis.verdicts.samples) is measured inside one run; it cannot
see what changes between two fresh clusters (PG placement, BlueStore state, what the box did
before). Measured on this 2-core box, two fresh clusters differed by 1.5-2x what the levels'
own errors predict for rates and 2.4-4.8x for host CPU, so figures near a threshold fell on
either side without being called borderline (benchmarks/bench_repeatability.py). A fio
probe has an error of its own inside one run: a level probe's ceiling is the mean of fio's
interval samples, and its relative standard error (``bw_rel_se``, xcbench.probe.noise) enters
the share R / F with the rate's (analysis.verdicts.probes.apply_level, analysis.verdicts.rules). That cannot see
what changes between clusters either: the same job on two fresh clusters differed by a median
of 9 % and up to 36 % (write bandwidth), and up to 2.1x (reads), so the ceilings also get
between-run terms, one per probe column (PROBES), added in quadrature to their own error.

The terms are measured, never assumed: the repeatability benchmark records each pair's
per-level |log(b / a)| of the rate and of host CPU busy, and per storage cell of its fio
ceilings, in ``<state home>/between-run.json`` for the host it ran on. sigma() turns them into
one run's spread. `xcbench run` copies the host's figures into a new run's manifest
(``between_run``), so a run's verdicts do not change when the file does. The attribution adds
them in quadrature to the errors of the rates, host CPU and shares of fio ceilings wherever a
figure is compared with a threshold (analysis.verdicts.borderline). No file, or another host's: no term.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from xcbench.figures.stats import CONFIDENCE
from xcbench.store.rundir import write_json
from xcbench.system import statedir

FILE = "between-run.json"
PROBES = ("fio_write_bw", "fio_write_iops", "fio_read_bw", "fio_read_iops")  # analysis.verdicts.probes columns
QUANTITIES = ("rate", "host_busy", *PROBES)
_Z = NormalDist().inv_cdf(CONFIDENCE)
MIN_LEVELS = 8  # fewer paired figures than this give that quantity no term


def path() -> Path:
    return statedir.home() / FILE


def _host() -> dict[str, Any]:
    return {"hostname": statedir.HOST, "cores": os.cpu_count()}


def sigma(diffs: list[float]) -> float:
    """One run's relative spread from |log(b / a)| of paired levels: the normal-equivalent
    spread whose one-sided CONFIDENCE bound sits where the measured differences put it,
    Q(|d|, 2 CONFIDENCE - 1) / z / sqrt(2). The differences are heavy-tailed (3 pairs on this
    box: the 90 % quantile of the rates' |d| was 3.6x their median, 2.44x for a normal), so a
    spread from the median would put the borderline interval's edge too close."""
    d = [abs(x) for x in diffs if math.isfinite(x)]
    if not d:
        return math.nan
    return float(np.quantile(d, 2 * CONFIDENCE - 1)) / _Z / math.sqrt(2)


def load() -> dict[str, Any] | None:
    """This host's calibration for a new run's manifest, or None (no file, another host's,
    unreadable, no quantity with enough figures). A quantity with too few has no term."""
    try:
        st = os.stat(path())
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:  # not ours alone: not acted on
            return None
        data = json.loads(path().read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("host") != _host():
        return None
    pairs = [p for p in data.get("pairs") or () if isinstance(p, dict)]
    out: dict[str, Any] = {"source": str(path()), "pairs": len(pairs)}
    for q in QUANTITIES:
        diffs = [float(x) for p in pairs for x in p.get(q) or () if isinstance(x, (int, float))]
        if len(diffs) >= MIN_LEVELS:
            out[q] = sigma(diffs)
            out[q + "_levels"] = len(diffs)
    return out if any(q in out for q in QUANTITIES) else None


def record(runs: tuple[str, str], diffs: dict[str, list[float]]) -> dict[str, Any] | None:
    """Add one pair's per-level |log(b / a)| to this host's file (another host's file is
    replaced); returns the calibration now in force."""
    p = path()
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or data.get("host") != _host() or not isinstance(data.get("pairs"), list):
        data = {"host": _host(), "pairs": []}
    data["pairs"].append({"runs": list(runs), "recorded": _dt.datetime.now(_dt.UTC).isoformat(),
                          **{q: [round(abs(x), 6) for x in diffs.get(q, []) if math.isfinite(x)]
                             for q in QUANTITIES}})
    p.parent.mkdir(parents=True, exist_ok=True)
    write_json(p, data)
    return load()


def of(manifest: dict[str, Any]) -> dict[str, float]:
    """The run's recorded terms {quantity: sigma} (empty: none recorded)."""
    b = manifest.get("between_run") if isinstance(manifest, dict) else None
    if not isinstance(b, dict):
        return {}
    return {q: float(b[q]) for q in QUANTITIES
            if isinstance(b.get(q), (int, float)) and math.isfinite(b[q]) and b[q] >= 0}


def probe(between: dict[str, float] | None, direction: str, kind: str) -> float | None:
    """The term of a fio ceiling (``kind`` bw or iops) in ``direction``, or None."""
    return (between or {}).get(f"fio_{'read' if direction == 'read' else 'write'}_{kind}")
