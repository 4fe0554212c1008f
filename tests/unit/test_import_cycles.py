"""No import cycle among the project's modules (xcbench/, backends/, analysis/), and packages
that only import downwards (LAYERS).

Every import counts, also those inside functions (a lazy import hides a cycle, it does not remove
it); only imports under ``if TYPE_CHECKING:`` are left out, as they never run.

KNOWN lists the cycles that existed when this test was written, each with where it is: they are
reported, not failed on, until fixed; a new cycle fails, and so does a KNOWN entry that is gone
(remove it then, so that it cannot come back unnoticed).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# package directory -> the name it is imported as (pyproject's package-dir)
PACKAGES = {"xcbench": "xcbench", "backends": "xcbench.backends", "analysis": "xcbench.analysis"}
KNOWN: dict[frozenset, str] = {}


def module_files() -> dict[str, Path]:
    out = {}
    for d, name in PACKAGES.items():
        for f in sorted((ROOT / d).rglob("*.py")):
            parts = list(f.relative_to(ROOT / d).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([name, *parts])] = f
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imported(module: str, path: Path, known: set[str], type_checking: bool = False) -> set[str]:
    """Project modules ``module`` imports at run time (at any depth of its code); with
    ``type_checking``, also those it imports for the type checker only."""
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()

    def add(name: str) -> None:
        # `from a.b import c` may import module a.b.c or name c of a.b: keep the longest known
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_checking:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module if is_pkg else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                prefix = f"{base}.{node.module}" if node.module else base
            else:
                prefix = node.module or ""
            for a in node.names:
                add(f"{prefix}.{a.name}")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(_parse(path))
    return out


@functools.cache
def _parse(path: Path) -> ast.Module:
    """A module's tree, parsed once per session (five tests walk every module)."""
    return ast.parse(path.read_text(), filename=str(path))


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (depth-first search, colours)."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def dfs(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = dfs(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = dfs(n)
            if found:
                return found
    return None


def tangles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with a cycle (Tarjan): the modules of each import tangle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[frozenset[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """{module: project modules it imports}; the modules a package's __init__ imports are edges
    of that package (importing a.b.c also runs a/__init__, but that is not an edge of a.b.c)."""
    files = module_files()
    known = set(files)
    return {m: imported(m, f, known) for m, f in files.items()}


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_imported_sees_function_level_imports_and_skips_type_checking(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import p.x\n"
                 "def f():\n    from p import y\n    from .z import w\n")
    assert imported("p.m", f, {"p", "p.x", "p.y", "p.z", "p.m"}) == {"p.y", "p.z"}


def test_tangles_groups_a_cycle():
    g = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"d"}}
    assert sorted(map(sorted, tangles(g))) == [["a", "b"], ["d"]]


def test_no_import_cycle():
    graph = import_graph()
    assert "xcbench.ceph.cluster" in graph and "xcbench.backends.base" in graph
    new = []
    for comp in tangles(graph):
        if comp not in KNOWN:
            sub = {m: graph[m] & comp for m in comp}
            new.append(" -> ".join(find_cycle(sub) or sorted(comp)))
    assert not new, "import cycle(s): " + "; ".join(new)
    gone = [why for comp, why in KNOWN.items() if comp not in tangles(graph)]
    assert not gone, f"fixed, remove them from KNOWN: {gone}"


def test_ceph_package_imports_one_way():
    graph = import_graph()
    for low in ("xcbench.ceph.pools", "xcbench.ceph.mounts", "xcbench.ceph.conf",
                "xcbench.cell.layout", "xcbench.cell.protection"):
        assert "xcbench.ceph.cluster" not in graph[low], low
        assert "xcbench.ceph.mini" not in graph[low], low
    assert "xcbench.ceph.mini" not in graph["xcbench.ceph.cluster"]


