"""One real run of the demo matrix's shape, shared by the tests that read a whole run.

layouts/quick.yaml's six cells (tmpfs, CephFS and RADOS; replicated and EC 2+1 pools) with short
time-based levels, 1-s fio probes, level probes steady over 2 s and a short iperf3 baseline, run
as a user runs it: ``xcbench run --json`` in a subprocess. test_run_verdicts checks what a correct
attribution must say of it, test_report_glance the closing table and the report's first screen,
test_run the run's records end to end. One run instead of three keeps `make test` under its 20
minutes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from xcbench.matrix import load_matrix
from xcbench.store.rundir import RunDir

NAME = "quick-shape"
# the iperf3 baseline at the levels' stream counts, 1 s a point: the sweep's 16 points of 2 s
# (1-32 streams) add 30 s and nothing the tests read
BASELINE = ["--baseline-streams", "1,4", "--baseline-seconds", "1"]


def demo_shape(directory: Path) -> Path:
    """quick.yaml's cells and pools, with short levels, probes and files."""
    m = yaml.safe_load((files("xcbench.layouts") / "quick.yaml").read_text())
    d = m["defaults"]
    # levels steady over 3 s (3 points of 1 s), at least 3 s and at most 6 s: the tests read each
    # level's rate and window, not a precise figure
    d["campaign"] = {"duration": {"min": "3s", "max": "6s"},
                     "steady": {"rule": "autoterm", "window": "3s", "points": 3, "tolerance": "15%"}}
    # level probes: steady over 2 s, not 3 (xcbench.probe.levels.STEADY): the 16 level probes were
    # half of the run; the tests read the verdicts' consistency, not a ceiling's precision
    # no sequential read job: every cell writes (push) and a write point is held against the write
    # jobs only (the self-test's probe leaves it out for the same reason)
    d["probe"] = {**d.get("probe", {}), "runtime": 1, "size": "16M", "ss_dur": 2,
                  "patterns": ["randwrite", "write"]}
    d["file_size"], d["files"] = "8M", 12
    m["backends"]["tmpfs"]["size"] = ["512M"]
    m["name"] = NAME
    p = directory / f"{NAME}.yaml"
    p.write_text(yaml.safe_dump(m))
    return p


@dataclass
class DemoRun:
    run: RunDir
    closing: dict[str, Any]  # `xcbench run --json`'s closing table
    stderr: str  # the progress view
    cells: int
    levels: list[int]
    matrix: Path


def run_demo_shape(ceph_cluster: Any, directory: Path) -> DemoRun:
    path = demo_shape(directory)
    shape = load_matrix(path)
    cp = subprocess.run([sys.executable, "-m", "xcbench", "run", str(path), "-c", str(ceph_cluster.conf),
                         "--store", str(directory / "results"), "--run-name", NAME, "--json",
                         *BASELINE],
                        capture_output=True, text=True, timeout=900)
    assert cp.returncode == 0, cp.stderr[-3000:]
    return DemoRun(RunDir.open(directory / "results" / NAME), json.loads(cp.stdout), cp.stderr,
                   len(shape.cells), sorted({c for x in shape.cells for c in x.concurrency}), path)
