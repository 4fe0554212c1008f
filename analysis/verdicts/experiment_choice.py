"""Which experiment tests a verdict: the change to the named limit, through what xcbench controls,
the rival causes it separates, and what it predicts under each.

``choose`` returns a plan: the kind (relieve | tighten), the predicted ratio changed / control
under the named cause, ``rivals`` ({cause: predicted ratio under that cause}: the verdicts a run
could plausibly have named instead), what the experiment ``confirms`` (a storage experiment
confirms "the storage side"), one line saying what changes, and each arm's change:

- ``cell``: fields of the cell replaced (cores, origins), ``tmpfs``: the same gateway, clients
  and files into a tmpfs target (the storage taken out), ``level``: the transfers in flight,
  ``cap``: (roles joined by "+", cores) one CPU quota over those roles, ``weight``: (roles,
  shares) every role in one CPU group of that weight and no quota (the CPU other processes held
  goes to the roles first), ``twin``: another cell of the run replayed in this arm's place (an
  EC cell's replicated twin), ``link``: (host, bits/s) an emulated client host's link shaped to
  that rate for the arm (xcbench.hosts.reshape), ``lift``: (a limit xcbench made on the OSDs,
  its new value) set in place for the arm (xcbench.selftest.lifts: the device's write bytes or
  IOs throttle, the OSDs' CPU quota).

Or {"why": one line} when nothing xcbench controls here changes exactly that limit ("not
testable here", with its reason: an honest answer; a confirmation that could not have failed is
not one). The table of experiments, their rivals and predictions is ``EXPERIMENTS`` (and
docs/experiments.md); analysis.verdicts.experiment.judge holds the outcome against them: an
experiment whose rival predicts the same checks a proportion, never the name. Pure: the caller
passes the facts of the host (its cores, whether the cluster is xcbench's own, the limits
xcbench made on the OSDs).

**Storage sub-kinds.** On a cluster xcbench started whose OSDs sit under limits xcbench made
(the self-test's: a device write-bytes throttle, a write-IOs throttle, a CPU quota), the named
sub-kind's own limit is doubled in place (it rises x2 where that limit binds; a rival sub-kind's
limit binding instead, the rate stays): storage-bandwidth, -iops and -host-cpu are told apart.
Where the named sub-kind has no limit of its kind there, the storage is taken out (the storage
side only, the limits there are said). Everywhere else (a cluster xcbench did not start, or OSDs under no limit of
xcbench's) the storage taken out confirms "the storage side" only, and says so; the sub-kind is
named from telemetry.
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.analysis.verdicts.link_use import busiest_link
from xcbench.cell import Cell

HALF = 0.5  # a halved link; the self-test's every-role quota at half of what the roles used
RELIEF = 2.0  # a doubled limit
WEIGHT = 10 * 1024  # host-cpu's relief: the roles' group weighs 10x a process of nice 0 (cpu.shares 1024)
NEAR = 0.85  # the rules' line (analysis.verdicts.rules.NEAR): ec-overhead's claim, E <= 0.85
NO_CPU_TO_GIVE = 0.10  # cores: less than this held by other processes is no CPU to give (a sample's noise)
CLUSTER_ROLES = ("osd", "mds", "mon", "mgr")  # the embedded cluster's daemons (one quota with the rest)
STORAGE = ("storage-bandwidth", "storage-iops", "storage-disk", "storage-host-cpu")
SATURATED = ("gateway", "client", "host-cpu", "network")  # resources more transfers do not widen
# a storage sub-kind -> the kind of limit that is its own (xcbench.selftest.lifts), and the
# experiment that doubles it in place
LIFTS = {"storage-bandwidth": ("write_bytes_per_s", "twice the device's write bytes"),
         "storage-iops": ("write_iops", "twice the device's write IOs"),
         "storage-host-cpu": ("cpu", "twice the OSDs' cores")}
LIMIT_WORDS = {"write_bytes_per_s": "a device write-bytes throttle", "write_iops": "a device write-IOs throttle",
               "cpu": "a CPU quota"}
# the verdicts an experiment can exist for (network ones say why not, in one line)
TESTABLE = (*STORAGE, "gateway", "concurrency", "client", "host-cpu", "ec-overhead", "network",
            "storage-network")

# Each experiment kind: what it changes, and what it predicts under the named cause and under
# each rival cause ("x1" = the rate stays). judge() confirms only where no rival predicts the
# same; docs/experiments.md prints this table (tests/unit/analysis/test_experiments_doc.py).
EXPERIMENTS: dict[str, dict[str, Any]] = {
    "storage out": {
        "tests": STORAGE, "change": "the same gateway, clients and files into a tmpfs target",
        "named": "the storage side: rises to the run's tmpfs-gateway ceiling (G / R)",
        "rivals": {"gateway": "x1", "client": "x1", "network": "x1",
                   "host-cpu": "one box: rises by the CPU the OSDs and ceph-fuse held (used / "
                               "(used - theirs)); roles on hosts of their own: x1"},
        "confirms": "the storage side (a cluster xcbench did not start, or OSDs under no limit "
                    "xcbench made); the sub-kind is named from telemetry"},
    "twice the device's write bytes": {
        "tests": ("storage-bandwidth",), "change": "the OSDs' device write-bytes throttle xcbench "
                                                   "made doubled in place (a cluster xcbench started)",
        "named": "x2, at most the run's tmpfs-gateway ceiling (G / R)",
        "rivals": {"storage-iops": "x1 (the IOs throttle still binds)", "storage-host-cpu": "x1",
                   "gateway": "x1", "client": "x1", "host-cpu": "x1", "concurrency": "x1"}},
    "twice the device's write IOs": {
        "tests": ("storage-iops",), "change": "the OSDs' device write-IOs throttle xcbench made "
                                              "doubled in place (a cluster xcbench started)",
        "named": "x2, at most the run's tmpfs-gateway ceiling (G / R)",
        "rivals": {"storage-bandwidth": "x1 (the bytes throttle still binds)", "storage-host-cpu": "x1",
                   "gateway": "x1", "client": "x1", "host-cpu": "x1", "concurrency": "x1"}},
    "twice the OSDs' cores": {
        "tests": ("storage-host-cpu",), "change": "the OSDs' CPU quota xcbench made doubled in place "
                                                  "(a cluster xcbench started)",
        "named": "x(new quota / old), at most the run's tmpfs-gateway ceiling (G / R)",
        "rivals": {"storage-bandwidth": "x1", "storage-iops": "x1", "gateway": "x1", "client": "x1",
                   "host-cpu": "x1 (the host has no more CPU to give)", "concurrency": "x1"}},
    "twice the gateway's cores": {
        "tests": ("gateway",), "change": "each origin's CPU quota doubled (a cores cell)",
        "named": "x2 (the new quota / the old)",
        "rivals": {"host-cpu": "x1 (the host has no more CPU to give)", "client": "x1",
                   "concurrency": "x1", "storage-bandwidth": "x1", "storage-iops": "x1"}},
    "one more origin": {
        "tests": ("gateway",), "change": "one more origin behind the redirector",
        "named": "x(o+1)/o", "rivals": {"host-cpu": "x1", "client": "x1", "storage-bandwidth": "x1",
                                       "storage-iops": "x1"}},
    "twice the transfers": {
        "tests": ("concurrency",), "change": "twice the transfers in flight",
        "named": "x2", "rivals": {r: "x1 (a saturated resource is not widened by more transfers)"
                                  for r in (*SATURATED, "storage-bandwidth", "storage-iops")}},
    "twice the driver's CPU": {
        "tests": ("client",), "change": "the driver's CPU quota doubled",
        "named": "x2", "rivals": {"gateway": "x1", "host-cpu": "x1", "storage-bandwidth": "x1",
                                  "storage-iops": "x1", "concurrency": "x1"}},
    "CPU given to the roles": {
        "tests": ("host-cpu",), "change": "every role in one CPU group weighing 10x another "
                                          "process: the CPU other processes held goes to the roles",
        "named": "x(used + others') / used, at most the host's cores / used",
        "rivals": {"gateway": "x1 (its own quota still binds)", "client": "x1",
                   "storage-bandwidth": "x1", "storage-iops": "x1", "concurrency": "x1"},
        "not testable": "the roles were the box's only load: no CPU to give"},
    "every role under one quota below their use": {
        "tests": (), "change": "every role under one quota at half of what they used (the "
                               "self-test's proportion check)",
        "named": "x0.5", "rivals": {"any cause": "x0.5: a quota below what the roles use lowers "
                                                 "the rate whatever capped it"},
        "confirms": "nothing: a proportion checked"},
    "EC against its twin": {
        "tests": ("ec-overhead",), "change": "the EC cell and its replicated twin replayed interleaved",
        "named": "at most x0.85 (the rule's claim); x(twin's raw bytes / EC's) predicted from the "
                 "raw bytes the pools counted",
        "rivals": {"not EC (both held by one limit)": "x1"}},
    "twice the client link": {
        "tests": ("network",), "change": "an emulated client host's link shaped to twice its rate",
        "named": "x2 (a fifth of it asked: the next limit may bind first)",
        "rivals": {"a link with headroom": "x1 (the link was not what held the chain)"}},
    "half the client link": {
        "tests": (), "change": "an emulated client host's link shaped to half its rate (no longer "
                              "offered: it cannot tell a binding link from one at high use)",
        "named": "x0.5", "rivals": {"a link with headroom (use u)": "x min(1, 0.5 / u): at u = 0.95, "
                                                                     "x0.53, the same within noise"}},
}


def _x1(experiment: str) -> dict[str, float]:
    """The rivals of an experiment that predict no change (x1), as EXPERIMENTS states them."""
    return {r: 1.0 for r, said in EXPERIMENTS[experiment]["rivals"].items() if said.startswith("x1")}


def _positive(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else None


def _quota(role: dict[str, Any] | None) -> float | None:
    """The role's CPU limit when it is a cgroup quota (not the host's cores, not unknown)."""
    if not role or _positive(role.get("limit")) is None:
        return None
    return float(role["limit"]) if str(role.get("source", "")).startswith("cgroup") else None


def role_names(embedded: bool) -> list[str]:
    """Every role xcbench started: the gateway, the driver, its mount, and the embedded
    cluster's daemons where the cluster is xcbench's."""
    return ["gateway", "client", "mount"] + (list(CLUSTER_ROLES) if embedded else [])


def roles_used(ev: dict[str, Any], names: list[str]) -> float:
    """Cores the roles ``names`` used together over the level (0 when unknown)."""
    roles = ev.get("roles") or {}
    return sum(x for x in (_positive((roles.get(r) or {}).get("cpu")) for r in names if r in roles) if x)


def cpu_to_give(ev: dict[str, Any], embedded: bool) -> float | None:
    """Cores other processes held while the level ran: the host's busy cores less what the
    roles xcbench started used (None: not measured)."""
    busy, cores = _positive(ev.get("host_busy")), _positive(ev.get("cores"))
    used = roles_used(ev, role_names(embedded))
    if busy is None or cores is None or used <= 0:
        return None
    return max(0.0, busy * cores - used)


def storage_kind(ev: dict[str, Any]) -> str:
    """The storage sub-kind telemetry points at (named, not tested apart): the OSDs at their
    CPU limit -> storage-host-cpu, the device's IO count nearer its ceiling than its bytes ->
    storage-iops, else the nearer of the pool's op/s and bytes to their fio ceilings."""
    if ((ev.get("roles") or {}).get("osd") or {}).get("saturated"):
        return "storage-host-cpu"
    dev = ev.get("device_use") or {}
    ios, nbytes = _positive(dev.get("ios")), _positive(dev.get("bytes"))
    if ios is not None and nbytes is not None:
        return "storage-iops" if ios > nbytes else "storage-bandwidth"
    u = ev.get("utilisation") or {}
    iops, bw = _positive(u.get("storage-iops")), _positive(u.get("storage-bandwidth"))
    return "storage-iops" if iops is not None and (bw is None or iops > bw) else "storage-bandwidth"