# The packages from the ground floor up: a module imports only from its own package or
# a package below it. A row holds packages of one floor (the error type beside the OS layer: each
# uses the other). The top level keeps the CLI entry points and the error type.
LAYERS: list[tuple[str, ...]] = [
    ("xcbench", "xcbench.errors"),
    ("xcbench.figures",),
    ("xcbench.system",),
    ("xcbench.cell",),
    # the matrix loader stands on the cell alone: its consumers check their sections of a
    # matrix through xcbench.matrix.sections (and xcbench.run.matrix_sections imports them)
    ("xcbench.matrix",),
    ("xcbench.store",),
    ("xcbench.ceph",),
    ("xcbench.hosts",),
    ("xcbench.network",),
    ("xcbench.backends",),
    ("xcbench.telemetry",),
    ("xcbench.clients",),
    # the campaign stands on the clients (and the cell, matrix, store): none of the gateway, the
    # probe, the telemetry or the analysis; running it elsewhere needs the hosts besides
    ("xcbench.campaign",),
    ("xcbench.scaleout",),
    ("xcbench.gateway",),
    ("xcbench.probe",),
    ("xcbench.analysis.verdicts",),
    # "xcbench.analysis" (its __init__, conclude) sits with report: a row is searched longest
    # name first
    ("xcbench.analysis", "xcbench.analysis.report"),
    ("xcbench.plan",),
    ("xcbench.run",),
    ("xcbench.selftest",),
    ("xcbench.commands", "xcbench.cli", "xcbench.__main__", "xcbench.pytest_plugin"),
]
# What each floor holds, by the first package of its row: docs/architecture.md's floor table is
# made from LAYERS and this (`python tests/unit/test_import_cycles.py` writes it; a test checks it).
WHAT: dict[str, str] = {
    "xcbench": "the package's version; the one user-facing error (imports nothing; "
               "`system.secrets` plugs its scrubber in)",
    "xcbench.figures": "pure figures, numbers in and out: `units` (sizes, rates, capacities: one "
                       "meaning per symbol; report number formats), `stats`, `steady` (a level's "
                       "steady window and rate), `buckets`, `reference` and `published` "
                       "(published figures a matrix reproduces)",
    "xcbench.system": "the OS layer: `proc` + `proctree` (the one subprocess helper), `signals`, "
                      "`orphans`, `cgroups` + `limits`, `blkio`, `mounts`, `fsutil` (`remove_tree`: "
                      "never crosses a mount point, never follows a symlink), `statedir`, "
                      "`secrets`, `ports`, `xrootd_user`, `userfiles`, `templates`, `agentstream`",
    "xcbench.cell": "the **cell** (the matrix's point as a typed value) and the names it uses: "
                    "`layout` (Ceph's striping rules), `protection` (replicated size / EC k+m), "
                    "`classes` (file-size classes), the backends, modes, directions and security "
                    "modes",
    "xcbench.matrix": "**matrix** files: `schema`, `expand` (product, include/exclude, **cell** "
                      "ids), `validate`; `sections`: the registry where each package that runs a "
                      "cell registers the check of its part (`<package>/matrix_section.py`; "
                      "`run/matrix_sections` imports them all)",
    "xcbench.store": "the result store: `rundir`, `manifest`, `jsonl`, `tables`, `findings`, "
                     "`fingerprint`, `catalog`, `reserve`, `upgrade` (older runs in today's shape)",
    "xcbench.ceph": "everything Ceph: `cluster` (handle), `mini` + `bootstrap` (the embedded mini "
                    "cluster), `conf`, `pools`, `mounts`, `access`, `keys`, `monitoring`",
    "xcbench.hosts": "**host**s and their **transport**s: `inventory`, `transport`, `emulate`, "
                     "`checks`, `links`, `reshape`",
    "xcbench.network": "`baseline` (iperf3 between host pairs), `tcpaudit`, `addressing`",
    "xcbench.backends": "the **backend** interface (`base.py`) and one package per backend "
                        "(`tmpfs`, `cephfs`, `rados`)",
    "xcbench.telemetry": "**sampler**s on one timeline: `host`, `gateway`, `ceph`, `roles` + "
                         "`role_processes`, `link_sampler`, `prometheus` (+ `promapi`, "
                         "`promqueries`), `xrdreport`",
    "xcbench.clients": "transfer clients, one per protocol library: `xrootd_client`, "
                       "`gfal2_client`, `http_client`; `base` (an attempt's result, the factory), "
                       "`threads`, `credentials`",
    "xcbench.campaign": "**campaign**s on this host: `spec`, `dataset`, `dispatch`, `level`, "
                        "`monitor`, `cancel`, `optimizer`, `rows`, `live_view`, `drivercpu`, "
                        "`endpoints`, `staging`; reads: `reads`, `readers`, `access`",
    "xcbench.scaleout": "a campaign elsewhere: `engine` (local or fts3), `fts3`, client hosts over "
                        "ssh (`distributed`, `agent`, `merge`)",
    "xcbench.gateway": "**gateway**s: `config`, `launch`, `placement`, `readiness`, `remote` + "
                       "`agent`/`agent_parts`, `security`, `misconfig`, `cores`, `smoke` (a WLCG "
                       "endpoint's smoke test)",
    "xcbench.probe": "**probe**s: `jobs` (a probe of a cell's target), `job_settings`, `jobfiles`, "
                     "`device_count`, `levels` (a write probe per campaign level, as the gateway "
                     "writes), `settle`, `noise`, `cpu`, `fio` (running fio, parsing JSON+)",
    "xcbench.analysis.verdicts": "what decides: `run_data` (one run loaded once), `attribution` + "
                                 "`rules` (the **verdict**s), `roles`, `probes`, `sources`, "
                                 "`directions`, `amplification`, `link_use`, `storagehosts`, "
                                 "noise (`samples`, `between_run`, `borderline`), `compare`, the "
                                 "experiments of `confirm`",
    "xcbench.analysis": "what shows: `render`, `document` (the report), `run_section` + "
                        "`run_tables`, `glance` (the closing table), `plots` and the other "
                        "figures, `templates/`; `conclude` (a finished run's one load: verdicts, "
                        "reports, closing table)",
    "xcbench.plan": "**plan**s: specs, storage and gateway models, presets, published clusters, "
                    "calibration",
    "xcbench.run": "the **run**: `runner`, `options` (RunOptions), `hooks` (how a caller extends "
                   "a run), `session`, `progress`, `hostrun` (the run's client hosts), "
                   "`matrix_sections`",
    "xcbench.selftest": "known-answer **scenario**s (`capping`: the hooks that cap a role) and "
                        "`confirm`",
    "xcbench.commands": "the command line (one module per subcommand, `cli.py`) and the pytest "
                        "plugin",
}


