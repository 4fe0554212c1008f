"""The run report: verdicts first, then the evidence, every figure with its source.

``render_report(runs, fmt, out)`` writes a self-contained HTML file (plots inline as base64
PNG, tiny inline JS for sortable tables, no network) or its Markdown twin (plots next to it).
Each run's section is built by run_section (its tables by run_tables).

Each table row ends with §N; the *Sources* section lists, for §N, the run, the table, the
pandas query and the aggregation of every figure in that row; the same list is embedded as
JSON (``<script type="application/json" id="xcb-sources">``) so a test or a person can
recompute any figure from the Parquet files.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from markupsafe import Markup

from xcbench import __version__
from xcbench.analysis.report import grafana, markdown, overlay, run_tables
from xcbench.analysis.report.render import render, write_report
from xcbench.analysis.report.run_section import run_section
from xcbench.analysis.report.table_cells import Sources
from xcbench.analysis.verdicts.attribution import NEAR, SCALING, STARVED
from xcbench.analysis.verdicts.compare import compare_data
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.errors import XcbError
from xcbench.figures.steady import RULE


def _rules() -> tuple[str, list[tuple[str, str]]]:
    """(definitions, [(verdict, condition), ...]) from analysis/verdicts/verdicts.md: one text, no drift."""
    doc = resources.files("xcbench.analysis.verdicts").joinpath("verdicts.md").read_text()
    doc = doc.split("```text\n", 1)[-1].rsplit("```", 1)[0]
    head, _, rest = doc.partition("first match wins:")
    definitions = head.split("\n", 2)[-1].rsplit("Rules", 1)[0].strip()
    block = rest.split("Each verdict row", 1)[0]
    rules, cur = [], ""
    for line in block.splitlines():
        s = line.strip()
        head_num, dot, body = s.partition(". ")
        if dot and re.fullmatch(r"\d+[a-z]?", head_num):  # 4b, 8b: rules of their own
            if cur:
                rules.append(cur)
            cur = body
        elif s and cur:
            cur += " " + s
    if cur:
        rules.append(cur)
    pairs = [" ".join(r.split()).split(" ", 1) for r in rules]
    return definitions, [(p[0], p[1] if len(p) > 1 else "") for p in pairs]


def build_context(runs: list[RunData], grafana_base: str | None = None,
                  annotations: dict[str, str] | None = None, images: bool = True) -> dict[str, Any]:
    """``grafana_base``: Grafana's URL for each run's dashboard link; ``annotations``: {run id:
    file of its levels as Grafana annotations} where written; ``images``: False draws no plot
    (the Markdown report shows none, and drawing them is most of a render)."""
    src = Sources()
    sections = []
    for i, rd in enumerate(runs):
        others = tuple(r for j, r in enumerate(runs) if j != i)
        sections.append(run_section(rd, src, others, images=images))
        sections[-1]["grafana"] = grafana.link(rd, grafana_base)
        if sections[-1]["grafana"]:
            sections[-1]["grafana"]["annotations"] = (annotations or {}).get(rd.run_id)
    comparisons = []
    over = overlay.section(runs, [s["scaling_input"] for s in sections]) if images else None
    if len(runs) > 1:
        for rd in runs[1:]:
            comparisons.append({"base": runs[0].run_id, "contender": rd.run_id,
                                "rows": compare_data(runs[0], rd)})
    return {
        "title": "xcbench report — " + ", ".join(r.run_id for r in runs),
        "generated": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "xcbench_version": __version__, "runs": sections, "columns": run_tables.columns(),
        "comparisons": comparisons, "overlay": over, "steady_rule": RULE, "rules": _rules()[1],
        "rule_definitions": _rules()[0],
        "thresholds": {"near": NEAR, "starved": STARVED, "scaling": SCALING},
        "sources": src.items,
        "sources_json": Markup(json.dumps(src.items, default=str).replace("</", "<\\/")),
    }


def render_report(runs: Sequence[Path | str | RunData], fmt: str = "html", out: Path | str | None = None,
                  grafana_url: str | None = None) -> Path:
    """Render the report of ``runs`` to ``out`` (default: <first run>/report.<fmt>). With a
    Grafana URL (``grafana_url`` or $XCBENCH_GRAFANA_URL) each run links to the dashboard on
    its time range, and its levels are written beside the report as Grafana annotations."""
    if not runs:
        raise XcbError("report: no run given")
    base = grafana.base_url(grafana_url)
    data = [r if isinstance(r, RunData) else RunData(r) for r in runs]
    out = Path(out) if out else data[0].run.path / f"report.{fmt}"
    notes = grafana.write_all(data, out) if base else {}
    text = render("report", build_context(data, base, notes, images=fmt == "html"), fmt)
    if fmt == "md":
        text = markdown.wrap(text)
    return write_report(text, out, fmt)


def render_run_report(rd: RunData, fmt: str = "html") -> None:
    """A finished run's report (and its Markdown beside the HTML) from the run's one RunData,
    its paths in the run's state (saved by the caller: xcbench.analysis.conclude); best effort:
    a failure is a warning of the run, never a lost record."""
    run = rd.run
    if not run.has_room():
        run.warn("report: not rendered, the result store is full "
                 "(render it later with `xcbench report` once there is room)")
        return
    try:
        run.state.report = str(render_report([rd], fmt=fmt))
        if fmt == "html":
            run.state.report_md = str(render_report([rd], fmt="md"))
    except Exception as e:  # noqa: BLE001 - the measurements are safe; say why there is no report
        run.warn(f"report: {type(e).__name__}: {e}")
