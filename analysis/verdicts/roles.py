"""Each role's CPU against its limit over a steady window, and the verdicts that follow from them.

Input: the RoleSampler's rows (xcbench/telemetry/roles.py): role_cpu_cores, role_cpu_limit_cores
[role, source], role_cpu_throttled. Per role and window: ``cpu`` (mean cores busy), ``limit``
(cores; None when the limit is unknown, never the host), ``source`` (where the limit comes from),
``use`` = cpu/limit, ``throttled`` (mean share of CFS periods its quota group was throttled in),
``saturated`` = use >= NEAR, or throttled >= THROTTLED: a group throttled in most of its periods
is at its quota even when a busy host keeps its average below NEAR of it; or its busiest thread
runs >= NEAR of one core (one thread caps the role whatever its quota: more cores do not help
it); or, under a cgroup quota of its own, its threads wait for a CPU longer than they run
(run-queue wait, analysis.verdicts.saturation.WAIT_SAT: throttling shows there). ``limited_by`` says
which. Runs without role telemetry give {} and the attribution falls back to its older rules.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

import numpy as np

from xcbench.analysis.verdicts import borderline as _bl
from xcbench.analysis.verdicts import saturation as _sat
from xcbench.analysis.verdicts.samples import SampleIndex
from xcbench.figures.numbers import is_finite
from xcbench.figures.units import fmt_num

NEAR = 0.85
THROTTLED = 0.5  # a majority of the CFS periods in which the role ran ended throttled
ORDER = ("gateway", "mount", "client", "osd", "mds", "probe")
# what a role at its own limit means for the chain; fio (probe) runs outside the campaigns
VERDICT_OF = {"gateway": "gateway", "mount": "gateway", "client": "client", "osd": "storage",
              "mds": "storage"}
NAMES = {"gateway": "gateway (xrootd, cmsd)", "mount": "gateway's ceph-fuse mount",
         "client": "client (xcbench driver)", "osd": "OSDs", "mds": "MDS", "probe": "fio probe"}
MIB = float(1 << 20)


def _order(role: str) -> tuple[int, str]:
    return (ORDER.index(role) if role in ORDER else len(ORDER), role)


def _mask(wall: np.ndarray, windows) -> np.ndarray:
    keep = np.zeros(wall.size, dtype=bool)
    for w0, w1 in windows:
        keep |= (wall >= w0) & (wall <= w1)
    return keep


def role_usage(s: SampleIndex, cell_id: str, windows, near: float = NEAR) -> dict[str, dict[str, Any]]:
    """{role: {cpu, limit, source, use, saturated}} over the windows [(wall0, wall1), ...]."""
    cpu = s.by_label(cell_id, "role_cpu_cores", "role")
    lim = s.by_label(cell_id, "role_cpu_limit_cores", "role")
    throttled = s.by_label(cell_id, "role_cpu_throttled", "role")
    sched = _sat.role_sched(s, cell_id, windows)
    out: dict[str, dict[str, Any]] = {}
    for role in sorted(set(cpu) | set(lim), key=_order):
        c = cpu.get(role)
        cores = math.nan
        if c is not None:
            v = c["value"].to_numpy()[_mask(c["wall"].to_numpy(), windows)]
            v = v[np.isfinite(v)]
            cores = float(v.mean()) if v.size else math.nan
        limit, source = None, "unknown (no limit sampled)"
        lrows = lim.get(role)
        if lrows is not None and len(lrows):
            m = _mask(lrows["wall"].to_numpy(), windows)
            sel = lrows[m] if m.any() else lrows  # a window shorter than the limit's re-read interval
            srcs = [lab.get("source", "unknown (no source)") for lab in sel["labels"]]
            source = Counter(srcs).most_common(1)[0][0]
            vals = sel["value"].to_numpy()[[x == source for x in srcs]]
            vals = vals[np.isfinite(vals)]
            if vals.size and not source.startswith("unknown"):
                limit = float(vals.mean())
        use = cores / limit if is_finite(cores) and limit else None
        thr = math.nan
        if (t := throttled.get(role)) is not None:
            v = t["value"].to_numpy()[_mask(t["wall"].to_numpy(), windows)]
            v = v[np.isfinite(v)]
            thr = float(v.mean()) if v.size else math.nan
        sx = sched.get(role, {})
        share = _sat.wait_share(sx.get("runq_wait"), cores)
        hot = sx.get("hot_thread") or {}
        by = [why for why, yes in (
            ("limit", use is not None and use >= near),
            ("throttled", limit is not None and is_finite(thr) and thr >= THROTTLED),
            ("thread", is_finite(hot.get("cores")) and hot["cores"] >= near),
            # the wait is the quota's only where the quota throttled the role at all: on a
            # full host a role under a quota it never reaches waits for the host's cores
            # (a decoy quota above what it uses), not for its own limit
            ("run-queue wait", source.startswith("cgroup") and share is not None
             and share >= _sat.WAIT_SAT and is_finite(thr) and thr > 0),
        ) if yes]
        out[role] = {"cpu": cores, "limit": limit, "source": source, "use": use,
                     "throttled": thr if is_finite(thr) else None, "runq_wait": sx.get("runq_wait"),
                     "wait_share": share, "hot_thread": hot or None, "limited_by": by, "saturated": bool(by)}
        if "pressure" in sx:
            out[role].update(pressure=sx["pressure"], pressure_source=sx.get("pressure_source"))
    return out


def role_series(s: SampleIndex, cell_id: str) -> dict[str, tuple[Any, Any]]:
    """{role: (cpu rows, limit rows)} (wall, value[, labels]) of a cell, for the timeline plot."""
    cpu = s.by_label(cell_id, "role_cpu_cores", "role")
    lim = s.by_label(cell_id, "role_cpu_limit_cores", "role")
    return {r: (cpu.get(r), lim.get(r)) for r in sorted(set(cpu) | set(lim), key=_order)}


def source_note(run_id: str, cell_id: str, windows) -> dict[str, Any]:
    w = " | ".join(f"(wall >= {a!r} & wall <= {b!r})" for a, b in windows)
    return {"run": run_id, "table": "samples", "agg": "mean per role (labels.role)",
            "query": f"cell_id == {json.dumps(cell_id)} & metric in ['role_cpu_cores', "
                     f"'role_cpu_limit_cores']" + (f" & ({w})" if w else "")}


def share_text(roles: dict[str, dict[str, Any]], busy_cores: float | None = None) -> str:
    """'gateway 0.9, client 0.6, osd 0.3, other 0.1' (largest first)."""
    parts = sorted(((r, x["cpu"]) for r, x in roles.items() if is_finite(x["cpu"]) and r != "probe"),
                   key=lambda x: -x[1])
    txt = [f"{r} {fmt_num(c)}" for r, c in parts]
    if is_finite(busy_cores):
        other = busy_cores - sum(c for _, c in parts)
        if other >= 0.05:
            txt.append(f"other {fmt_num(other)}")
    return ", ".join(txt)


def _limit_text(x: dict[str, Any]) -> str:
    thr, by, hot, share = x.get("throttled"), x.get("limited_by") or (), x.get("hot_thread"), x.get("wait_share")
    t = f", throttled in {thr * 100:.0f} % of its CFS periods" if is_finite(thr) else ""
    if x.get("limit") and is_finite(x.get("use")):
        head = (f"{fmt_num(x['cpu'])} of {fmt_num(x['limit'])} cores ({x['use'] * 100:.0f} %, "
                f"{x['source']}){t}")
    else:
        head = f"{fmt_num(x['cpu'])} cores (limit: {x['source']}){t}"
    if "thread" in by and hot:
        head += (f", its busiest thread ({hot['name']}) at {fmt_num(hot['cores'])} of one core: "
                 f"one thread's limit, which more cores do not lift")
    if is_finite(share) and ("run-queue wait" in by or share >= _sat.WAIT_SAT):
        head += f", waiting for a CPU {share * 100:.0f} % of its runnable time"
    return head


def _level(x: dict[str, Any]) -> float:
    """How close a saturated role is to what holds it: its use of its limit or, for a thread at
    a core, that thread's share of one core."""
    hot = x.get("hot_thread") or {}
    t = hot.get("cores") if "thread" in (x.get("limited_by") or ()) else None
    return max(x.get("use") or 0.0, t if is_finite(t) else 0.0)


