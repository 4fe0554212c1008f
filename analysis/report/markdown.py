"""Markdown a ticket takes (GitHub, GitLab): tables of at most WIDTH characters, no empty
columns, prose never folded (a newline in a comment is a line break there), findings grouped by
kind with the cells' labels, short timestamps.

A table that is too wide first loses its empty columns, then moves the columns that say the same
in every row into a line under it, then takes short headers (a key line says what they mean),
and only then moves the longest text column's long cells under it as numbered notes ([1] ...):
a ticket keeps every word, the table its width.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

WIDTH = 120
EMPTY = ("", "–", "-", "—")
# short headers for wide tables; the key under the table spells them out
SHORT = {"stripe unit": "su", "stripe count": "sc", "object size": "os", "best at concurrency": "c",
         "concurrency": "c", "IO rate (Gb/s)": "Gb/s", "95 % CI (Gb/s)": "CI Gb/s",
         "fio write (Gb/s)": "fio Gb/s", "fio write IOPS": "fio IOPS",
         "pool write op/s in run": "pool op/s", "EC rate (Gb/s)": "EC Gb/s",
         "replicated rate (Gb/s)": "rep Gb/s", "replicated pool (copies)": "rep pool",
         "EC / replicated": "EC/rep", "raw/logical measured": "raw/log", "raw/logical expected": "raw/log exp",
         "parallel streams": "streams", "retransmits (write)": "retr w", "retransmits (read)": "retr r"}


def _text(v: Any) -> str:
    if isinstance(v, dict):
        v = v.get("text", "")
    return " ".join(str("" if v is None else v).split()).replace("|", "\\|")


def _line(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _width(headers: list[str], rows: list[list[str]]) -> int:
    return max(len(_line(r)) for r in [headers, *rows]) if headers else 0


def table(rows: list[dict[str, Any]], columns: list[dict[str, Any]], width: int = WIDTH) -> str:
    """A GitHub-flavoured table of ``rows`` (values: scalars or {"text": ...}) in ``columns``
    ({key, label, num}) that fits ``width``; notes (constant columns, header key) under it."""
    cols = [c for c in columns if any(_text(r.get(c["key"])) not in EMPTY for r in rows)]
    if not rows or not cols:
        return ""
    body = [[_text(r.get(c["key"])) for c in cols] for r in rows]
    heads = [_text(c["label"]) for c in cols]
    notes: list[str] = []
    moved: list[str] = []  # long cells moved under the table, numbered
    if _width(heads, body) > width and len(body) > 1:
        same = [i for i in range(len(cols)) if len({r[i] for r in body}) == 1 and len(body[0][i]) <= 40]
        if same and len(same) < len(cols):
            notes.append("In every row: " + "; ".join(f"{heads[i]} {body[0][i]}" for i in same) + ".")
            keep = [i for i in range(len(cols)) if i not in same]
            cols, heads = [cols[i] for i in keep], [heads[i] for i in keep]
            body = [[r[i] for i in keep] for r in body]
    if _width(heads, body) > width:
        key = [f"{SHORT[h]}: {h}" for h in heads if h in SHORT]
        heads = [SHORT.get(h, h) for h in heads]
        if key:
            notes.append("Columns: " + "; ".join(key) + ".")
    over = _width(heads, body) - width
    if over > 0:  # the longest text column's long cells become notes under the table
        text_cols = [i for i, c in enumerate(cols) if not c.get("num")] or list(range(len(cols)))
        i = max(text_cols, key=lambda k: max(len(r[k]) for r in body))
        room = max(8, max(len(r[i]) for r in body) - over)
        for r in body:
            if len(r[i]) > room:
                moved.append(f"[{len(moved) + 1}] {heads[i]}: {r[i]}")
                r[i] = f"[{len(moved)}]"
    out = [_line(heads), "|" + "|".join("---:" if c.get("num") else "---" for c in cols) + "|"]
    out += [_line(r) for r in body]
    notes += moved  # every word kept; a paragraph each (no line break inside one: see wrap)
    return "\n".join(out) + ("\n\n" + "\n\n".join(notes) if notes else "") + "\n"



def common_words(labels: list[str]) -> list[str]:
    """The words every label has (``o1 push``), in the first label's order; none for one label."""
    if len(set(labels)) < 2:
        return []
    sets = [set(x.split()) for x in labels]
    both = set.intersection(*sets)
    return [w for w in labels[0].split() if w in both]


