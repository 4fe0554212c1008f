"""A run's cells are read as cells: nothing outside ``xcbench/cell``, ``xcbench/store`` and the
one function that rebuilds them (analysis.verdicts.run_data.stored_cells, behind
RunData.cell_objects) reads a cell's stored ``settings`` dict (``manifest["cells"][id]["settings"]``):
the rest take the Cell objects the cell's own code rebuilds (Cell.from_settings), so a setting
has one meaning, one default and one check everywhere.

What counts, in each function (module level included): a mapping taken from a ``"cells"`` key
(``manifest["cells"]``, ``m.get("cells") or {}``) or named ``cells``, an entry of it (``m[cid]``,
``m.get(cid)``, the values of ``.items()``/``.values()`` in a loop or a comprehension, names
bound to them), and ``entry["settings"]`` / ``entry.get("settings")`` on such an entry. A
campaign's settings (the campaigns table's column) or a pool's are other dicts, read freely."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("xcbench", "analysis", "backends", "benchmarks")
OWNERS = ("xcbench/cell/", "xcbench/store/")
REBUILDS = {("analysis/verdicts/run_data.py", "stored_cells")}  # RunData.cell_objects' source
KEY_METHODS = ("get", "pop", "setdefault")


def _access(node: ast.AST) -> tuple[ast.AST, ast.AST] | None:
    """(base, key) of ``base[key]`` or ``base.get(key, ...)``, else None."""
    if isinstance(node, ast.Subscript):
        return node.value, node.slice
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in KEY_METHODS and node.args:
        return node.func.value, node.args[0]
    return None


def _const(node: ast.AST, value: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == value


class _Scope:
    """The kinds of the names of one function: "map" (the manifest's cells) or "entry" (a cell)."""

    def __init__(self, fn: ast.AST):
        self.fn, self.names = fn, {}
        for _ in range(4):  # bindings may refer to each other: a few rounds settle them
            for node in ast.walk(fn):
                self._bind(node)

    def kind(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):  # m.get("cells") or {}
            return self.kind(node.values[0])
        if isinstance(node, ast.Name):
            return self.names.get(node.id, "map" if node.id == "cells" else None)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" \
                and len(node.args) == 1:  # a copy
            return self.kind(node.args[0])
        acc = _access(node)
        if acc is None:
            return None
        base, key = acc
        if _const(key, "cells"):
            return "map"
        return "entry" if self.kind(base) == "map" else None

    def _entries_of(self, it: ast.AST) -> str | None:
        """"items"/"values" when ``it`` is ``M.items()``/``M.values()`` of a cells map."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
                and it.func.attr in ("items", "values") and self.kind(it.func.value) == "map":
            return it.func.attr
        return None

    def _bind(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            k = self.kind(node.value)
            if k:
                self.names[node.targets[0].id] = k
        loops = [(node.target, node.iter)] if isinstance(node, (ast.For, ast.AsyncFor)) else \
            [(g.target, g.iter) for g in node.generators] if isinstance(
                node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) else []
        for target, it in loops:
            how = self._entries_of(it)
            if how == "values" and isinstance(target, ast.Name):
                self.names[target.id] = "entry"
            elif how == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2 \
                    and isinstance(target.elts[1], ast.Name):
                self.names[target.elts[1].id] = "entry"

    def readers(self) -> list[int]:
        """Lines reading ``entry["settings"]``."""
        out = []
        for node in ast.walk(self.fn):
            acc = _access(node)
            if acc and _const(acc[1], "settings") and self.kind(acc[0]) == "entry":
                out.append(node.lineno)
        return out


def settings_readers(source: str, path: str) -> list[str]:
    """``path:line: function`` of each read of a cell's stored settings in ``source``."""
    tree = ast.parse(source, filename=path)
    scopes: list[tuple[str, ast.AST]] = [("<module>", ast.Module(body=[
        s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))],
        type_ignores=[]))]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scopes.append((node.name, node))
    found: dict[int, str] = {}
    for name, fn in scopes:  # outer functions first (ast.walk): a line is its innermost's
        for line in _Scope(fn).readers():
            found[line] = name
    return [f"{path}:{line}: {name}" for line, name in sorted(found.items())
            if (path, name) not in REBUILDS]


def readers_in(root: Path) -> list[str]:
    out = []
    for pkg in PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            rel = f.relative_to(root).as_posix()
            if not rel.startswith(OWNERS):
                out += settings_readers(f.read_text(), rel)
    return out


def test_only_the_cells_own_code_reads_their_stored_settings():
    found = readers_in(ROOT)
    assert not found, ("a cell's stored settings read outside xcbench/cell, xcbench/store and "
                       "RunData (take RunData.cell_objects, or Cell.from_settings):\n" + "\n".join(found))


def test_the_check_sees_each_way_of_reading_them():
    src = '''
def a(manifest):
    return (((manifest.get("cells") or {}).get(cid) or {}).get("settings") or {})
def b(rd):
    return {cid: c.get("settings") for cid, c in rd.manifest["cells"].items()}
def c(cells):
    info = cells.get(cid, {}) or {}
    return info["settings"]
def d(run):
    cells = run.manifest.get("cells", {}) or {}
    for e in cells.values():
        x = (e or {}).get("settings")
    return lambda k: cells[k]["settings"]["backend"]
def e(manifest):
    stored = dict(manifest.get("cells") or {})
    for cid, c in stored.items():
        s = c.get("settings") or {}
def fine(m, campaigns, cells):
    for cid, c in m["cells"].items():
        c.get("fingerprint").get("pool").get("settings")  # the pool's, not the cell's
    for row in campaigns:
        row["settings"]
    return [c.settings() for c in cells.values()]
'''
    got = settings_readers(src, "x.py")
    assert [g.rsplit(": ", 1)[1] for g in got] == ["a", "b", "c", "d", "d", "e"], got
