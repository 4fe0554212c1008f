"""Put the models together: one plan = target + specs + assumptions (+ calibration) -> figures.

The result is a JSON-able dict (``xcbench plan --format json`` prints it as is); report.py renders
it as text, HTML or Markdown. Datasheet and calibrated columns are computed by the same models
with different inputs, so they can be compared line by line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any

from xcbench.figures.units import Figure, fmt_capacity, fmt_rate, gbps
from xcbench.plan.calibrate import Calibration, gateway_inputs, storage_inputs
from xcbench.plan.crosscheck import check_published
from xcbench.plan.gateway import GatewayInputs, datasheet_cpu_s_per_gb, gateway_model, gateways_figure
from xcbench.plan.gateway_cores import USCMS_REFERENCE, cores_rows, sizing
from xcbench.plan.presets import PRESETS, RateTarget
from xcbench.plan.spec import Assumptions, ClusterSpec, GatewaySpec
from xcbench.plan.storage import StorageInputs, remote_share, storage_model

PLAN_VERSION = 1


def storage_demand(target: RateTarget, g: GatewaySpec, a: Assumptions) -> tuple[float, float]:
    """(W, R): bytes written to / read from Ceph per external byte through the gateways."""
    w = target.write_fraction
    readback = 1.0 if g.checksum == "read-back" else 0.0
    src = 1.0 if a.read_checksum == "read-back" else 0.0
    return w, (1 - w) * (1 + src) + w * readback


def _column(target: RateTarget, spec: ClusterSpec, g: GatewaySpec, a: Assumptions,
            sin: StorageInputs, gin: GatewayInputs) -> dict[str, Any]:
    W, R = storage_demand(target, g, a)
    st = storage_model(spec, W, R, target.file_size, a, sin)
    gw = gateway_model(g, target.write_fraction, a, gin)
    rate = target.rate
    need = rate * a.headroom
    figs: list[Figure] = [gateways_figure(gw, rate, a)]
    h_rate = st.hosts_for_rate(rate, a.headroom)
    figs.append(Figure("hosts_for_rate", "storage hosts needed for the rate", h_rate, "count",
                       "max(min hosts for the protection, ceil(target x headroom / usable rate per host))",
                       {"target_x_headroom": fmt_rate(need), "per_host": fmt_rate(st.per_host),
                        "min_hosts": f"{st.min_hosts} ({spec.protection.label}, failure domain "
                                     f"{spec.failure_domain})", "binding": st.binding}))
    hosts = h_rate
    if target.volume_per_year:
        vol = target.volume_per_year * a.retention_years
        h_cap = st.hosts_for_volume(vol, spec.hosts)
        figs.append(Figure("hosts_for_capacity", "storage hosts needed for the volume", h_cap, "count",
                           "ceil(volume per year x years / usable capacity per host)",
                           {"volume": fmt_capacity(vol), "years": f"{a.retention_years:g} (--retention-years)",
                            "usable_per_host": fmt_capacity(st.usable_capacity / spec.hosts)}))
        hosts = max(h_rate, h_cap)
    figs.append(Figure("hosts_needed", "storage hosts needed", hosts, "count",
                       "max(hosts for the rate, hosts for the volume)", {"per_host_drives": str(spec.drives_per_host)}))
    figs.append(Figure("osds_needed", "OSDs needed", hosts * spec.drives_per_host, "count",
                       "storage hosts needed x drives per host",
                       {"hosts": str(hosts), "drives_per_host": str(spec.drives_per_host)}))
    figs.append(Figure("spec_margin", "spec'd cluster: usable rate / (target x headroom)", st.usable / need,
                       "ratio", "usable rate / (target x headroom); >= 1 means the spec'd cluster carries it",
                       {"usable": fmt_rate(st.usable), "target_x_headroom": fmt_rate(need),
                        "hosts_in_spec": str(spec.hosts)}))
    n_gw = int(figs[0].value)
    return {
        "label": sin.label,
        "storage": {"figures": [f.to_dict() for f in st.figures], "ceilings": _clean(st.ceilings),
                    "binding": st.binding, "usable": st.usable, "theoretical": st.theoretical,
                    "theoretical_binding": min(st.ceilings, key=lambda c: c["theoretical"])["resource"],
                    "per_host": st.per_host, "min_hosts": st.min_hosts, "notes": st.notes,
                    "demand": {"W": W, "R": R}, "write_path": st.write_path,
                    "network_theoretical": st.network_theoretical},
        "chain": sin.chain,
        "gateway": {"figures": [f.to_dict() for f in gw.figures], "ceilings": _clean(gw.ceilings),
                    "binding": gw.binding, "per_gateway": gw.per_gateway, "theoretical": gw.theoretical,
                    "budget": gw.budget, "budget_at_target": gw.budget_at(rate, n_gw, g), "notes": gw.notes},
        "sizing": [f.to_dict() for f in figs],
        "values": {f.key: f.value for f in figs},
        "_models": (st, gw),
    }


def sweep_rates(rate: float, n: int = 96) -> list[float]:
    lo, hi = rate / 20, rate * 2
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def make_plan(target: RateTarget, spec: ClusterSpec, g: GatewaySpec, a: Assumptions,
              cal: Calibration | None = None, dev_spec: ClusterSpec | None = None,
              dev_gateway: GatewaySpec | None = None, carry_over: bool = False,
              efficiency: tuple[float, float] | None = None, because: str = "",
              gateway_cpu: Sequence[dict] = ()) -> dict[str, Any]:
    """``efficiency`` = (achieved, theoretical) published for another cluster (--efficiency 24/50):
    an "extrapolated" column = this spec's theoretical x achieved / theoretical."""
    a.check()
    cols = [_column(target, spec, g, a, StorageInputs(), GatewayInputs())]
    if cal is not None:
        sin = storage_inputs(cal, spec, target.file_size, a, dev_spec)
        gin = gateway_inputs(cal, g, a, carry_over=carry_over, dev_gateway=dev_gateway)
        cols.append(_column(target, spec, g, a, sin, gin))
    if efficiency is not None:
        ach, theo = efficiency
        why = because or "no source given (--because)"
        sin = StorageInputs(label="extrapolated", efficiency=ach / theo,
                            chain={"achieved": ach, "dev_theoretical": theo, "achieved_from": why,
                                   "dev": why, "because": why, "unitless": True},
                            notes=[f"storage efficiency {ach / theo:.3f} = achieved {ach:g} / theoretical "
                                   f"{theo:g} ({why}); carried over to {spec.name}"])
        cols.append(_column(target, spec, g, a, sin, GatewayInputs(label="extrapolated")))
    sweep = []
    for r in sweep_rates(target.rate):
        row = {"rate": r, "rate_gbps": gbps(r)}
        for c in cols:
            st, gw = c["_models"]
            row[f"gateways_{c['label']}"] = gw.gateways_for_rate(r, a.headroom)
            row[f"osds_{c['label']}"] = st.hosts_for_rate(r, a.headroom) * spec.drives_per_host
        sweep.append(row)
    for c in cols:
        c.pop("_models")
    defaults = Assumptions()
    assumptions = [{**d, "value": getattr(a, d["name"]),
                    "changed": getattr(a, d["name"]) != getattr(defaults, d["name"])}
                   for d in Assumptions.describe()]
    entries = list(cal.gateway_cpu if cal is not None else []) + list(gateway_cpu)
    return _clean({
        "plan_version": PLAN_VERSION,
        "extrapolation": [extrapolation(c, cols[0]) for c in cols[1:] if c.get("chain")],
        "write_path": cols[0]["storage"]["write_path"],
        "site_network": site_network(spec, cols[0]["storage"]["network_theoretical"]),
        "published": check_published(spec, g, a) if spec.published else [],
        "published_source": spec.published[0]["source"] if spec.published else None,
        "gateway_cores": cores_rows(entries, cols[0]["gateway"]["per_gateway"], a.cpu_utilisation),
        "gateway_cpu_measured": bool(entries), "gateway_reference": USCMS_REFERENCE,
        "gateway_sizing": sizing(entries, target.rate, g.cores, a.cpu_utilisation,
                                 datasheet_cpu_s_per_gb(g, target.write_fraction, a)) if entries else None,
        "target": {**asdict(target), "rate_gbps": gbps(target.rate), "rate_text": fmt_rate(target.rate),
                   "preset": target.name if target.name in PRESETS else None,
                   "average_rate": target.average_rate,
                   "average_rate_text": fmt_rate(target.average_rate) if target.average_rate else None},
        "cluster": _spec_dict(spec), "gateway_spec": _spec_dict(g),
        "assumptions": assumptions, "model_notes": MODEL_NOTES,
        "columns": cols, "sweep": sweep,
        "presets": {k: gbps(v.rate) for k, v in PRESETS.items()},
        "calibration": cal.to_dict() if cal is not None else None,
        "carried_over": [n for c in cols[1:] for n in c["storage"]["notes"] + c["gateway"]["notes"]
                         if n.startswith(("storage efficiency", "gateway efficiency")) and "/ theoretical" in n],
        "dev_spec": dev_spec.name if dev_spec else None,
    })


