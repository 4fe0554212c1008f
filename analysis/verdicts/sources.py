"""Where a figure comes from: a dict naming the run, the table, the pandas query selecting the
rows and the aggregation giving the figure (see analysis.verdicts.run_data's module docstring)."""

from __future__ import annotations

from typing import Any


def source(run_id: str, table: str, query: str, column: str | None = None, agg: str = "mean",
           by: str | None = None, note: str = "", **extra: Any) -> dict[str, Any]:
    """Where a figure comes from: ``pd.read_parquet(<run>/<table>.parquet).query(query)``, then
    ``[column].agg(agg)`` (per ``by`` group first, then the mean of the groups, if ``by``). The
    table as RunDir.table reads it: for a run of an older tables' version, after
    xcbench.store.upgrade brought its rows to today's shape."""
    d = {"run": run_id, "table": table, "query": query, "column": column, "agg": agg}
    if by:
        d["by"] = by
    if note:
        d["note"] = note
    d.update(extra)
    return d


def source_text(s: dict[str, Any]) -> str:
    col = f"[{s['column']}]" if s.get("column") else ""
    per = " / per_seconds[repeat]" if s.get("per_seconds") else ""
    by = f".groupby({s['by']!r}){col}.{s['agg']}(){per}.mean()" if s.get("by") else f"{col}.{s['agg']}()"
    text = f"run {s['run']}: {s['table']}.query({s['query']!r}){by}"
    if s.get("query_stored"):
        text += f" / {s['table']}.query({s['query_stored']!r})"
    return text + (f" — {s['note']}" if s.get("note") else "")