def choose(verdict: str, ev: dict[str, Any], cell: Cell, level: int, host_cores: float,
           embedded: bool, ceiling: float | None = None,
           links: dict[str, float] | None = None, limits: dict[str, dict[str, Any]] | None = None,
           experiment: str | None = None) -> dict[str, Any]:
    """The experiment for ``verdict`` of ``cell`` at ``level`` (evidence ``ev``); ``ceiling``:
    the run's gateway ceiling at this level (a tmpfs cell's rate, B/s) when it has one;
    ``links``: {host: shaped rate, bits/s} of the emulated hosts xcbench made that are up
    (xcbench.hosts.reshape.shaped); ``limits``: {kind: limit} xcbench made on the OSDs of a
    cluster it started (xcbench.selftest.lifts.found); ``experiment``: one of EXPERIMENTS that
    tests ``verdict``, instead of the one chosen here (e.g. "one more origin" for a cores cell)."""
    if experiment is not None and verdict not in EXPERIMENTS.get(experiment, {}).get("tests", ()):
        return {"why": f"the experiment {experiment!r} does not test {verdict} (see docs/experiments.md)"}
    roles = ev.get("roles") or {}
    rate = _positive(ev.get("rate"))
    if verdict in (*STORAGE, "storage-network") and getattr(cell, "backend", "tmpfs") == "tmpfs":
        return {"why": "the cell has no storage behind its gateway (tmpfs): nothing to take out"}
    if verdict in STORAGE:
        lift = _lift(verdict, limits, rate, ceiling, host_cores) if embedded and limits and \
            experiment != "storage out" else None
        if lift is not None:
            return lift
        out = _storage_out(ev, level, rate, ceiling, embedded)
        if embedded and limits:  # limits of other sub-kinds only: the storage side, said so
            out["what"] += (f"; the OSDs' limits xcbench made ({', '.join(LIMIT_WORDS[k] for k in sorted(limits))}) "
                            f"hold none of {verdict}'s own kind to lift")
        return out
    if verdict == "gateway":
        c = _positive(getattr(cell, "cores", None))
        if c is not None and c < host_cores and experiment != "one more origin":
            new = min(RELIEF * c, host_cores)
            return {"kind": "relieve", "predicted": new / c, "rivals": _x1("twice the gateway's cores"),
                    "experiment": "twice the gateway's cores",
                    "what": f"twice the gateway's cores: each origin's CPU quota {c:g} -> {new:g}",
                    "control": {}, "changed": {"cell": {"cores": new}}}
        o = int(getattr(cell, "origins", 1) or 1)
        if o < 2:
            return {"why": "one more origin would put a redirector in front of the one origin, and "
                           "its lookup of each new file waits (cms.delay lookup: ~1 s a file measured "
                           "here), so the arms would differ by more than the gateway's capacity; a "
                           "cell with a cores quota, or 2 origins, can be tested"}
        return {"kind": "relieve", "predicted": (o + 1) / o, "rivals": _x1("one more origin"),
                "experiment": "one more origin",
                "what": f"one more origin behind the redirector: {o} -> {o + 1}",
                "control": {}, "changed": {"cell": {"origins": o + 1}}}
    if verdict == "concurrency":
        return {"kind": "relieve", "predicted": RELIEF, "experiment": "twice the transfers",
                "rivals": _x1("twice the transfers"),
                "what": f"more transfers in flight: c={level} -> c={int(RELIEF * level)}",
                "control": {}, "changed": {"level": int(RELIEF * level)}}
    if verdict == "client":
        if ev.get("client_node"):  # analysis.verdicts.node_use: a client host's CPUs at their limit
            return {"why": f"client host {ev['client_node']}'s CPUs were at their limit: relieving "
                           "them needs another client host (more nodes in the inventory or the "
                           "allocation), and confirm replays the run's hosts as they were"}
        q = _quota(roles.get("client"))
        if q is None or q >= 0.99 * host_cores:
            return {"why": "the driver already had every core of this host and no second client "
                           "host is given: run the campaign from two hosts (--hosts) to relieve it"}
        new = round(min(RELIEF * q, host_cores), 3)
        return {"kind": "relieve", "predicted": new / q, "experiment": "twice the driver's CPU",
                "rivals": _x1("twice the driver's CPU"),
                "what": f"twice the driver's CPU: its quota {q:g} -> {new:g} cores",
                "control": {"cap": ("client", q)}, "changed": {"cap": ("client", new)}}
    if verdict == "host-cpu":
        return _host_cpu(ev, host_cores, embedded)
    if verdict == "ec-overhead":
        return _ec(ev)
    if verdict == "network":
        return _network(ev, links)
    if verdict == "storage-network":
        return {"why": "the storage host's link is made and removed by the self-test's own run (or "
                       "is the site's): tc is only put on a link xcbench made and records"}
    if verdict == "inconclusive":
        return {"why": "no limit was named"}
    return {"why": f"no experiment for {verdict!r}"}