def _ops_key(ev: dict[str, Any]) -> str:
    return "pool_read_ops" if ev.get("direction") == "read" else "pool_write_ops"


def _storage_kind(ev: dict[str, Any]) -> str:
    u = {k: v for k, v in (ev.get("utilisation") or {}).items() if k not in ev.get("not_ceilings", ())}
    ui, ub = u.get("storage-iops"), u.get("storage-bandwidth")
    if is_finite(ui) and (not is_finite(ub) or ui >= ub):
        return "storage-iops"
    if is_finite(ub):
        return "storage-bandwidth"
    ops = ev.get(_ops_key(ev))
    # no probe to compare with: small client ops say IOPS, large ones bandwidth
    return "storage-iops" if is_finite(ops) and ops > 0 and ev["rate"] / ops < MIB else "storage-bandwidth"


def shared_limits(roles: dict[str, dict[str, Any]], near: float = NEAR) -> dict[str, dict[str, Any]]:
    """Roles that share one quota group (the same cgroup limit source) and are at it together:
    {"gateway": {... , "cpu": the group's cores, "use": summed cpu / limit, "saturated": True,
    "shared_with": ["gateway", "client"]}, "client": {same}} (each role of such a group)."""
    groups: dict[str, list[str]] = {}
    for r, x in roles.items():
        if r in VERDICT_OF and x.get("limit") and str(x.get("source", "")).startswith("cgroup"):
            groups.setdefault(x["source"], []).append(r)
    out = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        x0 = roles[members[0]]
        cpu = sum(roles[r]["cpu"] for r in members if is_finite(roles[r]["cpu"]))
        use = cpu / x0["limit"]
        thr = x0.get("throttled")
        if use >= near or (is_finite(thr) and thr >= THROTTLED):
            members = sorted(members, key=lambda r: (-(roles[r]["cpu"] if is_finite(roles[r]["cpu"]) else 0),
                                                     _order(r)))
            for r in members:
                out[r] = {**roles[r], "cpu": cpu, "use": use, "saturated": True, "shared_with": members}
    return out