def extrapolation(col: dict, datasheet: dict) -> dict[str, Any]:
    """RAL's chain, one line per factor: planned theoretical x achieved / theoretical of the
    measured cluster, beside the datasheet (derated) figure."""
    ch, st = col["chain"], col["storage"]
    eff = ch["achieved"] / ch["dev_theoretical"]
    r = (lambda v: f"{v:g}") if ch.get("unitless") else fmt_rate
    lines = [
        {"factor": "planned cluster, theoretical (datasheet, no derate)", "value": fmt_rate(st["theoretical"]),
         "from": f"binding: {st['theoretical_binding']}"},
        {"factor": "x achieved on the measured cluster", "value": r(ch["achieved"]), "from": ch["achieved_from"]},
        {"factor": "/ theoretical of the measured cluster", "value": r(ch["dev_theoretical"]), "from": ch["dev"]},
        {"factor": "= efficiency carried over", "value": f"{eff:.3f}", "from": "achieved / theoretical"},
        {"factor": "= planned rate", "value": fmt_rate(st["theoretical"] * eff),
         "from": "planned theoretical x efficiency"},
        {"factor": "datasheet plan (derated by the assumptions), for comparison",
         "value": fmt_rate(datasheet["storage"]["usable"]), "from": f"binding: {datasheet['storage']['binding']}"},
    ]
    return {"label": col["label"], "efficiency": eff, "planned": st["theoretical"] * eff,
            "because": ch.get("because", ""), "lines": lines}


