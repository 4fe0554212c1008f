"""A matrix written from text and loaded, for the matrix tests: one tmpfs backend, two levels."""

from __future__ import annotations

import textwrap
from pathlib import Path

from xcbench.matrix import Matrix, load_matrix

TMPFS = """
name: t
defaults: {concurrency: [1, 2], file_size: 4M, files: 4}
backends:
  tmpfs: {size: 1G}
"""


def load_text(tmp_path: Path, extra: str = "", base: str = TMPFS) -> Matrix:
    """``base`` and ``extra`` (dedented) as tmp_path/m.yaml, loaded."""
    p = tmp_path / "m.yaml"
    p.write_text(textwrap.dedent(base) + textwrap.dedent(extra))
    return load_matrix(p)
