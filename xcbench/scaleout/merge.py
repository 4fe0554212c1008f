"""Records of several client hosts made into one campaign level (xcbench.scaleout.distributed).

- :func:`split`: a level's concurrency over the hosts (the first ``c % n`` get one more).
- :func:`correct`: a host's row on the run's clock (its times minus the host's clock offset),
  tagged with the host; campaign_id the level's (the agent ran under its own, so file names
  differ per host: transfer_id keeps it, unique across hosts).
- :func:`merge_timelines`: the hosts' 1 s buckets onto one timeline of 1 s buckets from the
  earliest host start. Each host bucket's bytes are spread evenly over its span and cut at the
  merged bucket edges, so every second is counted once (no gap, no overlap where a host starts
  or stops) and the merged bytes are exactly the sum of the hosts' bytes.
- :func:`merge_campaigns`: one CAMPAIGN row for the level, the hosts' own rows inside.
"""

from __future__ import annotations

import json
import math
from typing import Any

from xcbench.store.tables import CAMPAIGN, TIMELINE

TIME_KEYS = {"transfers": ("start_time", "finish_time"), "optimizer": ("wall",),
             "timeline": ("wall",), "campaigns": ("start_time", "finish_time")}


def split(total: int, n: int) -> list[int]:
    """``total`` slots over ``n`` hosts: c // n each, one more for the first c % n."""
    return [total // n + (i < total % n) for i in range(n)]


def correct(table: str, row: dict[str, Any], host: str, offset: float,
            campaign_id: str | None = None) -> dict[str, Any]:
    """``row`` on the run's clock: host time - offset (offset = host clock - run clock)."""
    out = dict(row)
    for k in TIME_KEYS.get(table, ()):
        if isinstance(out.get(k), (int, float)):
            out[k] = out[k] - offset
    if campaign_id is not None and "campaign_id" in out:
        out["campaign_id"] = campaign_id
    out["host"] = host
    return out


def correct_sample(row: dict[str, Any], host: str, offset: float, cell_id: str,
                   machine: str = "unknown") -> dict[str, Any]:
    """An agent's sample of its host on the run's clock, labelled with the host's name as the
    coordinator knows it (whatever the agent said) and ``machine``: "shared" when the host is
    the coordinator's own machine (its agent said the same kernel boot id: an emulated host, a
    test cluster's node on one box), "own" when another, "unknown" when the agent did not say."""
    labels = dict(row.get("labels") or {})
    labels["host"] = host
    labels["machine"] = machine
    return {"cell_id": cell_id, "wall": float(row["wall"]) - offset, "mono": None,
            "sampler": "node", "metric": row["metric"], "value": row.get("value"),
            "labels": labels}


def _spans(rows: list[dict]) -> list[tuple[float, float, dict]]:
    """(start, end, row) of each bucket of one host: a bucket runs from the previous one's end
    (the first from its level's start, wall - t)."""
    out: list[tuple[float, float, dict]] = []
    prev: float | None = None
    for r in sorted(rows, key=lambda r: r["wall"]):
        start = r["wall"] - float(r["t"] or 0) if prev is None else prev
        out.append((start, r["wall"], r))
        prev = r["wall"]
    return out


def _cumulative(spans: list[tuple[float, float, dict]], key: str, at: float) -> float:
    """A cumulative counter (done, failed) of one host at time ``at``."""
    last = 0.0
    for _, end, r in spans:
        if end > at + 1e-9:
            break
        last = float(r.get(key) or 0)
    return last


def merge_timelines(per_host: dict[str, list[dict]], *, until: float | None = None,
                    base: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One TIMELINE of 1 s buckets from the hosts' rows (already on the run's clock).

    Buckets run from the earliest host start; the last one ends with the last host bucket
    (a partial bucket, as the driver's own last one). ``until``: only buckets ending by then
    (the live judgement: buckets every running host has reported). ``base``: columns every
    row carries (cell_id, campaign_id, concurrency, repeat)."""
    spans = {h: _spans(rows) for h, rows in per_host.items() if rows}
    if not spans:
        return []
    t0 = min(s[0][0] for s in spans.values())
    end = max(s[-1][1] for s in spans.values())
    if until is not None:  # whole buckets only
        end = min(end, until)
        n = max(0, math.floor(end - t0 + 1e-9))
        last = t0 + n
    else:
        n = max(1, math.ceil(end - t0 - 1e-9))
        # a last sliver that rounds to the previous bucket's t (rows' t are in ms; clocks near
        # 1e9 s carry ~1e-7 s of rounding) joins that bucket: as a bucket of its own it would
        # repeat that t
        if n > 1 and round(end - t0, 3) <= n - 1:
            n -= 1
        last = end
    if n == 0:
        return []
    nbytes, nread, active, cores = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    for host_spans in spans.values():
        for s, e, r in host_spans:
            width = e - s
            k0 = min(n - 1, max(0, int(math.floor(s - t0))))
            for k in range(k0, min(n, math.ceil(e - t0 - 1e-9))):
                lo, hi = max(s, t0 + k), min(e, t0 + k + 1 if k < n - 1 else max(last, t0 + k + 1))
                if hi <= lo:
                    continue
                frac = (hi - lo) / width if width > 0 else 1.0
                nbytes[k] += float(r.get("bytes") or 0) * frac
                nread[k] += float(r.get("bytes_read") or 0) * frac  # reads: the direction split
                active[k] += float(r.get("active") or 0) * (hi - lo)
                cores[k] += float(r.get("driver_cpu_cores") or 0) * (hi - lo)
    limit = _sum_limits([sp[0][2] for sp in spans.values()])
    rows, cum, given, cum_read, given_read = [], 0.0, 0, 0.0, 0
    for k in range(n):
        b0, b1 = t0 + k, (t0 + k + 1 if k < n - 1 else last)
        span = max(b1 - b0, 1e-9)
        cum += nbytes[k]
        moved = int(round(cum)) - given  # whole bytes whose sum is the hosts' sum
        given += moved
        cum_read += nread[k]
        read = min(moved, max(0, int(round(cum_read)) - given_read))
        given_read += read
        out: dict[str, Any] = {c: None for c in TIMELINE}
        out.update(base or {})
        out.update(t=round(b1 - t0, 3), wall=b1, bytes=moved, rate=moved / span,
                   bytes_read=read, bytes_written=moved - read,
                 active=round(active[k] / span, 3), driver_cpu_cores=round(cores[k] / span, 3),
                 driver_cpu_limit_cores=limit, driver_cpu_limit_source="client hosts",
                 done=int(sum(_cumulative(sp, "done", b1) for sp in spans.values())),
                 failed=int(sum(_cumulative(sp, "failed", b1) for sp in spans.values())))
        rows.append(out)
    return rows


def _sum_limits(rows: list[dict]) -> float | None:
    """The hosts' driver CPU limits added up (None when one host has none)."""
    limits: list[float] = []
    for r in rows:
        x = r.get("driver_cpu_limit_cores")
        if not isinstance(x, (int, float)):
            return None
        limits.append(float(x))
    return round(sum(limits), 3) if limits else None


def host_summary(row: dict[str, Any]) -> dict[str, Any]:
    """What a host's own CAMPAIGN row says, for the level's settings["hosts"]."""
    settings = row.get("settings")
    if isinstance(settings, str):
        try:
            settings = json.loads(settings)
        except ValueError:
            settings = {}
    keep = ("concurrency", "files", "bytes", "start_time", "finish_time", "rate", "finished",
            "failed", "driver_cpu_cores", "driver_cpu_limit_cores", "driver_cpu_limit_source")
    out = {k: row.get(k) for k in keep}
    out["campaign_id"] = row.get("campaign_id")
    out["level"] = (settings or {}).get("level")
    out["attempts"] = (settings or {}).get("attempts")
    return out


def merge_campaigns(rows: dict[str, dict[str, Any]], *, campaign_id: str, concurrency: int,
                    level: dict | None, hosts: dict[str, dict[str, Any]],
                    extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One CAMPAIGN row of the level from the hosts' rows (on the run's clock)."""
    first = next(iter(rows.values()))
    settings = first.get("settings")
    settings = json.loads(settings) if isinstance(settings, str) else dict(settings or {})
    starts = [r["start_time"] for r in rows.values() if r.get("start_time") is not None]
    ends = [r["finish_time"] for r in rows.values() if r.get("finish_time") is not None]
    start, end = (min(starts), max(ends)) if starts and ends else (None, None)
    moved = sum(int(r.get("bytes") or 0) for r in rows.values())
    cores = [float(c) for r in rows.values() if (c := r.get("driver_cpu_cores")) is not None]
    limit = _sum_limits(list(rows.values()))
    settings.update({
        "level": level, "engine": f"campaign agents on {len(rows)} client hosts "
        "(xcbench.scaleout.distributed): the local driver on each, records merged",
        "hosts": {h: {**hosts.get(h, {}), "campaign": host_summary(r)} for h, r in rows.items()},
        **(extra or {})})
    settings.get("spec", {}).update(concurrency=concurrency, campaign_id=campaign_id)
    out: dict[str, Any] = {c: None for c in CAMPAIGN}
    out.update(cell_id=first.get("cell_id"), campaign_id=campaign_id, concurrency=concurrency,
               repeat=first.get("repeat"), mode=first.get("mode"), client=first.get("client"),
               files=sum(int(r.get("files") or 0) for r in rows.values()), bytes=moved,
               start_time=start, finish_time=end,
               rate=moved / (end - start) if start is not None and end > start else 0.0,
               finished=sum(int(r.get("finished") or 0) for r in rows.values()),
               failed=sum(int(r.get("failed") or 0) for r in rows.values()),
               settings=json.dumps(settings, sort_keys=True, default=str),
               driver_cpu_cores=round(sum(cores), 3) if cores else None,
               driver_cpu_limit_cores=limit,
               driver_cpu_limit_source="client hosts")
    return out
