"""Gateway model: per-gateway rate, gateways needed, and the NIC byte budget.

A gateway is a store-and-forward hop: every external byte crosses its NICs twice (bytes in =
bytes out). Per external byte, with write fraction W and read fraction R = 1 - W:

    writes:  external in W          -> internal out W (to the Ceph primary OSD)
             + checksum read-back in W, if the checksum is computed after the write
               (read-back) rather than on the fly while the data passes
    reads:   internal in R (from Ceph) -> external out R
             + source checksum read-back in R, if the checksum is not stored (--read-checksum)

With one set of NICs all of it shares them (full duplex: in and out are separate budgets); with
``internal`` NICs the Ceph-side bytes go there. TPC (the gateway pulls) and push (the client
sends) move the same bytes; TPC runs the transfer client in the gateway (--tpc-cpu-factor).
CPU: every byte moved costs 1/core_rate core-seconds, every byte checksummed 1/checksum_rate.
Origins per host (xrootd processes behind a cmsd redirector) cap a host at origins x origin_rate.

    per-gateway rate = min(NIC ceilings x NIC saturation, CPU ceiling x CPU utilisation, origins)
    gateways needed  = ceil(target x headroom / per-gateway rate) + spares
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from xcbench.figures.units import Figure, fmt_rate, gbps
from xcbench.plan.spec import Assumptions, GatewaySpec
from xcbench.plan.storage import ceil_count


@dataclass
class GatewayInputs:
    label: str = "datasheet"
    measured_rate: float | None = None  # a measured per-gateway rate used as is
    efficiency: float | None = None  # achieved/theoretical carried over
    cpu_s_per_gb: float | None = None  # measured gateway CPU seconds per 1e9 bytes moved
    notes: list[str] = field(default_factory=list)


@dataclass
class GatewayResult:
    label: str
    budget: list[dict]  # what, direction, nic, per_byte
    loads: dict[str, float]  # "<nic> <direction>" -> bytes per external byte
    ceilings: list[dict]
    theoretical: float
    per_gateway: float
    binding: str
    spares: int
    figures: list[Figure]
    notes: list[str]

    def gateways_for_rate(self, rate: float, headroom: float) -> int:
        return max(1, ceil_count(rate * headroom / self.per_gateway)) + self.spares

    def budget_at(self, rate: float, gateways: int, g: GatewaySpec) -> list[dict]:
        """Per-gateway bytes/s per NIC direction at ``rate`` spread over ``gateways``."""
        out = []
        for key, per_byte in self.loads.items():
            nic, direction = key.rsplit(" ", 1)
            cap = (g.internal_nics * g.internal_nic_speed if nic == "internal"
                   else g.nics * g.nic_speed)
            bytes_per_s = per_byte * rate / gateways
            out.append({"nic": nic, "direction": direction, "per_byte": per_byte, "rate": bytes_per_s,
                        "rate_text": fmt_rate(bytes_per_s), "line_rate": cap, "fraction": bytes_per_s / cap})
        return out


def gateway_budget(g: GatewaySpec, write_fraction: float, a: Assumptions) -> list[dict]:
    W, R = write_fraction, 1.0 - write_fraction
    cr = 1.0 if g.checksum == "read-back" else 0.0
    rr = 1.0 if a.read_checksum == "read-back" else 0.0
    split = g.internal_nics > 0
    ext, internal = ("external", "internal") if split else ("shared", "shared")
    return [
        {"what": "external in: written data arriving", "direction": "in", "nic": ext, "per_byte": W},
        {"what": "internal out: written data to Ceph", "direction": "out", "nic": internal, "per_byte": W},
        {"what": f"internal in: checksum read-back of writes ({g.checksum})", "direction": "in",
         "nic": internal, "per_byte": W * cr},
        {"what": "internal in: read data from Ceph", "direction": "in", "nic": internal, "per_byte": R},
        {"what": f"internal in: source checksum read-back of reads ({a.read_checksum})",
         "direction": "in", "nic": internal, "per_byte": R * rr},
        {"what": "external out: read data leaving", "direction": "out", "nic": ext, "per_byte": R},
    ]


def datasheet_cpu_s_per_gb(g: GatewaySpec, write_fraction: float, a: Assumptions) -> float:
    """Core-seconds per 1e9 external bytes from the spec's core_rate and checksum_rate."""
    W, R = write_fraction, 1.0 - write_fraction
    cr = 1.0 if g.checksum == "read-back" else 0.0
    rr = 1.0 if a.read_checksum == "read-back" else 0.0
    moved = 1.0 + W * cr + R * rr  # bytes through xrootd per external byte
    summed = W + R * rr  # bytes checksummed per external byte
    tpc = a.tpc_cpu_factor if g.mode == "tpc" else 1.0
    return 1e9 * tpc * (moved / g.core_rate + summed / g.checksum_rate)


