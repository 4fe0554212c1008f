"""Cell fingerprints of real runs: two runs of one tiny tmpfs matrix (each with its own
gateway ports and temporary paths) have equal fingerprints, and changing one gateway tunable
makes `compare` flag exactly that field."""

from __future__ import annotations

import textwrap

import pytest

from xcbench.analysis.verdicts.compare import compare_data
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.matrix import ClusterFacts, load_matrix
from xcbench.run.runner import RunOptions, run_matrix

pytestmark = pytest.mark.integration

MATRIX = """
name: fp
defaults: {{concurrency: [1], files: 2, file_size: 1M, gateway: {{buffers_maxbsz: {maxbsz}}}}}
backends: {{tmpfs: {{size: 64M}}}}
"""


def _run(tmp_path, name, maxbsz):
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(MATRIX.format(maxbsz=maxbsz)))
    matrix = load_matrix(path, facts=ClusterFacts())
    opts = RunOptions(store=tmp_path / "results", name=name, baseline=False, probes=False,
                      report=False, progress=False, telemetry="host")
    return RunData(run_matrix(matrix, None, opts).path)


def test_same_matrix_same_fingerprint_and_one_tunable_named(tmp_path):
    a, b = _run(tmp_path, "a", "16M"), _run(tmp_path, "b", "16M")
    fa = {cid: c["fingerprint"] for cid, c in a.manifest["cells"].items()}
    fb = {cid: c["fingerprint"] for cid, c in b.manifest["cells"].items()}
    assert fa.keys() == fb.keys() and len(fa) == 1
    cid = next(iter(fa))
    assert fa[cid]["configs"] != fb[cid]["configs"]  # rendered configs differ (ports, paths) ...
    assert fa[cid]["digest"] == fb[cid]["digest"]  # ... the measurement's definition does not
    rows = compare_data(a, b)
    assert rows and not any(r["config_changed"] for r in rows)
    c = _run(tmp_path, "c", "8M")
    # the tunable is part of the cell's settings (its id changes): compare pairs it by label
    rows = compare_data(a, c)
    assert rows and all(r["config_fields"] == ["gateway.tunables.buffers_maxbsz"] for r in rows)
    assert all(r["only_in"] == "" for r in rows)