def _path(pkg: str) -> str:
    """Where a row's package lives in the repository (pyproject's package-dir)."""
    files = module_files()
    if pkg == "xcbench":
        return "`xcbench/__init__.py`"
    f = files[pkg].relative_to(ROOT)
    if f.name != "__init__.py":
        return f"`{f}`"
    inner = any(q.startswith(pkg + ".") for row in LAYERS for q in row)  # a floor of its own
    return f"`{f.parent}/*.py`" if inner else f"`{f.parent}/`"


def floor_table() -> str:
    """docs/architecture.md's floor table, from LAYERS and WHAT."""
    lines = ["| floor | package | what it holds |", "|---|---|---|"]
    for i, row in enumerate(LAYERS):
        lines.append(f"| {i} | {', '.join(_path(p) for p in row)} | {WHAT[row[0]]} |")
    return "\n".join(lines)


ARCHITECTURE = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- floors: made from LAYERS in tests/unit/test_import_cycles.py; " \
        "`python tests/unit/test_import_cycles.py` writes it -->"
END = "<!-- /floors -->"


def with_floor_table(doc: str) -> str:
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{floor_table()}\n{END}{tail}"


# Where a project import may sit inside a function, and why it must (none today: measured,
# `xcbench --help` loads pandas and the Ceph, XRootD and gfal2 bindings through the matrix and
# campaign packages anyway, so lazy imports in the commands saved nothing).
LAZY_IMPORTS_ALLOWED: tuple[str, ...] = ()