def _storage_out(ev: dict[str, Any], level: int, rate: float | None, ceiling: float | None,
                 embedded: bool) -> dict[str, Any]:
    """The storage taken out: confirms the storage side, not its sub-kind (named from
    telemetry). On one box it also frees the CPU the OSDs and ceph-fuse held: host-cpu is then
    a rival that predicts a rise too."""
    pred = ceiling / rate if ceiling and rate and ceiling > rate else None
    rivals = {r: 1.0 for r in EXPERIMENTS["storage out"]["rivals"] if r != "host-cpu"}
    used = roles_used(ev, role_names(embedded))
    storage_cpu = roles_used(ev, ["osd", "mds", "mount"] if embedded else ["mount"])
    if used > storage_cpu > 0 and _positive(ev.get("host_busy")) and ev["host_busy"] >= NEAR:
        rivals["host-cpu"] = min(used / (used - storage_cpu), pred or math.inf)
    kind = storage_kind(ev)
    return {"kind": "relieve", "predicted": pred, "rivals": rivals, "experiment": "storage out",
            "confirms": "storage side", "storage_kind": kind,
            "what": "the storage taken out: the same gateway, clients and files into a tmpfs target"
                    + (f" (the run's gateway ceiling at c={level} predicts x{pred:.2f})" if pred else "")
                    + f"; confirms the storage side, telemetry points at {kind}",
            "control": {}, "changed": {"tmpfs": True}}


