"""Every benchmark script starts on a fresh clone: it compiles, and `--help` imports everything
it needs and exits 0 (a benchmark that fails at its first import wastes the hour it was given)."""

from __future__ import annotations

import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "benchmarks").glob("bench_*.py"))


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 5, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_compiles(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "x.pyc"), doraise=True)


def test_every_benchmark_answers_help():
    # all at once: each spends its second importing pandas & co., not waiting on the others
    procs = {s.name: subprocess.Popen([sys.executable, str(s), "--help"], cwd=ROOT, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for s in SCRIPTS}
    failed = {}
    for name, p in procs.items():
        out, err = p.communicate(timeout=120)
        if p.returncode != 0 or "usage:" not in out:
            failed[name] = (p.returncode, err.strip().splitlines()[-3:])
    assert not failed, failed


def test_the_gfal2_cli_starts():
    # Debian's gfal2-util scripts fall back to /usr/bin/python (python-is-python3, `make setup`)
    # when the python on PATH cannot import gfal2: without it every gfal-* exits 127
    out = subprocess.run(["gfal-copy", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "gfal2" in out.stdout + out.stderr, (out.returncode, out.stderr)