def package_of(module: str) -> str:
    for row in LAYERS:
        for pkg in sorted(row, key=len, reverse=True):
            if module == pkg or module.startswith(pkg + "."):
                if pkg == "xcbench" and module != "xcbench":
                    continue
                return pkg
    raise AssertionError(f"{module}: in no package of LAYERS (add it where it stands)")


def floor_of(pkg: str) -> int:
    return next(i for i, row in enumerate(LAYERS) if pkg in row)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for m, deps in sorted(graph.items()):
        for d in sorted(deps):
            a, b = package_of(m), package_of(d)
            if a != b and floor_of(b) > floor_of(a):
                out.append(f"{m} -> {d} ({a} is below {b})")
    return out


def function_imports(module: str, path: Path, known: set[str]) -> list[int]:
    """Lines of ``module`` that import project code inside a function (TYPE_CHECKING left out)."""
    lines: list[int] = []

    def visit(node: ast.AST, infunc: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            return
        infunc = infunc or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        if infunc and isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""]
            if node.__dict__.get("level") or any(n.split(".")[0] == "xcbench" for n in names):
                lines.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, infunc)

    visit(_parse(path), False)
    return lines


def test_upward_imports_are_found():
    assert package_of("xcbench.system.proc") == "xcbench.system"
    assert package_of("xcbench.cli") == "xcbench.cli"
    assert upward_imports({"xcbench.system.proc": {"xcbench.run.runner"}}) == [
        "xcbench.system.proc -> xcbench.run.runner (xcbench.system is below xcbench.run)"]
    assert upward_imports({"xcbench.run.runner": {"xcbench.system.proc"}}) == []


def test_function_imports_are_found(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nimport xcbench.errors\nif TYPE_CHECKING:\n"
                 "    import xcbench.store\ndef f():\n    import os\n    from xcbench import x\n")
    assert function_imports("xcbench.m", f, set()) == [7]


def test_packages_import_only_downwards():
    """Also imports inside functions: a lazy import hides an upward edge, it does not remove it."""
    graph = import_graph()
    assert not upward_imports(graph), "upward import(s):\n" + "\n".join(upward_imports(graph))


def test_project_imports_sit_at_module_level():
    files = module_files()
    known = set(files)
    found = [f"{m}:{line}" for m, f in files.items()
             if not (LAZY_IMPORTS_ALLOWED and m.startswith(LAZY_IMPORTS_ALLOWED))
             for line in function_imports(m, f, known)]
    assert not found, ("project imports inside functions (move them to the top of the module, "
                       "or say in LAZY_IMPORTS_ALLOWED why they must stay): " + ", ".join(found))


def test_no_circle_hidden_under_type_checking_in_ceph():
    """pools and mounts name the handle's Protocol (ceph.handle), not the Cluster that imports
    them: an import under TYPE_CHECKING is still a circle a reader has to follow."""
    root = ROOT / "xcbench" / "ceph"
    for low in ("pools", "mounts", "handle", "keys", "conf"):
        text = (root / f"{low}.py").read_text()
        assert "xcbench.ceph.cluster import" not in text, low


@functools.cache
def typed_import_graph() -> dict[str, set[str]]:
    """Like import_graph, with the imports under ``if TYPE_CHECKING:`` counted too."""
    files = module_files()
    known = set(files)
    return {m: imported(m, f, known, type_checking=True) for m, f in files.items()}