def _lift(verdict: str, limits: dict[str, dict[str, Any]], rate: float | None, ceiling: float | None,
          host_cores: float) -> dict[str, Any] | None:
    """The named sub-kind's own limit (one xcbench made on the OSDs) doubled in place: x2 where
    it binds, x1 where another sub-kind's limit does; at most the run's gateway ceiling. None
    where the OSDs hold no limit of its kind (the caller takes the storage out)."""
    kind, name = LIFTS.get(verdict, (None, None))
    limit = limits.get(kind) if kind else None
    if kind is None or limit is None or name is None:
        return None
    old = float(limit["value"])
    new = RELIEF * old
    if kind == "cpu":  # no more than the host's cores
        new = min(new, host_cores * old / float(limit["cores"]))
    pred = new / old
    if ceiling and rate and ceiling > rate:
        pred = min(pred, ceiling / rate)
    unit = {"write_bytes_per_s": " B/s", "write_iops": " IO/s", "cpu": " us per period"}[kind]
    return {"kind": "relieve", "predicted": pred, "experiment": name, "rivals": _x1(name),
            "confirms": verdict,
            "what": f"{name}: the {LIMIT_WORDS[kind]} xcbench made on the OSDs ({limit['group']}) "
                    f"{old:g} -> {new:g}{unit}, in place (recorded, restored after each run)",
            "control": {}, "changed": {"lift": (dict(limit), int(round(new)))}}


