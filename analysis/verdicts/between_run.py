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

The terms are measured where they can be: the repeatability benchmark records each pair's
per-level |log(b / a)| of the rate and of host CPU busy, and per storage cell of its fio
ceilings, with the two runs' own errors of each figure, in ``<state home>/between-run.json``
for the host it ran on. sigma() turns them into one run's spread, the runs' own noise taken out
first (a difference already holds it: counted again, it would be counted twice). A quantity
needs figures from at least MIN_PAIRS pairs (one pair is one draw of what differs between two
clusters). `xcbench run` copies the host's figures into a new run's manifest (``between_run``),
so a run's verdicts do not change when the file does. The attribution adds them in quadrature
to the errors of the rates, host CPU and shares of fio ceilings wherever a figure is compared
with a threshold (analysis.verdicts.borderline).

**Assumed.** A host with no recorded pairs (no file, another host's, or fewer than MIN_PAIRS
for a quantity) gets a stated conservative term instead of none: ASSUMED, the largest each
quantity measured on the reference 2-core box, marked ``assumed`` in the manifest and said on
the report's first screen and in the closing table's legend (:func:`legend`). Without it, a
fresh host's levels stated only their window's noise, and two fresh clusters' rates differed
beyond it at 8 of 12 levels (issue 44).
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
MIN_PAIRS = 2  # pairs with figures of a quantity before it has a measured term
# A host with no recorded pairs: the largest one-run spread each quantity measured on the
# reference 2-core box (benchmarks/bench_repeatability.py), rounded up: rate 10.9 % (issue 44: the demo
# matrix on two fresh clusters of a fresh machine, rates 10.4 % apart at the median: a normal
# spread of 10.4 / (0.674 sqrt 2); four quiet pairs gave 5.4 %), host CPU 1.7 %, fio write
# bandwidth 11.5 %, write IOPS 22.9 %, reads 17.7 % (four quiet pairs: docs/validation.md#repeatability).
ASSUMED = {"rate": 0.11, "host_busy": 0.02, "fio_write_bw": 0.12, "fio_write_iops": 0.23,
           "fio_read_bw": 0.18, "fio_read_iops": 0.18}
RECORD = "benchmarks/bench_repeatability.py --fresh --repeats 1 --record"


def path() -> Path:
    return statedir.home() / FILE


def _host() -> dict[str, Any]:
    return {"hostname": statedir.HOST, "cores": os.cpu_count()}


def sigma(diffs: list[float], own: list[float | None] | list[float] | None = None) -> float:
    """One run's relative spread from |log(b / a)| of paired levels: the normal-equivalent
    spread whose one-sided CONFIDENCE bound sits where the measured differences put it,
    Q(|d|, 2 CONFIDENCE - 1) / z / sqrt(2). The differences are heavy-tailed (3 pairs on this
    box: the 90 % quantile of the rates' |d| was 3.6x their median, 2.44x for a normal), so a
    spread from the median would put the borderline interval's edge too close. ``own``: each
    level's two runs' own errors together (sqrt(sa^2 + sb^2)): a difference already holds them,
    so each is taken out first, sqrt(max(0, d^2 - own^2)), and not counted twice when the term
    is added to a run's own error."""
    others: list[float | None] = list(own) if own is not None else [None] * len(diffs)
    pairs = [(abs(x), abs(o) if o is not None and math.isfinite(o) else 0.0)
             for x, o in zip(diffs, others, strict=True) if math.isfinite(x)]
    if not pairs:
        return math.nan
    excess = [math.sqrt(max(0.0, d * d - o * o)) for d, o in pairs]
    return float(np.quantile(excess, 2 * CONFIDENCE - 1)) / _Z / math.sqrt(2)


def _assumed(out: dict[str, Any], quantities: list[str]) -> dict[str, Any]:
    for q in quantities:
        out[q] = ASSUMED[q]
    out["assumed"] = sorted(quantities, key=QUANTITIES.index)
    return out