def test_imported_counts_type_checking_when_asked(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import p.x\n")
    assert imported("p.m", f, {"p.x", "p.m"}, type_checking=True) == {"p.x"}
    assert imported("p.m", f, {"p.x", "p.m"}) == set()


def test_no_circle_inside_a_package_even_for_type_checking():
    """An import under TYPE_CHECKING never runs, but a reader still has to follow it: inside a
    package, the modules import one way even for the type checker (a Protocol below, instead)."""
    graph = typed_import_graph()
    inner = {m: {d for d in deps if package_of(d) == package_of(m)} for m, deps in graph.items()}
    found = [" -> ".join(find_cycle({m: inner[m] & comp for m in comp}) or sorted(comp))
             for comp in tangles(inner)]
    assert not found, "circle(s) inside a package (TYPE_CHECKING imports counted): " + "; ".join(found)
    # nor between packages: the type checker's imports go down the floors too
    across = [" -> ".join(find_cycle({m: graph[m] & comp for m in comp}) or sorted(comp))
              for comp in tangles(graph)]
    assert not across, "import cycle(s) with TYPE_CHECKING imports counted: " + "; ".join(across)
    assert not upward_imports(graph), "upward TYPE_CHECKING import(s):\n" + "\n".join(upward_imports(graph))


def imports_of(graph: dict[str, set[str]], low: str, high: str) -> list[str]:
    """Edges from package ``low`` (or a module of it) to anything of ``high``."""
    def of(m: str, pkg: str) -> bool:
        return m == pkg or m.startswith(pkg + ".")
    return [f"{m} -> {d}" for m, deps in sorted(graph.items()) if of(m, low)
            for d in sorted(deps) if of(d, high)]


def test_imports_of_finds_an_edge():
    g = {"xcbench.run.runner": {"xcbench.analysis.verdicts.attribution", "xcbench.store"},
         "xcbench.runs": {"xcbench.analysis"}}
    assert imports_of(g, "xcbench.run", "xcbench.analysis") == [
        "xcbench.run.runner -> xcbench.analysis.verdicts.attribution"]


def test_the_run_imports_nothing_of_the_analysis():
    """A run closes in one place, one direction: the runner measures and finalizes; its caller
    concludes (xcbench.analysis.conclude: one RunData for the verdicts, the reports and the
    closing table). Not even for the type checker."""
    found = imports_of(typed_import_graph(), "xcbench.run", "xcbench.analysis")
    assert not found, "xcbench.run imports the analysis: " + ", ".join(found)


def class_factories(path: Path) -> list[int]:
    """Lines of ``path`` that make a class at run time: ``type(name, bases, namespace)``."""
    return [n.lineno for n in ast.walk(_parse(path)) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id == "type" and len(n.args) == 3]


def test_class_factories_are_found(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("x = type(1)\nR = type('R', (object,), {'cap': 1})\n")
    assert class_factories(f) == [2]


def test_no_class_is_made_at_run_time_and_no_runner_is_subclassed():
    """A run is extended through its hooks (xcbench.run.hooks.RunHooks in RunOptions), not by
    a Runner subclass overriding its private methods, nor a class made with type(...)."""
    files = module_files()
    made = [f"{m}:{line}" for m, f in files.items() for line in class_factories(f)]
    assert not made, "classes made with type(name, bases, dict): " + ", ".join(made)
    sub = [f"{m}:{n.lineno}" for m, f in files.items() for n in ast.walk(_parse(f))
           if isinstance(n, ast.ClassDef) and any(
               (isinstance(b, ast.Name) and b.id == "Runner")
               or (isinstance(b, ast.Attribute) and b.attr == "Runner") for b in n.bases)]
    assert not sub, "subclasses of the Runner (use RunOptions.hooks): " + ", ".join(sub)


def test_every_floor_says_what_it_holds():
    assert [row[0] for row in LAYERS] == list(WHAT), "one WHAT entry per row of LAYERS, in order"


def test_the_architecture_floor_table_is_made_from_layers():
    """The one floor table (docs/architecture.md#the-floors): what LAYERS says, nothing else."""
    doc = ARCHITECTURE.read_text()
    assert BEGIN in doc and END in doc
    assert with_floor_table(doc) == doc, \
        "docs/architecture.md's floor table is not LAYERS': `python tests/unit/test_import_cycles.py`"


if __name__ == "__main__":  # write docs/architecture.md's floor table from LAYERS
    ARCHITECTURE.write_text(with_floor_table(ARCHITECTURE.read_text()))