def at_limit_verdict(ev: dict[str, Any], at: str, rate_txt: str) -> tuple[str, str] | None:
    """The verdict of the role that is nearest above NEAR of its own limit, or None. Roles
    sharing one quota group are at it together (their summed CPU): the verdict is the busier
    one's, and the reason and ``limited_roles`` name every role of the group."""
    roles = {**(ev.get("roles") or {}), **shared_limits(ev.get("roles") or {})}
    sat = [(r, x) for r, x in roles.items() if x["saturated"] and r in VERDICT_OF]
    if not sat:
        return None
    role, x = max(sat, key=lambda rx: (_level(rx[1]), rx[1].get("throttled") or 0, -_order(rx[0])[0]))
    verdict = VERDICT_OF[role]
    ev["limited_role"] = role
    if x.get("shared_with"):
        ev["limited_roles"] = list(x["shared_with"])
        names = " and the ".join(NAMES[r] for r in x["shared_with"])
        each = ", ".join(f"{r} {fmt_num(ev['roles'][r]['cpu'])}" for r in x["shared_with"])
        head = f"The {names} share one CPU limit and are at it together {at}: {_limit_text(x)} ({each})"
        return verdict, f"{head}; the chain moves {rate_txt}: give them limits (or hosts) of their own."
    verb = "are at their" if role == "osd" else "is at its"
    head = f"The {NAMES[role]} {verb} CPU limit {at}: {_limit_text(x)}"
    if verdict == "gateway":
        return verdict, f"{head}; the chain moves {rate_txt}."
    if verdict == "client":
        return verdict, (f"{head}; the chain moves {rate_txt}, so the driver, not the site, is "
                         f"measured: run the campaign from more client hosts, or through FTS.")
    verdict = _storage_kind(ev)
    figs = []
    io = "read" if ev.get("direction") == "read" else "write"
    if is_finite(ev.get(_ops_key(ev))):
        figs.append(f"the pool {ev.get('pool')} does {fmt_num(ev[_ops_key(ev)])} {io} op/s")
    u = {k: v for k, v in (ev.get("utilisation") or {}).items() if k not in ev.get("not_ceilings", ())}
    if verdict == "storage-iops" and is_finite(u.get("storage-iops")):
        figs.append(f"{u['storage-iops'] * 100:.0f} % of the {fmt_num(ev['fio_iops'])} IOPS fio measured")
    if verdict == "storage-bandwidth" and is_finite(u.get("storage-bandwidth")):
        figs.append(f"{u['storage-bandwidth'] * 100:.0f} % of the fio {io} ceiling")
    more = ("; " + ", ".join(figs)) if figs else ""
    return verdict, f"{head}; the chain moves {rate_txt}{more}."