def load() -> dict[str, Any]:
    """This host's terms for a new run's manifest: measured from at least MIN_PAIRS recorded
    pairs per quantity (not from another host's file, nor one others can write), ASSUMED for
    every quantity without (listed under ``assumed``)."""
    out: dict[str, Any] = {"source": str(path()), "pairs": 0}
    try:
        st = os.stat(path())
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:  # not ours alone: not acted on
            return _assumed(out, list(QUANTITIES))
        data = json.loads(path().read_text())
    except (OSError, ValueError):
        return _assumed(out, list(QUANTITIES))
    if not isinstance(data, dict) or data.get("host") != _host():
        return _assumed(out, list(QUANTITIES))
    pairs = [p for p in data.get("pairs") or () if isinstance(p, dict)]
    out["pairs"] = len(pairs)
    missing = []
    for q in QUANTITIES:
        got = [(p.get(q) or [], p.get(q + "_own")) for p in pairs]
        got = [(d, o) for d, o in got if isinstance(d, list) and d]
        if len(got) < MIN_PAIRS:
            missing.append(q)
            continue
        diffs, own = [], []
        for d, o in got:
            o = o if isinstance(o, list) and len(o) == len(d) else [None] * len(d)
            keep = [(x, y) for x, y in zip(d, o, strict=True) if isinstance(x, (int, float))]
            diffs += [float(x) for x, _ in keep]
            own += [float(y) if isinstance(y, (int, float)) else None for _, y in keep]
        out[q] = sigma(diffs, own)
        out[q + "_levels"] = len(diffs)
        out[q + "_pairs"] = len(got)
    return _assumed(out, missing) if missing else out


def record(runs: tuple[str, str], diffs: dict[str, list[float]],
           own: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """Add one pair's per-level |log(b / a)| (and the two runs' own errors of each figure,
    sqrt(sa^2 + sb^2), in ``own``) to this host's file (another host's file is replaced);
    returns the terms now in force."""
    p = path()
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or data.get("host") != _host() or not isinstance(data.get("pairs"), list):
        data = {"host": _host(), "pairs": []}
    entry: dict[str, Any] = {"runs": list(runs), "recorded": _dt.datetime.now(_dt.UTC).isoformat()}
    for q in QUANTITIES:
        d = [float(x) for x in diffs.get(q, [])]
        o = list((own or {}).get(q) or [math.nan] * len(d))
        if len(o) != len(d):
            o = [math.nan] * len(d)
        keep = [(x, y) for x, y in zip(d, o, strict=True) if math.isfinite(x)]
        entry[q] = [round(abs(x), 6) for x, _ in keep]
        entry[q + "_own"] = [round(abs(y), 6) if math.isfinite(y) else None for _, y in keep]
    data["pairs"].append(entry)
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


def assumed(manifest: dict[str, Any]) -> list[str]:
    """The quantities whose between-run term the run assumed (no pairs recorded on its host)."""
    b = manifest.get("between_run") if isinstance(manifest, dict) else None
    return [str(q) for q in (b or {}).get("assumed") or ()] if isinstance(b, dict) else []


def legend(manifest: dict[str, Any]) -> str | None:
    """One line for the report's first screen and the closing table's legend when the run's
    between-run noise was assumed: 'between-run noise assumed (no pairs recorded on this host):
    rate ±11 %, ...; record a pair: ...'. None when measured (or absent: an older run)."""
    qs = assumed(manifest)
    if not qs:
        return None
    terms = of(manifest)
    names = {"rate": "rate", "host_busy": "host CPU", "fio_write_bw": "fio write bandwidth",
             "fio_write_iops": "fio write IOPS", "fio_read_bw": "fio read bandwidth",
             "fio_read_iops": "fio read IOPS"}
    shown = [f"{names[q]} ±{terms[q] * 100:.0f} %" for q in qs if q in terms and q in ("rate", "host_busy")]
    return ("between-run noise assumed (no pairs recorded on this host): " + ", ".join(shown)
            + f"; record a pair with {RECORD}")