def site_network(spec: ClusterSpec, model_theoretical: float) -> dict[str, Any] | None:
    """RAL's rule of thumb for EC (usable ~ host NIC total x 50 %) beside the model's network ceiling."""
    p = spec.protection
    if p.kind != "erasure":
        return None
    total = spec.hosts * (spec.nics * spec.nic_speed + spec.cluster_nics * spec.cluster_nic_speed)
    share = remote_share(spec)
    fo = p.fanout_write * share
    return {
        "site": total * 0.5, "site_text": fmt_rate(total * 0.5), "model": model_theoretical,
        "model_text": fmt_rate(model_theoretical), "nic_total_text": fmt_rate(total),
        "site_rule": f"host NIC total {fmt_rate(total)} x ~50 % (RAL, CHEP 2024, stated for EC 8+3)",
        "model_rule": (f"per host and direction on full-duplex NICs: in = client -> primary (1) + shards "
                       f"from other primaries ({p.k + p.m - 1}/{p.k} x {share:.3g} on other hosts = {fo:.3g}); "
                       f"writes only: NIC total / {1 + fo:.3g}" if spec.cluster_nics == 0 else
                       "public NICs carry client -> primary, the cluster NICs the shards"),
        "sentence": ("The site rule counts the NIC total once and halves it because most of each byte "
                     "leaves the primary again as shards; the model counts each direction of each NIC: "
                     "client -> primary and primary -> shards both arrive on the shared NICs "
                     f"({p.k + p.m - 1}/{p.k} shard bytes per client byte, not {p.k + p.m - 1}/{p.k + p.m}), "
                     "and shards that stay on the primary's host never reach a NIC."),
    }


def _spec_dict(s: Any) -> dict[str, Any]:
    d = {f.name: getattr(s, f.name) for f in fields(s)}
    if "protection" in d:
        d["protection"] = d["protection"].label
    d.pop("published", None)  # the checked rows are in plan["published"]
    if "drives_total" in d:
        d["osds"] = s.osds
    return d


def _clean(v: Any) -> Any:
    """JSON-able: inf/nan -> None, tuples -> lists."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


MODEL_NOTES = [
    "Rates are external bytes through the gateways (both directions summed); Gb/s = 1e9 bit/s, "
    "GB/s = 1e9 byte/s; capacities in PB (1e15) and PiB (2^50).",
    "A gateway is store-and-forward: each external byte crosses its NICs once in and once out; a "
    "checksum computed after the write reads the file back from Ceph (one more byte in).",
    "The client (gateway) talks to the primary OSD only; the primary fans out replicas or EC shards "
    "to other hosts (failure domain host), so shard traffic loads host NICs, not gateway NICs.",
    "EC writes are full-stripe appends: partial-stripe read-modify-write is not modelled "
    "(--calibrate captures it when the run measured it).",
    "Load spreads evenly over hosts; drives are derated by --balance for the busiest OSD; every "
    "ceiling scales linearly with hosts, which gives hosts needed for a rate.",
    "Recovery/backfill traffic, scrubbing and client-side caching are not in the model: "
    "--headroom is meant to cover them.",
]

