"""A real run of the demo matrix's cells (layouts/quick.yaml, shortened) on the mini cluster,
checked for what a correct attribution must say, whatever this machine's speeds are:

- the tmpfs cell is never storage-bandwidth or storage-iops (it has no storage);
- a point whose recorded evidence is below every ceiling, with an idle host and no role at its
  limit, is inconclusive (the condition read from the evidence, not from the rules' code);
- the EC 2+1 cells wrote ~1.5 raw bytes per logical byte, the size-3 replicated ones ~3.
"""

from __future__ import annotations

import json

import pytest
import yaml

from xcbench.analysis import rules
from xcbench.commands.run import load_run_matrix
from xcbench.layouts import __file__ as _layouts_init
from xcbench.run.runner import RunOptions, run_matrix

pytestmark = pytest.mark.integration
QUICK = __import__("pathlib").Path(_layouts_init).parent / "quick.yaml"


def shortened(tmp_path):
    """quick.yaml's cells with short levels, probes and files (the same cells and pools)."""
    m = yaml.safe_load(QUICK.read_text())
    d = m["defaults"]
    d["campaign"] = {"duration": {"min": "5s", "max": "10s"},
                     "steady": {"rule": "autoterm", "window": "5s", "points": 5, "tolerance": "15%"}}
    d["probe"] = {**d["probe"], "runtime": 1, "size": "16M"}
    d["file_size"], d["files"] = "8M", 12
    m["backends"]["tmpfs"]["size"] = ["512M"]
    p = tmp_path / "quick-short.yaml"
    p.write_text(yaml.safe_dump(m))
    return p


def idle(ev: dict) -> bool:
    """Below every ceiling, host idle, no role at its limit, no client starvation, no sure
    growth, no EC cost: nothing any rule names (each figure as recorded in the evidence)."""
    util = ev.get("utilisation") or {}
    if any(v >= rules.NEAR for v in util.values()):
        return False
    if (ev.get("host_busy") or 0) >= rules.NEAR:
        return False
    if any(r.get("saturated") for r in (ev.get("roles") or {}).values()):
        return False
    if max(ev.get("starved_frac") or 0, ev.get("gateway_starved") or 0) >= rules.STARVED:
        return False
    hi, r, low = ev.get("best_higher_rate"), ev.get("rate"), ev.get("best_higher_growth_low")
    if hi and r and (low if low is not None else hi / r) >= rules.SCALING:
        return False
    if ev.get("ec_ratio") is not None and ev["ec_ratio"] <= rules.NEAR:
        return False
    return not ev.get("link_use")


def test_the_demo_matrix_gets_the_verdicts_a_correct_attribution_must_give(ceph_cluster, tmp_path):
    opts = RunOptions(out=tmp_path / "results", name="quick-short", baseline=False, report=False)
    run = run_matrix(load_run_matrix(shortened(tmp_path), ceph_cluster, opts), ceph_cluster, opts)
    m = json.loads((run.path / "manifest.json").read_text())
    assert {c["status"] for c in m["cells"].values()} == {"complete"}, \
        {c["label"]: c.get("error") for c in m["cells"].values()}
    cells = {cid: c for cid, c in m["cells"].items()}
    assert {c["backend"] for c in cells.values()} == {"tmpfs", "cephfs", "rados"} and len(cells) == 6
    v = run.table("verdicts")
    assert len(v) == 12  # 6 cells x 2 levels
    seen, idle_points = [], 0
    for row in v.to_dict("records"):
        cell, ev = cells[row["cell_id"]], json.loads(row["evidence"])
        what = f"{cell['label']} c={row['concurrency']}: {row['verdict']}: {row['reason']}"
        seen.append(what)
        assert row["verdict"] in rules.VERDICTS, what
        if cell["backend"] == "tmpfs":
            assert not row["verdict"].startswith("storage-"), what
        if idle(ev):
            assert row["verdict"] == "inconclusive", what
            idle_points += 1
        for c in ev.get("borderline_candidates") or ():  # within its noise: the interval holds it
            assert c["low"] <= c["threshold"] <= c["high"], what
        if cell["backend"] != "tmpfs" and row["direction"] == "write":
            rho, expected = ev.get("raw_per_logical"), ev.get("raw_expected")
            if "ec" in str(ev.get("pool")):
                assert expected == 1.5, what  # EC 2+1: (k + m) / k
            assert rho == pytest.approx(expected, rel=0.12), f"raw/logical {rho}: {what}"
    print("\n" + "\n".join(seen) + f"\n{idle_points} point(s) below every ceiling on an idle host")
