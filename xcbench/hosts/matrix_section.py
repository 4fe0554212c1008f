"""The hosts' part of a matrix (xcbench.matrix.sections): ``hosts:``, an inventory file
(relative to the matrix) or the inventory inline, and the run's inventory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xcbench.hosts.inventory import Inventory, load_inventory, parse_inventory
from xcbench.matrix import sections


def matrix_hosts(raw: Any, path: str) -> Inventory | None:
    """The matrix's inventory of hosts; None without one; XcbError (one line) when it is bad."""
    spec = raw.get("hosts") if isinstance(raw, dict) else None
    if spec is None:
        return None
    # a matrix is data: settings that run commands come only from --hosts FILE
    if isinstance(spec, str):
        return load_inventory(Path(path).parent / spec, commands=False)  # absolute: itself
    return parse_inventory(spec, f"{path}: hosts", commands=False)


SLURM_WORD = "slurm"  # --hosts slurm: the Slurm allocation this command runs in
SLURM_SOURCE = "--hosts slurm"  # the inventory's source then (the manifest's hosts.source)


def inventory_for(hosts_file: str | None, matrix_raw: Any, matrix_path: str) -> Inventory | None:
    """The run's inventory: ``--hosts FILE``, else the matrix's ``hosts:``; None without one.
    ``--hosts slurm`` (no such file) is ``{slurm: {}}``: every node of the allocation this
    command runs in (``salloc ... xcbench run MATRIX --hosts slurm``) a client host."""
    if hosts_file == SLURM_WORD and not Path(hosts_file).exists():
        return parse_inventory({"slurm": {}}, SLURM_SOURCE)
    if hosts_file:
        return load_inventory(hosts_file)
    return matrix_hosts(matrix_raw, matrix_path)


def check_hosts(raw: Any, path: str) -> None:
    matrix_hosts(raw, path)


sections.register("hosts", check_hosts)