def _host_cpu(ev: dict[str, Any], host_cores: float, embedded: bool) -> dict[str, Any]:
    """CPU given to the roles: where other processes held some of the host, every role in one
    CPU group weighing WEIGHT (no quota) takes it from them; the rate must rise by the share
    they held. A tightening below what the roles used would fall x0.5 whatever capped the
    level: it cannot refute a rival, so it is not offered here."""
    names = role_names(embedded)
    used = roles_used(ev, names)
    other = cpu_to_give(ev, embedded)
    if other is None:
        return {"why": "no CPU to give: the host's and the roles' CPU were not both measured"}
    if other < NO_CPU_TO_GIVE:
        return {"why": f"no CPU to give: the roles were the box's only load ({used:.2f} of "
                       f"{host_cores:g} cores; others {other:.2f}); a tightening below what they "
                       "used falls whatever capped the level, and a role moved to a host of "
                       "its own (--hosts) needs an inventory"}
    pred = min(host_cores, used + other) / used
    return {"kind": "relieve", "predicted": pred, "experiment": "CPU given to the roles",
            "rivals": _x1("CPU given to the roles"),
            "what": f"every role xcbench started ({', '.join(names)}) in one CPU group weighing "
                    f"{WEIGHT // 1024}x another process: the {other:.2f} cores other processes held "
                    f"go to the roles first ({used:.2f} used)",
            "control": {}, "changed": {"weight": ("+".join(names), WEIGHT)}}


