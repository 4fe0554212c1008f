"""The state home: where xcbench keeps what must outlive one command (process and mount records
of xcbench.system.orphans, the cgroup registry of xcbench.system.cgroups, key copies, the embedded cluster).

    $XCBENCH_HOME, else ./.xcbench (absolute)

$XCBENCH_STATE named the cgroup registry's own dir before the two were one: when $XCBENCH_HOME
is not set it is taken as the state home, and the dirs an older xcbench may have written
records to (:func:`legacy`) are still read, so a record left there is reaped, not forgotten.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "XCBENCH_HOME"
LEGACY_ENV = "XCBENCH_STATE"
DEFAULT = ".xcbench"


def home() -> Path:
    """The state home of this command."""
    d = os.environ.get(ENV) or os.environ.get(LEGACY_ENV)
    return (Path(d) if d else Path.cwd() / DEFAULT).absolute()


def legacy() -> list[Path]:
    """Other dirs that held records before the state home was one ($XCBENCH_STATE for the
    cgroup registry, ./.xcbench for process records when only $XCBENCH_STATE was set)."""
    out: list[Path] = []
    for d in (os.environ.get(LEGACY_ENV), DEFAULT):
        p = Path(d).absolute() if d else None
        if p is not None and p != home() and p not in out:
            out.append(p)
    return out
