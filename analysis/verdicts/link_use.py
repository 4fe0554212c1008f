"""Shaped links (a shaped link is a role's limit, as a CPU quota is): each client host's link bytes over a
level's steady window against the rate the link is shaped to, and the network verdict they give.

Figures, per client host of the run's inventory (the manifest's ``hosts``, written by
xcbench.run.hostrun) whose link telemetry (device ``links``) has rows in the cell:

  tx, rx   link.tx_bytes.rate / link.rx_bytes.rate, mean over the steady window    B/s
  limit    link.limit_bytes: the rate the link is shaped to (tc tbf, each way)        B/s
  use      max(tx, rx) / limit: tbf shapes each direction on its own, so the busier one counts

Rule (checked first, as rule 1 of analysis.verdicts.attribution): a level whose busiest client link moves
>= NEAR of its shaped rate is ``network``, whatever the iperf3 baseline says: the limit is a
setting of the link, not an estimate. Its evidence holds every link's figures (``links``) and
``link_use``. Only hosts the run's manifest names count: the device may see other emulated hosts
up on the same machine (other runs), whose links say nothing about this one.
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.figures.numbers import is_finite

TX, RX, LIMIT = "link.tx_bytes.rate", "link.rx_bytes.rate", "link.limit_bytes"


def client_hosts(manifest: dict[str, Any]) -> dict[str, float | None]:
    """{client host name: shaped rate in bytes/s from the inventory (None: unshaped)}."""
    hosts = ((manifest.get("hosts") or {}).get("hosts") or {})
    out: dict[str, float | None] = {}
    for name, h in hosts.items():
        if "client" not in (h.get("roles") or ()):
            continue
        bits_per_s = ((h.get("link") or {}).get("rate_bits_per_s"))
        out[name] = float(bits_per_s) / 8.0 if is_finite(bits_per_s) and bits_per_s > 0 else None
    return out


def _window_mean(rows: Any, windows) -> float:
    """Mean value of (wall, value) rows inside any of the windows (NaN: none inside)."""
    if rows is None or not len(rows):
        return math.nan
    vals = [v for w, v in zip(rows["wall"], rows["value"], strict=True)
            if any(a <= w <= b for a, b in windows) and is_finite(float(v))]
    return sum(vals) / len(vals) if vals else math.nan


def link_figures(samples: Any, manifest: dict[str, Any], cell_id: str, windows) -> dict[str, Any]:
    """{host: {tx, rx, limit, limit_source, use, samples}} of the run's client hosts over the
    windows ({} without an inventory or link telemetry). ``samples``: analysis.verdicts.samples.SampleIndex."""
    clients = client_hosts(manifest)
    if not clients:
        return {}
    tx = samples.by_label(cell_id, TX, "host")
    rx = samples.by_label(cell_id, RX, "host")
    lim = samples.by_label(cell_id, LIMIT, "host")
    out: dict[str, Any] = {}
    for host, inv_limit in clients.items():
        if host not in tx and host not in rx:
            continue
        t, r = _window_mean(tx.get(host), windows), _window_mean(rx.get(host), windows)
        measured = _window_mean(lim.get(host), [(-math.inf, math.inf)])
        limit = measured if is_finite(measured) and measured > 0 else inv_limit
        busiest = max((x for x in (t, r) if is_finite(x)), default=math.nan)
        walls = (tx[host] if host in tx else rx[host])["wall"]
        n = sum(1 for w in walls if any(a <= w <= b for a, b in windows))
        out[host] = {"tx": t, "rx": r, "limit": limit, "samples": n,
                     "limit_source": ("telemetry link.limit_bytes" if limit == measured
                                      else "inventory link.rate" if limit is not None else None),
                     "use": busiest / limit if is_finite(busiest) and limit else math.nan}
    return out


def add_evidence(rd: Any, cell_id: str, windows, ev: dict[str, Any]) -> None:
    """The links' figures of one point into its evidence (``links``, ``link_use``, the source)."""
    links = link_figures(rd.samples, rd.manifest, cell_id, windows)
    if not links:
        return
    ev["links"] = links
    uses = [x["use"] for x in links.values() if is_finite(x["use"])]
    ev["link_use"] = max(uses) if uses else math.nan
    ev.setdefault("sources", {})["links"] = {
        "run": rd.run_id, "table": "samples", "agg": "mean over the steady window, per host",
        "query": f"cell_id == {cell_id!r} & metric in [{TX!r}, {RX!r}, {LIMIT!r}]",
        "hosts": "the manifest's hosts with the client role"}


def busiest_link(ev: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(host, figures) of the client link with the highest use in a point's evidence."""
    links = ev.get("links") or {}
    return max(((h, x) for h, x in links.items() if isinstance(x, dict) and is_finite(x.get("use"))),
               key=lambda hx: hx[1]["use"], default=None)


def network_verdict(ev: dict[str, Any], near: float) -> tuple[str, str] | None:
    """("network", reason) when the busiest client link moved >= ``near`` of its shaped rate."""
    best = busiest_link(ev)
    if best is None or best[1]["use"] < near:
        return None
    host, x = best
    limit: float = x["limit"]  # a use was computed: the limit is a number
    way = "sent" if is_finite(x["tx"]) and (not is_finite(x["rx"]) or x["tx"] >= x["rx"]) else "received"
    moved = x["tx"] if way == "sent" else x["rx"]
    r = ev.get("rate")
    chain = f"The chain moves {r * 8 / 1e6:.0f} Mb/s " if is_finite(r) else "The chain "
    return "network", (f"{chain}at {ev.get('concurrency')} transfers: client host {host}'s link "
                       f"{way} {moved * 8 / 1e6:.0f} Mb/s, {x['use'] * 100:.0f} % of the "
                       f"{limit * 8 / 1e6:.0f} Mb/s it is shaped to (a shaped link).")


def decide_links(ev: dict[str, Any], verdict: str, reason: str, near: float) -> tuple[str, str]:
    """The hook of analysis.verdicts.attribution: a saturated shaped link overrides the other rules."""
    return network_verdict(ev, near) or (verdict, reason)
