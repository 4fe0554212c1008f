"""Gateway CPU per GB in a real run: every level's campaign row carries the gateway's CPU
seconds (origins and redirector apart, and summed) per GB moved, and `plan --calibrate` sizes
gateways for 100 Gb/s from it."""

from __future__ import annotations

import json
import textwrap

import pytest

from xcbench.cli import main
from xcbench.matrix import ClusterFacts, load_matrix
from xcbench.run.runner import RunOptions, run_matrix

pytestmark = pytest.mark.integration

MATRIX = """
name: gwcpu
defaults: {concurrency: [2], files: 8, file_size: 8M, origins: [1, 2], modes: [push, tpc-http],
           campaign: {timeout: 60, retries: 1}}
backends: {tmpfs: {size: 256M}}
exclude: [{origins: 2, mode: tpc-http}]  # a redirector's XrdHttp has no TPC handler (COPY: 400)
"""


def test_every_level_records_gateway_cpu_per_gb_and_plan_sizes_from_it(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent(MATRIX))
    opts = RunOptions(store=tmp_path / "results", name="gwcpu", baseline=False, probes=False,
                      report=False, progress=False, telemetry="host")
    run = run_matrix(load_matrix(path, facts=ClusterFacts()), None, opts)
    camp = run.table("campaigns")
    assert len(camp) == 3 and (camp["failed"] == 0).all()
    assert (camp["gateway_cpu_s"].astype(float) > 0).all()
    assert (camp["security"] == "none").all()
    per_gb = camp["gateway_cpu_s"].astype(float) / (camp["bytes"].astype(float) / 1e9)
    assert (camp["gateway_cpu_s_per_gb"].astype(float) - per_gb).abs().max() < 1e-9
    settings = {cid: c["settings"] for cid, c in run.manifest["cells"].items()}
    for r in camp.to_dict("records"):
        per = {o["origin"]: o for o in json.loads(r["gateway_cpu_origins"])}
        origins = settings[r["cell_id"]]["origins"]
        assert set(per) == ({"xcb"} if origins == 1 else {"redirector", "o1", "o2"})
        assert sum(o["cpu_s"] for o in per.values()) == pytest.approx(r["gateway_cpu_s"])
        if r["mode"] == "push":
            assert r["source_cpu_s_per_gb"] is None or r["source_cpu_s_per_gb"] != r["source_cpu_s_per_gb"]
        else:  # a TPC level: the source gateway served the pulls
            assert float(r["source_cpu_s_per_gb"]) > 0
        if r["mode"] == "push":
            # the origins wrote every byte the campaign moved into them (and a little log)
            moved = sum(o["bytes"] for k, o in per.items() if k != "redirector")
            assert r["bytes"] <= moved < 1.2 * r["bytes"]
    from xcbench.analysis.report.document import render_report
    md = render_report([run.path], fmt="md").read_text()
    assert "## Gateway CPU per GB" in md and "| push | none | write |" in md and "TPC source core-s/GB" in md
    assert main(["plan", "--rate", "100Gb/s", "--calibrate", str(run.path), "--calibrate-osds", "3"]) == 0
    out = capsys.readouterr().out
    assert "no gateway CPU measured" not in out
    assert "GATEWAYS FOR 100 Gb/s" in out and "measured read-back/push/none" in out
    assert "measured read-back/tpc/none" in out and "cells used: gwcpu cell" in out
