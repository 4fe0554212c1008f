"""A name says its unit (docs/architecture.md#units): no identifier and no stored name (a sample's
metric, a record's column, an evidence key: any name-like string constant) of the package ends in,
or holds, a bare ``bps``/``Bps``/``BPS`` token, nor a byte-rate token like ``GBps``. ``bps`` has
meant bytes/s in one module and bits/s in the next; names say ``bytes_per_s`` or ``bits_per_s``.
A lower-case prefixed token (``gbps``, ``mbps``) is the printed unit, 10^9 / 10^6 bits/s.

Old names appear only as keys of an ``*_RENAMED`` mapping (what an upgrade step renames), and
names of other software are listed in FOREIGN with their owner."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("xcbench", "analysis", "backends")
AMBIGUOUS = re.compile(r"(?:^|[_.])(?:[bB][pP][sS]|[kKmMgGtTpP]i?Bps)(?=$|[_.])")
NAME_LIKE = re.compile(r"^[A-Za-z_][\w.]*$")
FOREIGN = {"blkio.throttle.write_bps_device": "the kernel's cgroup v1 blkio file (bytes/s)"}


def _renamed_keys(tree: ast.AST) -> set[int]:
    """ids of the string constants that are keys of a dict assigned to a ``*_RENAMED`` name."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if any(n.endswith("RENAMED") for n in names) and isinstance(node.value, ast.Dict):
                out |= {id(k) for k in node.value.keys if k is not None}
    return out


def _names(tree: ast.AST):
    """(line, kind, name) of every identifier and name-like string constant."""
    skip = _renamed_keys(tree)
    for node in ast.walk(tree):
        found: list[tuple[str, str]] = []
        if isinstance(node, ast.Name):
            found = [("identifier", node.id)]
        elif isinstance(node, ast.Attribute):
            found = [("identifier", node.attr)]
        elif isinstance(node, ast.arg):
            found = [("identifier", node.arg)]
        elif isinstance(node, ast.keyword) and node.arg:
            found = [("identifier", node.arg)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found = [("identifier", node.name)]
        elif isinstance(node, ast.alias):
            found = [("identifier", node.asname or node.name.rsplit(".", 1)[-1])]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                and NAME_LIKE.match(node.value) and node.value not in FOREIGN:
            found = [("stored name", node.value)]
        for kind, name in found:
            yield getattr(node, "lineno", 0), kind, name


def ambiguous() -> list[str]:
    out = []
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(f.read_text(), filename=str(f))
            out += sorted({f"{f.relative_to(ROOT)}:{line}: {kind} {name!r}"
                           for line, kind, name in _names(tree) if AMBIGUOUS.search(name)})
    return out


def test_no_name_has_an_ambiguous_rate_unit():
    found = ambiguous()
    assert not found, (f"{len(found)} names with a bare bps (say bytes_per_s or bits_per_s; "
                       "rename a stored one through xcbench.store.upgrade):\n" + "\n".join(found))


def test_the_check_sees_each_kind_of_name():
    src = ("import a.rate_bps\nx_Bps = 1\ndef f(nic_bps, *, y=0): return q.net_bps(y=z_bps)\n"
           "class W_BPS: pass\nd = {'node.nic_rx_bps': 1, 'device_Bps_source': 2, 'GBps': 3}\n"
           "OLD_RENAMED = {'old_bps': 'old_bytes_per_s'}\n"
           "ok = ('rate_gbps', 'bits_per_second', 'speed_mbps', 'a bps in prose', 'io_rate_gib_s')\n")
    got = {name for _, _, name in _names(ast.parse(src)) if AMBIGUOUS.search(name)}
    assert got == {"rate_bps", "x_Bps", "nic_bps", "net_bps", "z_bps", "W_BPS", "node.nic_rx_bps",
                   "device_Bps_source", "GBps"}
