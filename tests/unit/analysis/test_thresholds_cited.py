"""Every threshold of the verdict rules and the judge cites its source: each numeric module
constant of analysis/verdicts has a row in docs/verdicts.md#thresholds-and-where-they-come-from
with the code's value and a source, and no row names a constant that is gone."""

from __future__ import annotations

import ast
import importlib
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PKG = ROOT / "analysis" / "verdicts"
DOC = ROOT / "docs" / "verdicts.md"
HEADING = "## Thresholds and where they come from"


def constants(source: str, values: dict) -> list[str]:
    """The UPPER_CASE names the module's own top level assigns (not imports) whose value is a
    number or a dict of numbers (a tuple of names or a string is no threshold)."""
    out = []
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if not isinstance(target, ast.Name) or not re.fullmatch(r"[A-Z][A-Z0-9_]*", target.id):
            continue
        v = values.get(target.id)
        if _number(v) or (isinstance(v, dict) and v and all(_number(x) for x in v.values())):
            out.append(target.id)
    return out


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def rows() -> dict[str, tuple[str, str]]:
    text = DOC.read_text()
    assert HEADING in text, f"{DOC} has no section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        m = re.match(r"^\| (`\w+\.\w+`(?:, `\w+\.\w+`)*) \| ([^|]+) \| (.+) \|$", line)
        for key in re.findall(r"`(\w+\.\w+)`", m[1]) if m else ():
            out[key] = (m[2].strip(), m[3].strip())  # '—': a unit, not compared
    return out


def test_the_scanner_finds_numbers_and_leaves_names_and_strings():
    src = ("from math import pi as PI\nX = 0.5\nY = 2 * X\nZ: float = 1\nD = {'a': 0.1}\n"
           "F = float(1 << 20)\nT = ('a', 'b')\nS = 'x'\nB = True\nlow = 3\n")
    ns: dict = {}
    exec(src, ns)  # noqa: S102 - the test's own literal
    assert constants(src, ns) == ["X", "Y", "Z", "D", "F"]


def test_every_threshold_has_a_row_with_its_value_and_a_source():
    table = rows()
    assert len(table) >= 20, table
    found = set()
    for path in sorted(PKG.glob("*.py")):
        mod = importlib.import_module(f"xcbench.analysis.verdicts.{path.stem}")
        for name in constants(path.read_text(), vars(mod)):
            key = f"{path.stem}.{name}"
            found.add(key)
            assert key in table, f"{key} = {getattr(mod, name)!r} has no row in {DOC.name}'s thresholds"
            shown, source = table[key]
            assert len(source) > 10, f"{key}: no source"
            value = getattr(mod, name)
            if isinstance(value, (int, float)) and shown != "—":
                assert math.isclose(float(shown), float(value), rel_tol=1e-3), \
                    f"{key}: the table says {shown}, the code {value}"
    assert sorted(set(table) - found) == [], "rows for constants that are gone"
