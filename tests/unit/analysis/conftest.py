"""The glance tests' synthetic run (every mixed cell at levels 2 and 8, 24 files), made once for
the package: they only read it."""

from __future__ import annotations

import pytest

from tests.support.synthrun import make_run, mixed_cells


@pytest.fixture(scope="package")
def glance_run(tmp_path_factory):
    """(the run's path, the known answer of each cell)."""
    cells = mixed_cells()
    for c in cells:
        c.concurrency, c.files = (2, 8), 24
    return make_run(tmp_path_factory.mktemp("glance"), cells)
