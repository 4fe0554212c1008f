"""Published figures held against the model: one row per figure, with the check and whether it
holds (the figures themselves are parsed by :mod:`xcbench.plan.published`)."""

from __future__ import annotations

import math
from dataclasses import replace

from xcbench.figures.units import fmt_rate
from xcbench.plan.gateway import gateway_model
from xcbench.plan.storage import storage_model


def _model(spec, gw, a, fig: dict) -> tuple[float, float, str]:
    """(theoretical, usable, binding) of the model for one published figure's workload."""
    wl = fig["workload"]
    s = spec
    if wl.get("protection") is not None:
        s = replace(s, protection=wl["protection"])
    if wl.get("op_size"):
        s = replace(s, op_size=wl["op_size"])
    W = wl.get("write_fraction", 1.0)
    st = storage_model(s, W, 1.0 - W, wl.get("file_size", 4 << 30), a)
    if fig["model"] == "client_write_ops":
        v = st.fig("client_write_ops").value
        return v, v, "drive IOPS"
    if fig["model"] == "network_theoretical":
        return st.network_theoretical, st.network_theoretical * a.nic_saturation, "network"
    if fig["model"] == "storage" or gw is None:
        return st.theoretical, st.usable, st.binding
    g = gateway_model(gw, W, a)
    n = wl.get("gateways", 1)
    theo = min(st.theoretical, g.theoretical * n)
    if g.per_gateway * n < st.usable:
        return theo, g.per_gateway * n, f"{n} gateway(s): {g.binding}"
    return theo, st.usable, st.binding


def _fmt(v: float, unit: str) -> str:
    return fmt_rate(v) if unit == "rate" else f"{v:,.0f} ops/s"


def check_published(spec, gw, a) -> list[dict]:
    """One row per published figure: the model beside it, the check, and whether it holds."""
    rows = []
    for fig in spec.published:
        theo, usable, binding = _model(spec, gw, a, fig)
        lo, hi = min(fig["value"]), max(fig["value"])
        model = theo if fig["compare"] == "theoretical" else usable
        if fig["check"] == "within":
            tol = fig["tolerance"]
            ok = all(abs(model / v - 1) <= tol for v in fig["value"])
            rule = f"model within ±{tol:.0%} of the published figure"
        else:
            f = fig["factor"]
            ok = hi <= theo and usable / lo <= f and usable / hi >= 1 / f
            rule = f"theoretical >= published, planned usable within a factor {f:g} of it"
        near = all(abs(model / v - 1) <= fig["tolerance"] for v in fig["value"])
        pub = " – ".join(_fmt(v, fig["unit"]) for v in sorted(set(fig["value"])))
        rows.append({
            "what": fig["what"], "where": fig["where"], "source": fig["source"], "published": pub,
            "published_values": fig["value"], "unit": fig["unit"], "model": fig["model"],
            "theoretical": theo, "usable": usable, "binding": binding,
            "theoretical_text": _fmt(theo, fig["unit"]), "usable_text": _fmt(usable, fig["unit"]),
            "ratio": model / math.sqrt(lo * hi), "ratio_text": f"{model / math.sqrt(lo * hi):.2f}",
            "check": fig["check"], "rule": rule, "holds": ok,
            "status": ("holds" if ok else "does not hold") + ("" if near else ", explained below"
                                                              if fig["model_difference"] else ""),
            "model_difference": fig["model_difference"] if not near or not ok else "",
            "workload": {k: (v.label if hasattr(v, "label") else v) for k, v in fig["workload"].items()
                         if v is not None}})
    return rows