def gateway_model(g: GatewaySpec, write_fraction: float, a: Assumptions,
                  inp: GatewayInputs | None = None) -> GatewayResult:
    inp = inp or GatewayInputs()
    notes = list(inp.notes)
    W, R = write_fraction, 1.0 - write_fraction
    budget = gateway_budget(g, write_fraction, a)
    loads: dict[str, float] = {}
    for b in budget:
        key = f"{b['nic']} {b['direction']}"
        loads[key] = loads.get(key, 0.0) + b["per_byte"]
    # resource, theoretical, derate, usable (bytes/s), per_byte, formula, inputs
    ceilings: list[dict[str, Any]] = []
    for key, per_byte in loads.items():
        nic = key.rsplit(" ", 1)[0]
        n, speed = (g.internal_nics, g.internal_nic_speed) if nic == "internal" else (g.nics, g.nic_speed)
        theo = n * speed / per_byte if per_byte > 0 else math.inf
        ceilings.append({"resource": f"NIC {key}", "theoretical": theo, "derate": a.nic_saturation,
                         "derate_source": "--nic-saturation", "per_byte": per_byte,
                         "formula": "NICs x speed / bytes per external byte",
                         "inputs": {"NICs": str(n), "speed": fmt_rate(speed), "per_byte": f"{per_byte:.4g}"}})
    cpu_s = datasheet_cpu_s_per_gb(g, W, a) / 1e9
    rr = 1.0 if a.read_checksum == "read-back" else 0.0
    moved = 1.0 + W * (1.0 if g.checksum == "read-back" else 0.0) + R * rr  # the formula's inputs
    summed = W + R * rr
    tpc = a.tpc_cpu_factor if g.mode == "tpc" else 1.0
    if inp.cpu_s_per_gb:
        cpu_s = inp.cpu_s_per_gb / 1e9  # measured for this checksum kind and mode: used as is
        ceilings.append({"resource": "CPU", "theoretical": g.cores / cpu_s, "derate": a.cpu_utilisation,
                         "derate_source": "--cpu-utilisation", "per_byte": cpu_s,
                         "formula": "cores / measured CPU seconds per byte",
                         "inputs": {"cores": str(g.cores), "measured": f"{inp.cpu_s_per_gb:.3g} core-s/GB "
                                    f"({g.checksum}, {g.mode})"}})
    else:
        ceilings.append({"resource": "CPU", "theoretical": g.cores / cpu_s, "derate": a.cpu_utilisation,
                         "derate_source": "--cpu-utilisation", "per_byte": cpu_s,
                         "formula": "cores / (tpc x (moved / core_rate + checksummed / checksum_rate))",
                         "inputs": {"cores": str(g.cores), "moved": f"{moved:.3g}", "checksummed": f"{summed:.3g}",
                                    "core_rate": fmt_rate(g.core_rate), "checksum_rate": fmt_rate(g.checksum_rate),
                                    "tpc": f"{tpc:g} ({g.mode})"}})
    if math.isfinite(g.origin_rate):
        ceilings.append({"resource": "origins", "theoretical": g.origins_per_host * g.origin_rate,
                         "derate": 1.0, "derate_source": "-", "per_byte": 1.0,
                         "formula": "origins per host x rate per origin",
                         "inputs": {"origins": str(g.origins_per_host), "origin_rate": fmt_rate(g.origin_rate)}})
    for c in ceilings:
        c["usable"] = c["theoretical"] * c["derate"]
    theo = min(c["theoretical"] for c in ceilings)
    bind = min(ceilings, key=lambda c: c["usable"])
    per_gw, binding = bind["usable"], bind["resource"]
    if inp.efficiency:
        tb = min(ceilings, key=lambda c: c["theoretical"])["resource"]
        per_gw, binding = theo * inp.efficiency, f"carried-over efficiency x {tb}"
        ceilings.append({"resource": f"carried-over efficiency x {tb}", "theoretical": theo,
                         "derate": inp.efficiency, "derate_source": "carried-over efficiency",
                         "usable": per_gw, "per_byte": 1.0,
                         "formula": "planned theoretical x (measured / theoretical of the measured gateway)",
                         "inputs": {"efficiency": f"{inp.efficiency:.4g}"}})
        notes.append(f"gateway efficiency {inp.efficiency:.3f} carried over: per-gateway rate = "
                     f"theoretical {fmt_rate(theo)} x {inp.efficiency:.3f} (replaces the saturation "
                     "and utilisation assumptions)")
    elif inp.measured_rate:
        ceilings.append({"resource": "measured per-gateway rate", "theoretical": inp.measured_rate,
                         "derate": 1.0, "derate_source": "measured", "usable": inp.measured_rate,
                         "per_byte": 1.0, "formula": "best steady rate of one measured gateway",
                         "inputs": {"from": "; ".join(inp.notes[-1:])}})
        nic_cap = min(c["usable"] for c in ceilings if c["resource"].startswith("NIC"))
        per_gw, binding = min(inp.measured_rate, nic_cap), "measured per-gateway rate"
        notes.append(f"measured per-gateway rate {fmt_rate(inp.measured_rate)} used as is (assumes "
                     "the planned gateways are like the measured one, and that the measured campaigns' "
                     "direction, writes into the gateway, holds for the planned mix), capped by the "
                     "planned NIC budget")
        if inp.measured_rate > nic_cap:
            binding = bind["resource"]
    figs = [Figure("gateway_theoretical", "per-gateway theoretical ceiling", theo, "rate",
                   "min over NIC and CPU ceilings at line rate",
                   {c["resource"]: fmt_rate(c["theoretical"]) for c in ceilings}),
            Figure("gateway_rate", "per-gateway planned rate", per_gw, "rate",
                   "min over ceilings x derate" if not (inp.efficiency or inp.measured_rate)
                   else binding, {"binding": binding, "origins_per_host": str(g.origins_per_host),
                                  "checksum": g.checksum, "mode": g.mode})]
    return GatewayResult(inp.label, budget, loads, ceilings, theo, per_gw, binding, a.gateway_spares,
                         figs, notes)


def gateways_figure(res: GatewayResult, rate: float, a: Assumptions) -> Figure:
    n = res.gateways_for_rate(rate, a.headroom)
    return Figure("gateways_needed", "gateways needed", n, "count",
                  "ceil(target x headroom / per-gateway rate) + spares",
                  {"target": f"{gbps(rate):.4g} Gb/s", "headroom": f"{a.headroom:g} (--headroom)",
                   "per_gateway_rate": f"{gbps(res.per_gateway):.4g} Gb/s ({res.label})",
                   "spares": f"{a.gateway_spares} (--gateway-spares)"})
