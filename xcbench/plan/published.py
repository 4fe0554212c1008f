"""Published figures of real clusters, held against the model (``published:`` in a cluster spec).

A spec of a public cluster carries what its owners published, with the source, so that every plan
of it prints the published number beside the model's::

    published:
      source: "authors, title, venue, date, URL"
      figures:
        - what: measured through one gateway, 200-1200 concurrent FTS transfers
          where: slide or section
          value: 24Gb/s                 # a rate, an ops/s number, or a range [2.4GiB/s, 3.0GiB/s]
          model: end_to_end             # client_write_ops | network_theoretical | storage | end_to_end
          workload: {write_fraction: 1, gateways: 1}   # optional: protection, op_size, file_size
          check: bracket                # within (|model/published - 1| <= tolerance) | bracket
          tolerance: 0.25               # within: relative; bracket: usable within a factor `factor`
          factor: 2
          model_difference: why the model and the figure differ (printed when outside tolerance)

Checks (stated per figure, never fitted):
- within: the model's figure (``compare``: usable, or theoretical for network_theoretical)
  is within ``tolerance`` of the published one (each end of a range);
- bracket: the model's theoretical ceiling is at or above the published measurement, and the
  planned usable rate is within a factor ``factor`` of it (RAL's own extrapolation factor was 2).
A figure outside its tolerance must carry ``model_difference``; the plan prints it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from xcbench.plan.units import fmt_rate, parse_rate
from xcbench.sizes import parse_size

MODELS = ("client_write_ops", "network_theoretical", "storage", "end_to_end")
CHECKS = ("within", "bracket")


def parse_published(raw: Any, r) -> tuple:
    """Validate the ``published`` section with the spec reader ``r`` (errors name file and field)."""
    if raw is None:
        return ()
    from xcbench.plan.spec import _protection, _Reader  # noqa: PLC0415 - spec imports this module
    top = r.sub("published")
    source = str(top.raw("source"))
    figs = top.raw("figures")
    if not isinstance(figs, list) or not figs:
        top.fail("figures", "must be a non-empty list")
    out = []
    for i, item in enumerate(figs):
        f = _Reader(item, r.source, f"published.figures[{i}]", r.overridden)
        model = f.choice("model", MODELS)
        unit = "ops" if model == "client_write_ops" else "rate"
        v = f.raw("value")
        vals = v if isinstance(v, list) else [v]
        if not 1 <= len(vals) <= 2:
            f.fail("value", "a number/rate or a range [low, high]")
        nums = []
        for x in vals:
            try:
                nums.append(float(x) if unit == "ops" and not isinstance(x, str) else parse_rate(x))
            except (ValueError, TypeError) as e:
                f.fail("value", str(e))
        wl = f.sub("workload", False)
        workload: dict[str, Any] = {}
        if wl is not None:
            workload["write_fraction"] = wl.number("write_fraction", 1.0)
            if workload["write_fraction"] > 1:
                wl.fail("write_fraction", "must be between 0 and 1")
            workload["gateways"] = wl.number("gateways", 1, integer=True, lo=1)
            workload["file_size"] = wl.conv("file_size", parse_size, 4 << 30)
            workload["op_size"] = wl.conv("op_size", parse_size, None)
            workload["protection"] = _protection(wl) if wl.data.get("protection") else None
            wl.used.add("protection")
            wl.done()
        check = f.choice("check", CHECKS, "within")
        entry = {"what": str(f.raw("what")), "where": str(f.raw("where", "")), "value": nums,
                 "unit": unit, "model": model, "workload": workload, "check": check,
                 "tolerance": f.number("tolerance", 0.25), "factor": f.number("factor", 2.0, lo=1),
                 "compare": f.choice("compare", ("usable", "theoretical"),
                                     "theoretical" if model == "network_theoretical" else "usable"),
                 "model_difference": str(f.raw("model_difference", "")).strip(), "source": source}
        f.done()
        out.append(entry)
    top.done()
    return tuple(out)


def _model(spec, gw, a, fig: dict) -> tuple[float, float, str]:
    """(theoretical, usable, binding) of the model for one published figure's workload."""
    from xcbench.plan.gateway import gateway_model
    from xcbench.plan.storage import storage_model
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
