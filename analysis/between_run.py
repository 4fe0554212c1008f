"""Between-run noise: how much one level differs between two runs on two fresh clusters, beyond
what its own steady window says.

A level's own noise (analysis.stats, analysis.samples) is measured inside one run; it cannot
see what changes between two fresh clusters (PG placement, BlueStore state, what the box did
before). Measured on this 2-core box, two fresh clusters differed by 1.5-2x what the levels'
own errors predict for rates and 2.4-4.8x for host CPU, so figures near a threshold fell on
either side without being called borderline (benchmarks/bench_repeatability.py).

The term is measured, never assumed: the repeatability benchmark records each pair's per-level
|log(b / a)| of the rate and of host CPU busy in ``<state home>/between-run.json``, for the host
it ran on, and sigma = median |log(b / a)| / 0.6745 / sqrt(2) (the robust normal estimate of
one run's spread from differences of pairs). `xcbench run` copies the host's figures into a new
run's manifest (``between_run``), so a run's verdicts do not change when the file does. The
attribution adds them in quadrature to the rates' and host CPU's own relative errors wherever a
figure is compared with a threshold (analysis.borderline). No file, or another host's: no term.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import statistics
from pathlib import Path
from typing import Any

from xcbench.store.rundir import write_json
from xcbench.system import statedir

FILE = "between-run.json"
QUANTITIES = ("rate", "host_busy")
_MAD = 0.6745  # median |x| of a standard normal
MIN_LEVELS = 8  # fewer paired levels than this give no term


def path() -> Path:
    return statedir.home() / FILE


def _host() -> dict[str, Any]:
    return {"hostname": statedir.HOST, "cores": os.cpu_count()}


def sigma(diffs: list[float]) -> float:
    """One run's relative spread from |log(b / a)| of paired levels."""
    d = [abs(x) for x in diffs if math.isfinite(x)]
    return statistics.median(d) / _MAD / math.sqrt(2) if d else math.nan


def load() -> dict[str, Any] | None:
    """This host's calibration for a new run's manifest, or None (no file, another host's,
    too few levels, unreadable)."""
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
        if len(diffs) < MIN_LEVELS:
            return None
        out[q] = sigma(diffs)
        out[q + "_levels"] = len(diffs)
    return out


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
