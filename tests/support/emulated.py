"""Emulated hosts as the tests bring them up: an inventory written into the test's dir and up
as network namespaces on a bridge; down after."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import yaml

from xcbench.hosts import Inventory, load_inventory
from xcbench.hosts.emulate import down, up


@contextlib.contextmanager
def emulated_hosts(d: Path, data: dict, name: str = "hosts.yaml") -> Iterator[tuple[Path, Inventory]]:
    """The inventory ``data`` written to ``d``/``name`` and its hosts up (their record in
    ``d``/hosts-state); (the inventory's path, the inventory). Down after."""
    path = d / name
    path.write_text(yaml.safe_dump(data))
    inv = load_inventory(path)
    state = d / "hosts-state"
    up(inv, state)
    try:
        yield path, inv
    finally:
        down(state, inv)
