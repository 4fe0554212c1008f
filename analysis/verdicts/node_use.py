"""Client nodes' CPU (a client host's CPUs are its limit, as a shaped link is): each client host
of the run (a Slurm node, an ssh host) whose campaign agent sampled its CPU
(xcbench.scaleout.node_sampler), over a level's steady window, and the client verdict that
names the node.

Figures, per client host of the run's inventory (the manifest's ``hosts``) with node rows in
the cell:

  busy         node.cpu.busy, mean over the steady window: the share of the CPUs the agent may
               run on (its affinity: a Slurm step's CPUs) that were busy, 0..1
  busy_rel_se  that mean's relative error (its samples are autocorrelated: figures.stats.mean_rel_se),
               the rule's noise band
  cores        node.cpu.cores: the CPUs the agent may run on
  client_cores node.cpu.client_cores, mean: the cores the client role itself used
  limit_cores  node.cpu.limit_cores: the client role's CPU limit (its cgroup quota, cpuset or
               affinity: a Slurm step's --cpus-per-task), and its source
  client_use   client_cores / limit_cores: the role at its own limit (a quota tighter than
               its CPUs: busy can be low while the role is held), with its relative error
  use          the larger of busy and client_use, the rule's figure (``use_figure`` says which)
  machine      "own": a machine of its own; "shared": the coordinator's machine (the agent said
               the same kernel boot id: an emulated host, a test cluster's node on one box),
               whose CPUs the gateway and the cluster share, so they are the host-cpu rule's,
               not the client's; "unknown": the agent did not say (an older xcbench there)

Rule (after the shaped client links, before the estimates and the storage hosts: like a link,
a limit measured on the host, and a role at its own limit is named before a storage host):
the busiest client node on a machine of its own whose ``use`` is >= NEAR is ``client``,
naming the node; within its noise of NEAR it is a borderline candidate either way
(analysis.verdicts.borderline). A host that is also the run's gateway or redirector host is
not a client node here (its CPU is the gateway's too).
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.analysis.verdicts import borderline as _bl
from xcbench.figures.numbers import is_finite
from xcbench.figures.stats import mean_rel_se

BUSY, CORES = "node.cpu.busy", "node.cpu.cores"
CLIENT, LIMIT = "node.cpu.client_cores", "node.cpu.limit_cores"
FIGURE = "client node CPU busy"  # the borderline candidate's and the deciding figure's name
ROLE_FIGURE = "client role CPU of its limit"


def client_nodes(manifest: dict[str, Any]) -> list[str]:
    """The run's client hosts that hold no gateway or redirector role."""
    hosts = (manifest.get("hosts") or {}).get("hosts") or {}
    return [n for n, h in hosts.items() if "client" in (h.get("roles") or ())
            and not {"gateway", "redirector"} & set(h.get("roles") or ())]


def _in(rows: Any, windows) -> list[float]:
    if rows is None or not len(rows):
        return []
    return [float(v) for w, v in zip(rows["wall"], rows["value"], strict=True)
            if any(a <= w <= b for a, b in windows) and is_finite(float(v))]


def node_figures(samples: Any, manifest: dict[str, Any], cell_id: str, windows) -> dict[str, Any]:
    """{host: {busy, busy_rel_se, cores, samples, machine}} of the run's client nodes over the
    windows ({} without an inventory or node rows). ``samples``: analysis.verdicts.samples.SampleIndex."""
    names = client_nodes(manifest)
    if not names:
        return {}
    busy = samples.by_label(cell_id, BUSY, "host")
    cores = samples.by_label(cell_id, CORES, "host")
    used = samples.by_label(cell_id, CLIENT, "host")
    limit = samples.by_label(cell_id, LIMIT, "host")
    out: dict[str, Any] = {}
    for host in names:
        if host not in busy:
            continue
        vals = _in(busy[host], windows)
        n = _in(cores.get(host), [(-math.inf, math.inf)])
        machines = {str(lab.get("machine", "unknown")) for lab in busy[host]["labels"]}
        x = out[host] = {"busy": sum(vals) / len(vals) if vals else math.nan,
                         "busy_rel_se": mean_rel_se(vals), "samples": len(vals),
                         "cores": max(n) if n else None,
                         "machine": machines.pop() if len(machines) == 1 else "unknown"}
        _role_use(x, _in(used.get(host), windows), _in(limit.get(host), windows), limit.get(host))
    return out


