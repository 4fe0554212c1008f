"""Which experiment tests a verdict: the change to the named limit, through what xcbench controls.

``choose`` returns a plan: the kind (relieve | tighten), the predicted ratio changed / control,
one line saying what changes, and each arm's change:

- ``cell``: fields of the cell replaced (cores, origins), ``tmpfs``: the same gateway, clients
  and files into a tmpfs target (the storage taken out), ``level``: the transfers in flight,
  ``cap``: (roles joined by "+", cores) one CPU quota over those roles, ``twin``: another cell
  of the run replayed in this arm's place (an EC cell's replicated twin), ``link``: (host,
  bits/s) an emulated client host's link shaped to that rate for the arm (xcbench.hosts.reshape).

Or {"why": one line} when nothing xcbench controls here changes exactly that limit. Pure: the
caller passes the facts of the host (its cores, whether the cluster is xcbench's own).
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.analysis.verdicts.link_use import busiest_link
from xcbench.cell import Cell

HALF = 0.5  # host-cpu: every role under one quota at this share of the host
RELIEF = 2.0  # a doubled limit
CLUSTER_ROLES = ("osd", "mds", "mon", "mgr")  # the embedded cluster's daemons (one quota with the rest)
# the verdicts an experiment can exist for (network ones say why not, in one line)
TESTABLE = ("storage-bandwidth", "storage-iops", "storage-disk", "storage-host-cpu", "gateway",
            "concurrency", "client", "host-cpu", "ec-overhead", "network", "storage-network")


def _positive(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else None


def _quota(role: dict[str, Any] | None) -> float | None:
    """The role's CPU limit when it is a cgroup quota (not the host's cores, not unknown)."""
    if not role or _positive(role.get("limit")) is None:
        return None
    return float(role["limit"]) if str(role.get("source", "")).startswith("cgroup") else None


def choose(verdict: str, ev: dict[str, Any], cell: Cell, level: int, host_cores: float,
           embedded: bool, ceiling: float | None = None,
           links: dict[str, float] | None = None) -> dict[str, Any]:
    """The experiment for ``verdict`` of ``cell`` at ``level`` (evidence ``ev``); ``ceiling``:
    the run's gateway ceiling at this level (a tmpfs cell's rate, B/s) when it has one;
    ``links``: {host: shaped rate, bits/s} of the emulated hosts xcbench made that are up
    (xcbench.hosts.reshape.shaped)."""
    roles = ev.get("roles") or {}
    rate = _positive(ev.get("rate"))
    if verdict in ("storage-bandwidth", "storage-iops", "storage-disk", "storage-network",
                   "storage-host-cpu") and getattr(cell, "backend", "tmpfs") == "tmpfs":
        return {"why": "the cell has no storage behind its gateway (tmpfs): nothing to take out"}
    if verdict in ("storage-bandwidth", "storage-iops", "storage-disk", "storage-host-cpu"):
        pred = ceiling / rate if ceiling and rate and ceiling > rate else None
        return {"kind": "relieve", "predicted": pred,
                "what": "the storage taken out: the same gateway, clients and files into a tmpfs target"
                        + (f" (the run's gateway ceiling at c={level} predicts x{pred:.2f})" if pred else ""),
                "control": {}, "changed": {"tmpfs": True}}
    if verdict == "gateway":
        c = _positive(getattr(cell, "cores", None))
        if c is not None and c < host_cores:
            new = min(RELIEF * c, host_cores)
            return {"kind": "relieve", "predicted": new / c,
                    "what": f"twice the gateway's cores: each origin's CPU quota {c:g} -> {new:g}",
                    "control": {}, "changed": {"cell": {"cores": new}}}
        o = int(getattr(cell, "origins", 1) or 1)
        return {"kind": "relieve", "predicted": (o + 1) / o,
                "what": f"one more origin behind the redirector: {o} -> {o + 1}",
                "control": {}, "changed": {"cell": {"origins": o + 1}}}
    if verdict == "concurrency":
        return {"kind": "relieve", "predicted": RELIEF,
                "what": f"more transfers in flight: c={level} -> c={int(RELIEF * level)}",
                "control": {}, "changed": {"level": int(RELIEF * level)}}
    if verdict == "client":
        q = _quota(roles.get("client"))
        if q is None or q >= 0.99 * host_cores:
            return {"why": "the driver already had every core of this host and no second client "
                           "host is given: run the campaign from two hosts (--hosts) to relieve it"}
        new = round(min(RELIEF * q, host_cores), 3)
        return {"kind": "relieve", "predicted": new / q,
                "what": f"twice the driver's CPU: its quota {q:g} -> {new:g} cores",
                "control": {"cap": ("client", q)}, "changed": {"cap": ("client", new)}}
    if verdict == "host-cpu":
        names = ["gateway", "client", "mount"] + (list(CLUSTER_ROLES) if embedded else [])
        # half of what the roles had: the host's cores, or less where other processes took
        # part of them (a quota at half the host would then not bind at all)
        cpus = [_positive((roles.get(r) or {}).get("cpu")) for r in names if r in roles]
        used = sum(x for x in cpus if x is not None)
        had = min(host_cores, used) if used > 0 else host_cores
        quota = round(HALF * had, 3)
        of = (f"half the host's {host_cores:g}" if had == host_cores else
              f"half the {had:.2f} the roles used of the host's {host_cores:g} (other processes held the rest)")
        return {"kind": "tighten", "predicted": HALF,
                "what": f"every role xcbench started ({', '.join(names)}) under one CPU quota of "
                        f"{quota:g} cores, {of}",
                "control": {}, "changed": {"cap": ("+".join(names), quota)}}
    if verdict == "ec-overhead":
        twin = ev.get("rep_cell")
        e = _positive(ev.get("ec_ratio"))
        raw, rep = _positive(ev.get("raw_per_logical")), _positive(ev.get("rep_raw_per_logical"))
        pred = e if e is not None and e < 1 else (rep / raw if raw and rep and rep < raw else None)
        if not twin:
            return {"why": "the run has no replicated twin of this EC cell to replay beside it"}
        if pred is None:
            return {"why": "the run measured no EC cost to predict (no EC ratio below 1, no raw bytes)"}
        return {"kind": "tighten", "predicted": pred,
                "what": "the EC cell (changed) and its replicated twin (control) replayed interleaved",
                "control": {"twin": str(twin)}, "changed": {}}
    if verdict == "network":
        best = busiest_link(ev)
        host = best[0] if best else None
        rate = _positive((links or {}).get(host)) if host else None
        if host is None:
            return {"why": "the verdict names no client link (no link figures in its evidence)"}
        if rate is None:
            return {"why": f"client host {host}'s link is not up as an emulated host xcbench made "
                           "(tc is only put on a link xcbench made and records): `xcbench hosts "
                           "up` the run's inventory again, or it is the site's link"}
        # a link that binds passes half its rate on; one with headroom, more than half
        new = rate * HALF
        return {"kind": "tighten", "predicted": HALF,
                "what": f"client host {host}'s link shaped to half its rate: {rate / 1e6:g} -> "
                        f"{new / 1e6:g} Mb/s (tc tbf, both ways; recorded, restored after each run)",
                "control": {}, "changed": {"link": (host, new)}}
    if verdict == "storage-network":
        return {"why": "the storage host's link is made and removed by the self-test's own run (or "
                       "is the site's): tc is only put on a link xcbench made and records"}
    if verdict == "inconclusive":
        return {"why": "no limit was named"}
    return {"why": f"no experiment for {verdict!r}"}