def host_cpu_verdict(ev: dict[str, Any], at: str, rate_txt: str, near: float = NEAR,
                     reaches: Any = None) -> tuple[str, str] | None:
    """host-cpu: roles share this host, no role is at its own limit, and its CPU runs out.
    ``reaches(busy)``: whether the busy share reaches ``near`` (analysis.verdicts.borderline: within its
    noise); default: busy >= near.

    Where waiting was measured (system CPU pressure, the roles' run-queue wait), busy cores are
    not enough: runnable tasks must wait too (pressure >= PSI_WAIT or the chain's wait share >=
    CHAIN_WAIT, analysis.verdicts.saturation). And the host's CPU runs out below ``near`` busy when the
    chain's own tasks wait and more transfers surely gain little (scaling efficiency's upper
    bound below EFFICIENCY_LOW): bursts leave cores idle on average while the work queues."""
    roles = ev.get("roles") or {}
    busy, cores = ev.get("host_busy"), ev.get("cores")
    if not roles or not (is_finite(busy) and is_finite(cores)) or "host-cpu" in ev.get(_bl.SKIP, ()):
        return None  # taken as not passing: the co-limits' and "otherwise" cascades (rules)
    if any(x["saturated"] for x in roles.values()):
        return None
    busy_ok = reaches(busy) if reaches is not None else busy >= near
    pressure, chain = ev.get("cpu_pressure"), _sat.chain_wait(roles)
    eff = ev.get("scaling_efficiency") or {}
    ev["chain_wait_share"] = chain
    waits_txt = ""
    if is_finite(pressure) or chain is not None:
        psi_waits = is_finite(pressure) and pressure >= _sat.PSI_WAIT
        chain_waits = chain is not None and chain >= _sat.CHAIN_WAIT
        low = is_finite(eff.get("high")) and eff["high"] < _sat.EFFICIENCY_LOW
        ev["host_cpu_waits"] = {"pressure": psi_waits, "chain": chain_waits, "low_efficiency": low}
        if chain_waits and not busy_ok and is_finite(eff.get("value")):
            # the efficiency decides here ("surely" below the line: its upper end); within its
            # noise of the line, another run may fall on the other side: a borderline candidate
            _bl.passes(ev, "host-cpu", "scaling efficiency", eff["value"], _sat.EFFICIENCY_LOW,
                       eff.get("rel_se"), at_most=True)
        if not (psi_waits or chain_waits):
            return None  # the cores are busy but nothing queues for them
        if not (busy_ok or (chain_waits and low)):
            return None
        w = []
        if is_finite(pressure):
            w.append(f"tasks waited for a CPU {pressure * 100:.0f} % of the time (pressure)")
        if chain is not None:
            w.append(f"the chain's threads {chain * 100:.0f} % of their runnable time")
        if is_finite(eff.get("value")):
            w.append(f"x{fmt_num(eff['value'] * eff['to'] / eff['from'])} the rate for "
                     f"x{fmt_num(eff['to'] / eff['from'])} the transfers from {fmt_num(eff['from'])} to "
                     f"{fmt_num(eff['to'])} (efficiency {eff['value'] * 100:.0f} %)")
        waits_txt = "; " + ", ".join(w)
    elif not busy_ok:
        return None
    used = busy * cores
    ev["host_cores_busy"] = used
    unknown = [r for r, x in roles.items() if x["limit"] is None]
    unk = f" (limit unknown: {', '.join(unknown)})" if unknown else ""
    return "host-cpu", (f"The host's CPU runs out {at}: {fmt_num(used)} of {fmt_num(cores)} cores "
                        f"busy ({busy * 100:.0f} %){waits_txt}, shared by {share_text(roles, used)}, "
                        f"with no role at its own limit{unk}, while the chain moves {rate_txt}: "
                        f"separate these roles onto their own hosts (or limit them) to see which "
                        f"one caps the chain.")


def summary(roles: dict[str, dict[str, Any]]) -> str:
    """'gateway 0.24/0.25 (96 %), client 0.3/host 2, osd 0.4/unknown' for inconclusive reasons."""
    out = []
    for r, x in roles.items():
        if not is_finite(x["cpu"]) or r == "probe":
            continue
        lim = "unknown" if x["limit"] is None else fmt_num(x["limit"])
        pct = f" ({x['use'] * 100:.0f} %)" if x["use"] is not None else ""
        out.append(f"{r} {fmt_num(x['cpu'])}/{lim}{pct}")
    return ", ".join(out)
