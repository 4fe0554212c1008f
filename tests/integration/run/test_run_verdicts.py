"""A real run of the demo matrix's cells (the session's ``demo_run``: layouts/quick.yaml with
short levels, tests/support/demorun.py) on the mini cluster,
checked for what a correct attribution must say, whatever this machine's speeds are:

- the tmpfs cell is never storage-bandwidth or storage-iops (it has no storage);
- a point whose recorded evidence is below every ceiling, with an idle host and no role at its
  limit, is inconclusive (the condition read from the evidence, not from the rules' code);
- the EC 2+1 cells wrote ~1.5 raw bytes per logical byte, the size-3 replicated ones ~3.
"""

from __future__ import annotations

import json

import pytest

from xcbench.analysis.verdicts import rules

pytestmark = pytest.mark.integration


def idle(ev: dict) -> bool:
    """Below every ceiling, host idle, no role at its limit, no client starvation, no sure
    growth, no EC cost: nothing any rule names (each figure as recorded in the evidence)."""
    util = ev.get("utilisation") or {}
    if any(v >= rules.NEAR for v in util.values()):
        return False
    if (ev.get("host_busy") or 0) >= rules.NEAR:
        return False
    waits = ev.get("host_cpu_waits") or {}  # the chain's tasks wait and more transfers gain little
    if waits.get("chain") and waits.get("low_efficiency"):
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


def test_the_demo_matrix_gets_the_verdicts_a_correct_attribution_must_give(demo_run):
    run = demo_run.run
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
            if c["figure"] == "otherwise":  # the other side of the figure that decided the verdict
                assert c["otherwise_of"] == row["verdict"] != c["rule"], what
                assert any(d.get("rule") == row["verdict"] for d in ev["borderline_candidates"]), what
                continue
            assert c["low"] <= c["threshold"] <= c["high"], what
        if cell["backend"] != "tmpfs" and row["direction"] == "write":
            rho, expected = ev.get("raw_per_logical"), ev.get("raw_expected")
            if "ec" in str(ev.get("pool")):
                assert expected == 1.5, what  # EC 2+1: (k + m) / k
            assert rho == pytest.approx(expected, rel=0.12), f"raw/logical {rho}: {what}"
    print("\n" + "\n".join(seen) + f"\n{idle_points} point(s) below every ceiling on an idle host")
