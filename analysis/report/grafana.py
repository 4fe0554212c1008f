"""A run in Grafana: the link that opens docs/grafana/xcbench.json on the run's time range, and
the run's levels as Grafana annotations (tag ``xcbench``), for a site to post itself.

Nothing is sent anywhere: the base URL comes from ``--grafana-url`` or ``XCBENCH_GRAFANA_URL``
and only goes into the report's text; the annotations are a file the site posts with its own
credentials (``POST /api/annotations``, one object per request)."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from xcbench.analysis.report import glance
from xcbench.errors import XcbError
from xcbench.system import outfiles

ENV = "XCBENCH_GRAFANA_URL"
UID, SLUG = "xcbench", "xcbench"  # docs/grafana/xcbench.json
MARGIN_S = 30.0  # before the first and after the last level: the ramp-up and the drain show


def base_url(given: str | None = None) -> str | None:
    """The Grafana base URL (``given``, else $XCBENCH_GRAFANA_URL); None when neither is set."""
    url = (given or os.environ.get(ENV) or "").strip()
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        src = "--grafana-url" if given else ENV
        raise XcbError(f"{src} {url!r}: give Grafana's base URL, http(s)://host[:port][/path]")
    return url.rstrip("/")


def _ms(v: Any) -> int | None:
    if isinstance(v, (int, float)):
        return int(float(v) * 1000)
    try:
        t = dt.datetime.fromisoformat(str(v))
    except (TypeError, ValueError):
        return None
    return int(t.timestamp() * 1000)


def span_ms(rd: Any) -> tuple[int, int] | None:
    """The run's time range in ms: its campaigns (else the manifest's start/end), with a margin."""
    c = rd.campaigns
    if len(c) and {"start_time", "finish_time"} <= set(c.columns):
        lo, hi = c["start_time"].min(), c["finish_time"].max()
        if lo == lo and hi == hi:
            return int((lo - MARGIN_S) * 1000), int((hi + MARGIN_S) * 1000)
    m = rd.manifest
    lo_ms, hi_ms = _ms(m.get("start")), _ms(m.get("end"))
    if lo_ms is None or hi_ms is None:
        return None
    return lo_ms - int(MARGIN_S * 1000), hi_ms + int(MARGIN_S * 1000)


def link(rd: Any, base: str | None) -> dict[str, Any] | None:
    """{url (None without a base), path, from, to} of the dashboard on the run's time range."""
    span = span_ms(rd)
    if span is None:
        return None
    path = f"/d/{UID}/{SLUG}?" + urlencode({"orgId": 1, "from": span[0], "to": span[1], "timezone": "utc"})
    return {"url": (base + path) if base else None, "path": path, "from": span[0], "to": span[1]}


def level_annotations(rd: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One annotation per cell × level (its campaigns' span), its text the closing table's row
    (``rows``: analysis.report.glance.rows): "cephfs ... c=4: gateway, 4.55 Gb/s"."""
    c = rd.campaigns
    if not len(c):
        return []
    by = {(r["cell_id"], float(r["concurrency"]), r["direction"]): r for r in rows}
    out = []
    for (cid, level), g in c.groupby(["cell_id", "concurrency"], sort=False):
        r = by.get((cid, float(level), "write")) or next(
            (x for k, x in by.items() if k[0] == cid and k[1] == float(level)), None)
        label = r["cell"] if r else str(cid)
        what = f"{r['verdict']}, {r['rate_gbps']:.3g} Gb/s" if r and r.get("rate_gbps") is not None else ""
        out.append({"time": int(g["start_time"].min() * 1000), "timeEnd": int(g["finish_time"].max() * 1000),
                    "tags": ["xcbench", f"run:{rd.run_id}", f"cell:{cid}"],
                    "text": f"xcbench run {rd.run_id}: {label} c={level:g}" + (f": {what}" if what else "")})
    return out


def write_annotations(rd: Any, rows: list[dict[str, Any]], out: Path) -> Path | None:
    """The annotations as a JSON list into ``out`` (None when the run has no campaign)."""
    items = level_annotations(rd, rows)
    if not items:
        return None
    outfiles.write(out, json.dumps(items, indent=1) + "\n")
    return out


def write_all(runs: list[Any], out: Path) -> dict[str, str]:
    """Each run's levels as annotations beside the report ``out``
    (<stem>-<run>-grafana-annotations.json), each run judged with the others as in the report:
    {run id: file}."""
    notes = {}
    for rd in runs:
        rows = glance.rows(rd, tuple(o for o in runs if o is not rd))
        f = write_annotations(rd, rows, out.with_name(f"{out.stem}-{rd.run_id}-grafana-annotations.json"))
        if f:
            notes[rd.run_id] = str(f)
    return notes
