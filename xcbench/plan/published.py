"""Published figures of real clusters, held against the model (``published:`` in a cluster spec).

A spec of a public cluster carries what its owners published, with the source, so that every plan
of it prints the published number beside the model's::

    published:
      source: "authors, title, venue, date"   # url, note, conditions: optional
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
The section and its values follow the one schema of published figures
(xcbench.figures.published), which a matrix's ``reference:`` follows too.
"""

from __future__ import annotations

from typing import Any

from xcbench.figures.published import SOURCE_KEYS, PublishedFigure, check_source, check_value
from xcbench.figures.units import parse_size
from xcbench.plan.reader import Reader, protection_of

MODELS = ("client_write_ops", "network_theoretical", "storage", "end_to_end")
CHECKS = ("within", "bracket")


def parse_published(raw: Any, r) -> tuple:
    """Validate the ``published`` section with the spec reader ``r`` (errors name file and field)."""
    if raw is None:
        return ()
    top = r.sub("published")
    assert top is not None  # raw is not None: the section is there
    head = check_source(top.data, top.fail)
    top.used.update(SOURCE_KEYS)
    figs = top.raw("figures")
    if not isinstance(figs, list) or not figs:
        top.fail("figures", "must be a non-empty list")
    out = []
    for i, item in enumerate(figs):
        f = Reader(item, r.source, f"published.figures[{i}]", r.overridden)
        model = f.choice("model", MODELS)
        unit = "ops" if model == "client_write_ops" else "rate"
        value = check_value(f.raw("value"), "op/s" if unit == "ops" else "B/s", "value", f.fail)
        assert value is not None  # f.fail raised otherwise
        fig = PublishedFigure(value, "op/s" if unit == "ops" else "B/s", str(f.raw("what")),
                              str(f.raw("where", "")))
        wl = f.sub("workload", False)
        workload: dict[str, Any] = {}
        if wl is not None:
            workload["write_fraction"] = wl.number("write_fraction", 1.0)
            if workload["write_fraction"] > 1:
                wl.fail("write_fraction", "must be between 0 and 1")
            workload["gateways"] = wl.number("gateways", 1, integer=True, lo=1)
            workload["file_size"] = wl.conv("file_size", parse_size, 4 << 30)
            workload["op_size"] = wl.conv("op_size", parse_size, None)
            workload["protection"] = protection_of(wl) if wl.data.get("protection") else None
            wl.used.add("protection")
            wl.done()
        check = f.choice("check", CHECKS, "within")
        entry = {"what": fig.what, "where": fig.where, "value": list(fig.value),
                 "unit": unit, "model": model, "workload": workload, "check": check,
                 "tolerance": f.number("tolerance", 0.25), "factor": f.number("factor", 2.0, lo=1),
                 "compare": f.choice("compare", ("usable", "theoretical"),
                                     "theoretical" if model == "network_theoretical" else "usable"),
                 "model_difference": str(f.raw("model_difference", "")).strip(),
                 "source": head.source, "url": head.url, "note": head.note,
                 "conditions": dict(head.conditions)}
        f.done()
        out.append(entry)
    top.done()
    return tuple(out)
