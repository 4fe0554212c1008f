"""Generic report rendering: Jinja2 templates -> self-contained HTML or Markdown, figures -> PNG.

Used by the run report (analysis/report/document.py) and the capacity-planning report (xcbench.plan):

    from xcbench.analysis.report.render import render, write_report, fig_to_data_uri, new_figure
    fig, ax = new_figure()
    ax.plot(...); ax.set_xlabel("concurrency (transfers)"); ax.set_ylabel("rate (Gb/s)")
    html = render("myreport", {"title": ..., "plot": fig_to_data_uri(fig)}, "html",
                  package="xcbench.plan")          # finds templates/myreport.html.j2 there
    write_report(html, Path("out.html"), "html")

Templates: ``<name>.<fmt>.j2`` under ``templates/`` of ``package`` (default this package), with
this package's templates as fallback, so a plan template can ``{% extends "base.html.j2" %}`` and
``{% from "macros.html.j2" import table %}``. HTML is autoescaped, every environment is StrictUndefined
(a missing variable fails loudly instead of leaving a blank in a report).

Images are always PNG data URIs in the rendered text; for Markdown, :func:`write_report` moves
them into ``<stem>_files/figN.png`` next to the .md (most Markdown viewers do not show data URIs),
for HTML they stay inline so the file works offline, alone.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Set as AbstractSet
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from xcbench.analysis.report import markdown
from xcbench.errors import XcbError
from xcbench.figures.units import GIB, fmt_num, fmt_pct, fmt_size, gbps_num  # noqa: F401 (filters; GIB public)
from xcbench.system import outfiles
from xcbench.system.templates import render_with

FORMATS = ("html", "md")


def md_escape(v: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return str(v).replace("|", "\\|").replace("\n", " ")


def shown(columns: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The columns of a table that say something: one empty ('', '–', None) in every row is left
    out (a '95 % CI' column of a run without repeats)."""
    def empty(v: Any) -> bool:
        v = v.get("text") if isinstance(v, dict) else v
        return v is None or str(v).strip() in markdown.EMPTY or str(v) == "nan"
    return [c for c in columns if not rows or not all(empty(r.get(c["key"])) for r in rows)]


FILTERS = {"shown": shown, "num": fmt_num, "gbps": gbps_num, "pct": fmt_pct, "size": fmt_size, "mdcell": md_escape,
           "mdtable": markdown.table, "mdverdicts": markdown.verdict_table,
           "mdfindings": markdown.findings_text, "when": markdown.short_time}


# --- templates -------------------------------------------------------------------------------

def _package_loader(package: str) -> jinja2.BaseLoader:
    def load(name: str):
        try:
            return resources.files(package).joinpath("templates", name).read_text()
        except (FileNotFoundError, ModuleNotFoundError, NotADirectoryError):
            return None
    return jinja2.FunctionLoader(load)


@cache
def environment(package: str = "xcbench.analysis.report") -> jinja2.Environment:
    loaders = [_package_loader(package)]
    if package != "xcbench.analysis.report":
        loaders.append(_package_loader("xcbench.analysis.report"))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders), undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2"),
                                            default_for_string=False, default=False),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(FILTERS)
    return env


def render(template: str, context: dict[str, Any], fmt: str = "html", *,
           package: str = "xcbench.analysis.report") -> str:
    """Render ``templates/<template>.<fmt>.j2`` (or ``template`` itself if it ends in .j2)."""
    if fmt not in FORMATS:
        raise XcbError(f"report format {fmt!r}: use one of {', '.join(FORMATS)}")
    name = template if template.endswith(".j2") else f"{template}.{fmt}.j2"
    return render_with(environment(package), f"{package}/templates/{name}", name,
                       fmt=fmt, **context)


_DATA_URI = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def write_report(text: str, out: str | Path, fmt: str) -> Path:
    """Write a rendered report; for Markdown, move inline PNGs to ``<stem>_files/``. By
    descriptor from ``/`` (xcbench.system.outfiles): a parent that became a link, or another
    user's, is refused, never written through."""
    out = Path(out)
    if fmt == "md":
        assets = out.with_name(out.stem + "_files")
        n = 0

        def extract(m: re.Match) -> str:
            nonlocal n
            n += 1
            outfiles.write(assets / f"fig{n}.png", base64.b64decode(m.group(1)))
            return f"{assets.name}/fig{n}.png"
        text = _DATA_URI.sub(extract, text)
    return outfiles.write(out, text)


# --- figures ---------------------------------------------------------------------------------

def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=True)  # no display, ever
    import matplotlib.pyplot as plt
    return plt


def new_figure(width: float = 7.0, height: float = 3.6, **kw):
    """(fig, ax) on the Agg backend with the report's style."""
    plt = _pyplot()
    import seaborn as sns
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.05)
    kw.setdefault("layout", "constrained")  # margins fit the labels; cheaper than tight_layout
    return plt.subplots(figsize=(width, height), **kw)


def fig_to_data_uri(fig, dpi: int = 100) -> str:
    """PNG data URI of ``fig``; the figure is closed (reports make many, memory adds up)."""
    plt = _pyplot()
    buf = io.BytesIO()
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.08)  # nothing clipped
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def text_table(headers: list[str], rows: list[list[Any]], right: AbstractSet[int] = frozenset()) -> str:
    """A plain fixed-width table for the terminal (columns in ``right`` right-aligned)."""
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, r in enumerate(cells):
        lines.append("  ".join(v.rjust(w) if i in right else v.ljust(w)
                               for i, (v, w) in enumerate(zip(r, widths, strict=True))).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
