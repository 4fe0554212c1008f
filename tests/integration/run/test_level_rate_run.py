"""One rate per level on a real run of the demo matrix's shape (the session's ``demo_run``,
tests/support/demorun.py): the progress line, the closing table, the Markdown report and
the verdict's evidence give the same steady rate for every level, and that rate is averaged
over the very window the level's rule judged (the one the plots shade)."""

from __future__ import annotations

import json
import math
import re

import pytest

from xcbench.analysis.report import markdown
from xcbench.analysis.report.document import render_report
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.figures.units import fmt_num

pytestmark = pytest.mark.integration

# piped, each line starts with the time of day; a cell's line ends with the time left
CELL = re.compile(r"^(?:\d\d:\d\d:\d\d )?\s*\[\d+/\d+\] .* \(([^()\s]+)\)(?: — .*)?$")
LEVEL = re.compile(r"^(?:\d\d:\d\d:\d\d )?\s*c=(\d+): ([\d.]+) Gb/s (?:steady|over its last window)")


def _progress(stderr: str) -> dict[tuple[str, int], list[str]]:
    """{(cell id, level): [Gb/s of each repeat, as printed]} from the progress view's level lines."""
    out: dict[tuple[str, int], list[str]] = {}
    cell = None
    for line in stderr.splitlines():
        if m := CELL.match(line):
            cell = m.group(1)
        elif (m := LEVEL.match(line)) and cell is not None:
            out.setdefault((cell, int(m.group(1))), []).append(m.group(2))
    return out


def _evidence(rd: RunData) -> dict[tuple[str, int], float]:
    """{(cell id, level): the rate (B/s) the verdict was decided on}, write points."""
    out = {}
    for v in rd.stored_verdicts.to_dict("records"):
        if v.get("direction") not in (None, "write"):
            continue
        ev = json.loads(v["evidence"] or "{}")
        out[(v["cell_id"], int(v["concurrency"]))] = ev.get("rate")
    return out


def _markdown(rd: RunData, path) -> dict[tuple[str, int], str]:
    """{(cell id, level): the Gb/s text} of the Markdown report's verdict table: a row per cell
    (its label, the words every label shares said once above the table), then a row per level."""
    labels = {str(c["label"]): cid for cid, c in rd.cells.iterrows()}
    common = markdown.common_words(list(labels))
    by_shown = {markdown.strip_words(label, common): cid for label, cid in labels.items()}
    out, cell = {}, None
    text = path.read_text()
    table = text[text.index("| cell / level |"):].split("\n\n", 1)[0]  # the verdict table only
    for line in table.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) < 4:
            continue
        if cols[0].startswith("**"):
            cell = by_shown.get(cols[0].strip("*").replace("\\|", "|"))
        elif (m := re.fullmatch(r"c=(\d+)", cols[0])) and cell is not None:
            out[(cell, int(m.group(1)))] = cols[1].rstrip("†")
    return out


def test_every_level_has_one_rate_wherever_it_is_shown(demo_run, tmp_path):
    rd = RunData(demo_run.run)
    evidence = _evidence(rd)
    progress = _progress(demo_run.stderr)
    closing = {(p["cell_id"], int(p["concurrency"])): p["rate_gbps"]
               for p in demo_run.closing["points"] if p["direction"] == "write"}
    md = _markdown(rd, render_report([rd], "md", tmp_path / "report.md"))
    levels = {(cid, int(c)) for cid in rd.cells.index for c in rd.cells.loc[cid, "levels"]}
    assert len(levels) == demo_run.cells * len(demo_run.levels)
    assert set(evidence) == levels and set(closing) == levels and set(md) == levels
    assert set(progress) == levels, sorted(levels - set(progress))
    for key in sorted(levels):
        rate = evidence[key]
        assert rate is not None and rate > 0, key
        gbps = rate * 8 / 1e9
        assert closing[key] == pytest.approx(gbps, rel=1e-9), key
        assert md[key] == fmt_num(gbps), key
        seen = progress[key]
        assert len(seen) == 1, (key, seen)  # the demo shape runs one repeat
        assert seen[0] == md[key] == fmt_num(gbps), (key, seen, gbps)  # the same digits everywhere


def test_each_level_is_averaged_over_the_window_its_rule_judged(demo_run):
    rd = RunData(demo_run.run)
    st = rd.steady
    assert len(st) and set(st["campaign_id"]) <= set(rd.levels)
    for r in st.to_dict("records"):
        level = rd.levels[r["campaign_id"]]
        assert (r["t_start"], r["t_end"]) == tuple(level["window"]), r["campaign_id"]
        assert r["whole_buckets"], level["window"]  # the rule's window holds whole buckets
        assert r["wall_end"] - r["wall_start"] == pytest.approx(r["t_end"] - r["t_start"], abs=1e-6)
        tl = rd.timeline[rd.timeline["campaign_id"] == r["campaign_id"]]
        inside = tl[(tl["t"] > r["t_start"]) & (tl["t"] <= r["t_end"])]
        assert len(inside) >= 2
        assert r["window_mean"] == pytest.approx(inside["bytes"].sum() / (r["t_end"] - r["t_start"]),
                                                 rel=1e-9)
        assert math.isfinite(r["window_cv"])
