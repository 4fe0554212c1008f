"""The parts of a matrix that other packages check, and the registry where they say how.

The matrix loader sits low (just above the cell): it cannot import the campaign, the gateway,
the hosts, the probe or the telemetry, which all stand above it. Each of them checks its own part of a
matrix and registers that check here, in its module ``<package>.matrix_section``; the loader
calls what is registered.

A registry filled at import time depends on what was imported. That is made loud, not silent:
SECTIONS below is the one list of the sections the loader must check, and ``load_matrix``
refuses to run (SectionNotRegistered, naming the section and the module that registers it) while
any of them has no validator. ``xcbench.run.matrix_sections`` imports every registering module;
the command line, the pytest plugin and the runner import it.

A validator returns problems as (field, why); the loader writes each as the one-line error
``FILE: WHERE: FIELD: WHY`` (WHERE the cell, or the mapping it was found in). A validator of a
top-level section is given the raw matrix and its path and raises that one line (XcbError).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from xcbench.cell import Cell

Problems = list[tuple[str, str]]  # (field, why)
MappingCheck = Callable[[Mapping[str, Any]], Problems]  # one `campaign:` or `gateway:` mapping
CellCheck = Callable[[Cell], Problems]  # a cell, its settings merged
MatrixCheck = Callable[[Any, str], None]  # the raw matrix and its path; raises XcbError


@dataclass(frozen=True)
class Section:
    name: str  # how SectionNotRegistered names it
    kind: str  # "mapping": a `key:` mapping of defaults, a backend or an include entry;
    #            "cell": every cell; "matrix": the top-level `key:`
    key: str | None  # the matrix key it checks (None: a whole cell)
    module: str  # the module that registers its validator
    what: str  # what it checks, for the error


# In the order the loader reports their errors (the first error is the one shown).
SECTIONS: tuple[Section, ...] = (
    Section("campaign", "mapping", "campaign", "xcbench.campaign.matrix_section",
            "campaign: values (client, timeout, retries, duration, steady, access ...)"),
    Section("campaign.engine", "mapping", "campaign", "xcbench.scaleout.matrix_section",
            "campaign: engine and fts"),
    Section("gateway.ceph", "mapping", "gateway", "xcbench.gateway.matrix_section",
            "gateway: ceph.* directives"),
    Section("probe", "mapping", "probe", "xcbench.probe.matrix_section",
            "probe: ss, ss_dur, ss_ramp, patterns"),
    Section("cell.levels", "cell", None, "xcbench.campaign.matrix_section",
            "a cell's time-based levels (duration, steady, dataset cycling)"),
    Section("cell.dataset", "cell", None, "xcbench.campaign.matrix_section",
            "a cell's direction, reads and driver memory"),
    Section("cell.engine", "cell", None, "xcbench.scaleout.matrix_section",
            "a cell under engine fts3 (endpoint, TPC mode, credential)"),
    Section("hosts", "matrix", "hosts", "xcbench.hosts.matrix_section", "hosts: (the inventory)"),
    Section("prometheus", "matrix", "prometheus", "xcbench.telemetry.matrix_section",
            "prometheus: (url, auth, step, timeout)"),
)
_BY_NAME = {s.name: s for s in SECTIONS}
_validators: dict[str, Callable[..., Any]] = {}


class SectionNotRegistered(RuntimeError):
    """A program error, not the user's: an entry point loaded a matrix without importing the
    package that checks one of its sections (import xcbench.run.matrix_sections)."""


def register(name: str, validator: MappingCheck | CellCheck | MatrixCheck) -> None:
    """Say how section ``name`` (one of SECTIONS) is checked; once per section."""
    if name not in _BY_NAME:
        raise ValueError(f"{name!r} is not a matrix section (add it to "
                         f"xcbench.matrix.sections.SECTIONS: one of {', '.join(_BY_NAME)})")
    old = _validators.get(name)
    if old is not None and old is not validator:
        raise ValueError(f"matrix section {name}: a validator is already registered "
                         f"({old.__module__}.{old.__qualname__})")
    _validators[name] = validator


def missing() -> list[Section]:
    """The sections that no validator checks yet."""
    return [s for s in SECTIONS if s.name not in _validators]


def require_all() -> None:
    """SectionNotRegistered when a section has no validator: a matrix is never half-checked."""
    gone = missing()
    if gone:
        s = gone[0]
        raise SectionNotRegistered(
            f"matrix section {s.name} ({s.what}) has no validator: import {s.module} (or "
            f"xcbench.run.matrix_sections, which imports every section's module) before loading "
            f"a matrix" + (f"; also missing: {', '.join(x.name for x in gone[1:])}"
                           if len(gone) > 1 else ""))


def _of(kind: str, key: str | None = None) -> list[tuple[Section, Callable[..., Any]]]:
    require_all()
    return [(s, _validators[s.name]) for s in SECTIONS
            if s.kind == kind and (key is None or s.key == key)]


def mapping_checks(key: str) -> list[MappingCheck]:
    """The validators of a ``key:`` mapping (campaign, gateway), in SECTIONS' order."""
    return [cast(MappingCheck, v) for _, v in _of("mapping", key)]


def cell_checks() -> list[CellCheck]:
    return [cast(CellCheck, v) for _, v in _of("cell")]


def matrix_check(key: str) -> MatrixCheck:
    """The validator of the top-level ``key:`` (hosts, prometheus)."""
    return cast(MatrixCheck, next(v for _, v in _of("matrix", key)))