def _ec(ev: dict[str, Any]) -> dict[str, Any]:
    """The EC cell against its twin, interleaved: at most x0.85 asked (the rule's own claim,
    E <= NEAR); the cost predicted from the raw bytes the pools counted, never from the run's
    own EC/replicated rate (which the replay measures again)."""
    twin = ev.get("rep_cell")
    raw, rep = _positive(ev.get("raw_per_logical")), _positive(ev.get("rep_raw_per_logical"))
    if not twin:
        return {"why": "the run has no replicated twin of this EC cell to replay beside it"}
    pred = rep / raw if raw and rep else None
    return {"kind": "tighten", "predicted": pred if pred is not None and pred < 1 else None,
            "need": NEAR, "experiment": "EC against its twin",
            "rivals": _x1("EC against its twin"),
            "what": "the EC cell (changed) and its replicated twin (control) replayed interleaved; "
                    f"asked at most x{NEAR:.2f}, the rule's claim"
                    + (f"; the raw bytes the pools counted predict x{pred:.2f}" if pred else
                       "; no raw bytes counted for a prediction"),
            "control": {"twin": str(twin)}, "changed": {}}


def _network(ev: dict[str, Any], links: dict[str, float] | None) -> dict[str, Any]:
    best = busiest_link(ev)
    host = best[0] if best else None
    rate = _positive((links or {}).get(host)) if host else None
    if host is None:
        return {"why": "the verdict names no client link (no link figures in its evidence)"}
    if rate is None:
        return {"why": f"client host {host}'s link is not up as an emulated host xcbench made "
                       "(tc is only put on a link xcbench made and records): `xcbench hosts "
                       "up` the run's inventory again, or it is the site's link"}
    # a relief: a link that binds lets the chain go faster through twice its rate; one with
    # headroom changes nothing. (Halving it cannot tell them apart at a high use: a link at
    # 95 % of its rate, not binding, falls to x0.53 against the x0.5 of one that binds.)
    new = rate * RELIEF
    return {"kind": "relieve", "predicted": RELIEF, "experiment": "twice the client link",
            "rivals": _x1("twice the client link"),
            "what": f"client host {host}'s link shaped to twice its rate: {rate / 1e6:g} -> "
                    f"{new / 1e6:g} Mb/s (tc tbf, both ways; recorded, restored after each run)",
            "control": {}, "changed": {"link": (host, new)}}
