"""Test modules share helpers through tests/support/, never by importing each other: a test
module imported by another runs its tests' module-level code twice and ties the two together."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_test_module_imports_another():
    found = []
    for f in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{f.relative_to(TESTS)}: {n}" for n in names
                      if n.startswith(("tests.unit", "tests.integration"))]
    assert not found, "import from tests/support instead: " + "; ".join(found)