def strip_words(label: str, words: list[str]) -> str:
    rest = " ".join(w for w in label.split() if w not in words)
    return rest or label


def verdict_table(grid: dict[str, Any], reads: bool, width: int = WIDTH) -> str:
    """The closing table as a ticket shows it: a row per cell with its label (the words every
    label has go into the title above), then a row per level: rate, verdict (~ its borderline
    neighbours), the deciding figure (▲ a ceiling the chain beat)."""
    labels = [r["cell"] for r in grid["rows"]]
    common = common_words(labels)
    out = ([f"Cells ({len(labels)}), all {' '.join(common)}:", ""] if common else [])
    out += ["| cell / level | Gb/s | verdict | why (deciding figure) |", "|---|---:|---|---|"]
    for row in grid["rows"]:
        out.append(_line([f"**{_text(strip_words(row['cell'], common))}**", "", "", ""]))
        for p in row["points"]:
            if not p:
                continue
            level = f"c={p['concurrency']}" + (f" {p['direction']}" if reads else "")
            rate = p["rate_text"] + ("†" if p.get("unsteady") else "")
            verdict = " & ".join(f"**{v}**" for v in [p["verdict"], *(p.get("co_limits") or [])]) + \
                (f" (or {' or '.join(p['near'])})" if p.get("near") else "")
            why = p["short_reason"]
            for b in p.get("beats") or ():
                why += " ▲" if b["text"] in why else f" ▲ {b['text']}"
            cells = [level, rate, _text(verdict)]
            room = width - len(_line([*cells, ""]))
            out.append(_line([*cells, _clip(_text(why), max(room, 12))]))
    return "\n".join(out)


def findings(rows: list[dict[str, Any]], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Findings of the same kind (severity, what, why, fix) once, with the cells they were found
    in (by label; "the run" for one not tied to a cell), most cells first."""
    groups: dict[tuple, dict[str, Any]] = {}
    for f in rows:
        key = tuple(str(f.get(k) or "") for k in ("severity", "what", "why", "fix"))
        g = groups.setdefault(key, {"severity": key[0], "what": key[1], "why": key[2], "fix": key[3],
                                    "cells": []})
        cid = str(f.get("cell_id") or "")
        name = labels.get(cid, cid.replace(":", " ")) if cid else "the run"  # host:local: host local
        if name not in g["cells"]:
            g["cells"].append(name)
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(groups.values(), key=lambda g: (order.get(g["severity"], 3), -len(g["cells"])))


def findings_text(groups: list[dict[str, Any]], width: int = WIDTH) -> str:
    """A list item per kind of finding: what, why, the fix, then the cells it was found in."""
    out = []
    for g in groups:
        head = f"- **{g['severity'] or 'note'}: {g['what']}**"
        body = [x for x in (g["why"], f"Fix: {g['fix']}" if g["fix"] else "") if x]
        cells = g["cells"]
        where = f"In {len(cells)} cells: " if len(cells) > 1 else "In "
        out.append(" ".join([head + ".", *[b.rstrip(".") + "." for b in body], where + "; ".join(cells) + "."]))
    return "\n".join(out)


def short_time(v: Any) -> str:
    """'2026-11-27 16:57:03 UTC' from an ISO timestamp (no microseconds); '?' when missing."""
    if not v:
        return "?"
    try:
        t = dt.datetime.fromisoformat(str(v))
    except ValueError:
        return str(v)
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if t.tzinfo is not None else "")


def wrap(text: str, width: int = WIDTH) -> str:
    """The Markdown as a ticket takes it: no line is folded (GitHub renders every newline of a
    comment as a line break, and a break inside a code span breaks the span), runs of blank lines
    made one. ``width`` is the tables' (:func:`table`), not the prose's."""
    del width
    return re.sub(r"\n{3,}", "\n\n", text)


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 1].rstrip() + "…"