def _role_use(x: dict[str, Any], used: list[float], limit: list[float], rows: Any) -> None:
    """The client role's own cores against its limit into ``x`` (client_use), and ``use``:
    the larger of that and the CPUs' busy share, the figure the rule compares."""
    x["use"], x["use_rel_se"], x["use_figure"] = x["busy"], x["busy_rel_se"], FIGURE
    if not used or not limit or min(limit) <= 0:
        return
    lim = min(limit)  # the tightest the window saw
    src = {str(lab.get("source")) for lab in rows["labels"] if lab.get("source")} if rows is not None else set()
    x.update(client_cores=sum(used) / len(used), limit_cores=lim,
             limit_source=src.pop() if len(src) == 1 else None,
             client_use=sum(used) / len(used) / lim, client_use_rel_se=mean_rel_se(used))
    if not is_finite(x["busy"]) or x["client_use"] > x["busy"]:
        x["use"], x["use_rel_se"], x["use_figure"] = x["client_use"], x["client_use_rel_se"], ROLE_FIGURE


def add_evidence(rd: Any, cell_id: str, windows, ev: dict[str, Any]) -> None:
    """The client nodes' CPU figures of one point into its evidence (``nodes``, ``node_busy``:
    the busiest on a machine of its own, and the source)."""
    nodes = node_figures(rd.samples, rd.manifest, cell_id, windows)
    if not nodes:
        return
    ev["nodes"] = nodes
    own = [x["use"] for x in nodes.values() if x["machine"] == "own" and is_finite(x["use"])]
    ev["node_busy"] = max(own) if own else math.nan
    ev.setdefault("sources", {})["nodes"] = {
        "run": rd.run_id, "table": "samples", "agg": "mean over the steady window, per host",
        "query": f"cell_id == {cell_id!r} & metric in [{BUSY!r}, {CORES!r}, {CLIENT!r}, {LIMIT!r}]",
        "hosts": "the manifest's hosts with the client role (not a gateway's)"}


def busiest_node(ev: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(host, figures) of the busiest client node on a machine of its own."""
    nodes = ev.get("nodes") or {}
    return max(((h, x) for h, x in nodes.items() if isinstance(x, dict) and x.get("machine") == "own"
                and is_finite(_use(x))), key=lambda hx: _use(hx[1]), default=None)


def _use(x: dict[str, Any]) -> float:
    """The rule's figure of a node (runs stored before client_use: its busy share)."""
    v = x.get("use", x.get("busy"))
    return float(v) if is_finite(v) else math.nan


def node_verdict(ev: dict[str, Any], near: float) -> tuple[str, str] | None:
    """("client", reason) when the busiest client node's CPUs were >= ``near`` busy (within
    its noise of the line: a borderline candidate, either way)."""
    best = busiest_node(ev)
    if best is None:
        return None
    host, x = best
    figure = x.get("use_figure", FIGURE)
    if not _bl.passes(ev, "client", figure, x.get("use", x["busy"]), near, x.get("use_rel_se", x.get("busy_rel_se"))):
        return None
    r = ev.get("rate")
    chain = f"The chain moves {r * 8 / 1e6:.0f} Mb/s " if is_finite(r) else "The chain "
    if figure == ROLE_FIGURE:
        src = f", {x['limit_source']}" if x.get("limit_source") else ""
        return "client", (f"{chain}at {ev.get('concurrency')} transfers: the client role on {host} used "
                          f"{x['client_cores']:.2f} of its {x['limit_cores']:g} cores ({x['client_use'] * 100:.0f} %"
                          f"{src}" + (f"; its CPUs {x['busy'] * 100:.0f} % busy" if is_finite(x["busy"]) else "")
                          + "): the client at its CPU limit.")
    cores = f" of its {x['cores']:g} CPUs" if is_finite(x.get("cores")) else ""
    return "client", (f"{chain}at {ev.get('concurrency')} transfers: client host {host}'s CPUs are "
                      f"{x['busy'] * 100:.0f} % busy{cores} (the client node at its CPU limit).")


def decide_nodes(ev: dict[str, Any], verdict: str, reason: str, near: float) -> tuple[str, str]:
    """The hook of analysis.verdicts.attribution: a client node at its CPU limit overrides the
    estimates, not a saturated shaped link (network, named first)."""
    if verdict == "network" and ev.get("links"):
        return verdict, reason
    found = node_verdict(ev, near)
    if found is None:
        return verdict, reason
    host, x = busiest_node(ev) or ("", {})
    ev["client_node"] = host
    ev["deciding"] = {"figure": x.get("use_figure", FIGURE), "value": x.get("use", x.get("busy")),
                      "threshold": near, "at_most": False, "host": host}
    return found
