"""fio's own parser over a job file (fio --parse-only): a rendered job is one fio accepts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xcbench.system import proc


def parse_only(tmp_path: Path, text: str) -> None:
    """fio itself accepts every option of the rendered job file."""
    if shutil.which("fio") is None:
        pytest.skip("fio not installed")
    jf = tmp_path / "job.fio"
    jf.write_text(text)
    cp = proc.run(["fio", "--parse-only", str(jf)], check=False)
    assert cp.returncode == 0, cp.stdout + cp.stderr


