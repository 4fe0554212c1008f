"""Matrix files: YAML in layouts/ -> validated cells.

schema (keys, values, one-line errors) -> expand (cells, ids, labels) -> validate (the
cluster's facts); this module ties them together: load_matrix(), check_lines(), Matrix.
The packages that run a cell check their own parts of it (campaign, engine, gateway, hosts,
prometheus) through the registry in ``sections``: the matrix imports none of them.

A matrix names backends and, per backend, the dimensions to cross::

    name: quick
    defaults:                 # dimensions shared by every backend (each may override them)
      origins: [1]
      modes: [push]           # push | tpc-root | tpc-http
      concurrency: [1, 4]     # campaign levels run inside each cell
      file_size: 16M
      files: 8
      size_dist: fixed        # fixed | uniform | lognormal
      repeats: 1
      streams: [1, 4, 16]     # optional: TCP streams per transfer (crossed like origins)
      size_class: [small, large]  # optional: Fermilab's classes (cell/classes.py) ...
      size_scale: 8           # ... divided by this where the target is too small
      cores: [0.5, 1]         # optional: CPU quota of each origin (cgroup), x origins
      probe: {runtime: 3, iodepth: 4, numjobs: 1, size: 64M}
      gateway: {async: false, buffers_maxbsz: 16M}
    backends:
      tmpfs:  {size: [1G]}
      cephfs: {layouts: [{stripe_unit: 4M, stripe_count: 1, object_size: 4M}], pools: [replicated, ec2+1]}
      rados:  {layouts: [...], pools: [rep1, {ec: 2+1}]}
    exclude: [{backend: rados, pool: ec2+1, stripe_count: 4}]   # drop matching cells
    include: [{backend: cephfs, stripe_unit: 64K, stripe_count: 1, object_size: 64K, pool: rep1}]

A cell that does not set streams, size_class or cores leaves them out of its settings, so
its id is the one it had before these dimensions existed.

Expansion is the Cartesian product per backend (asv's iter_matrix: product, then exclude, then
include). Validation follows Ceph's own rules and happens before anything touches a cluster;
every error is one line naming the file, the cell (or the entry) and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xcbench.cell import Cell
from xcbench.errors import XcbError
from xcbench.figures.reference import check_reference
from xcbench.matrix import sections
from xcbench.matrix.expand import _finish, cell_id, expand
from xcbench.matrix.schema import STRIPE_ALIGN, _Errors, check_cells, check_layout, check_top, parse_pool
from xcbench.matrix.validate import ClusterFacts, ClusterView, scale_ec_pool, validate
from xcbench.system.userfiles import check_strings, read_yaml

__all__ = ["STRIPE_ALIGN", "ClusterFacts", "ClusterView", "Matrix", "cell_id", "check_layout", "check_lines",
           "expand", "load_matrix", "parse_pool", "scale_ec_pool", "validate"]


@dataclass
class Matrix:
    path: str
    name: str
    description: str
    cells: list[Cell]
    raw: dict[str, Any]
    scaled_ec: dict[str, str] = field(default_factory=dict)  # "ec8+3" -> "ec2+1" (--scale-ec)
    reference: dict[str, Any] | None = None  # the published table reproduced (xcbench.figures.reference)

    def cell(self, key: str) -> Cell:
        """A cell by id, id prefix or label."""
        hits = [c for c in self.cells if c.id.startswith(key) or c.label == key]
        if len(hits) != 1:
            what = "no cell" if not hits else f"{len(hits)} cells"
            raise XcbError(f"{self.path}: {what} matches {key!r} (see `xcbench matrix show`)")
        return hits[0]

    def manifest(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "raw": self.raw, "scaled_ec": self.scaled_ec,
                "reference": self.reference,
                "cells": {c.id: {"label": c.label, "direction": c.direction, "security": c.security,
                                 **c.settings()}
                          for c in self.cells}}


def load_matrix(path: str | Path, cluster: ClusterView | None = None, *, facts: ClusterFacts | None = None,
                scale_ec: bool = False) -> Matrix:
    """Parse, expand and validate a matrix. Raises XcbError (first error, one line); the
    error's ``lines`` attribute holds every error. SectionNotRegistered (a program error) when
    a package that checks a part of the matrix was not imported (xcbench.matrix.sections)."""
    sections.require_all()
    path = str(path)
    raw = read_yaml(path)  # xcbench.system.userfiles: unreadable/non-UTF-8/bad YAML -> one line
    check_strings(raw, path)  # a matrix is data: no control character or line break anywhere
    errors = _Errors(path)
    cells = expand(raw, path, errors)
    check_cells(errors, cells)
    check_top(errors, raw, "hosts")
    check_top(errors, raw, "prometheus")
    reference = check_reference(raw, cells, errors)
    errors.raise_if_any()
    if not cells:
        raise XcbError(f"{path}: top level: cells: the matrix expands to no cells")
    if facts is None and cluster is not None:
        facts = ClusterFacts.of(cluster)
    scaled: dict[str, str] = {}
    if facts is not None:
        if scale_ec:
            new = []
            for c in cells:
                if c.pool and c.pool.kind == "erasure":
                    p = scale_ec_pool(c.pool, facts)
                    if p != c.pool:
                        scaled[c.pool.label] = p.label
                        c = _finish(replace(c, pool=p))
                new.append(c)
            cells = list({c.id: c for c in new}.values())
        validate(cells, facts, errors)
        errors.raise_if_any()
    name = raw.get("name") or Path(path).stem
    return Matrix(path, str(name), str(raw.get("description") or ""), cells, raw, scaled, reference)


def check_lines(path: str | Path, **kw: Any) -> list[str]:
    """Every error of a matrix as one line each ([] when it is valid)."""
    try:
        load_matrix(path, **kw)
    except XcbError as e:
        return list(getattr(e, "lines", [str(e)]))
    return []
