"""plan --calibrate sizes gateways from a run's measured CPU per GB: per security mode, with
the cells it used, the datasheet figure and the US-CMS reference beside, and a warning for a
cell whose rate something else capped."""

from __future__ import annotations

import json

import pytest

from xcbench.cli import main
from xcbench.plan.calibrate import load_calibration
from xcbench.store.rundir import RunDir


def _run(tmp_path):
    run = RunDir.create(tmp_path, name="sec")
    base = {"backend": "tmpfs", "origins": 1, "mode": "push"}
    run.set_cell("N", label="tmpfs o1 push", settings=base)
    run.set_cell("T", label="tmpfs o1 push tls", settings={**base, "security": "tls"})
    rows = [("N", 4, 1.0, "none"), ("N", 8, 1.2, "none"), ("T", 4, 1.8, "tls"), ("T", 8, 2.0, "tls")]
    run.append("campaigns", [{"cell_id": c, "concurrency": k, "repeat": 0, "mode": "push", "rate": 5e8,
                              "bytes": 10**9, "finished": 4, "failed": 0, "direction": "write",
                              "gateway_cpu_s_per_gb": v, "security": s} for c, k, v, s in rows])
    run.append("verdicts", [{"cell_id": "T", "concurrency": 8, "verdict": "host-cpu", "reason": "r",
                             "evidence": "{}", "direction": "write"}])
    run.finalize()
    return run


def test_calibration_keeps_security_modes_apart_and_marks_capped_cells(tmp_path):
    cal = load_calibration([_run(tmp_path).path], num_osds=3)
    got = {(e["mode"], e["security"]): e for e in cal.gateway_cpu}
    assert got[("push", "none")]["s_per_gb"] == pytest.approx(1.1)  # median over its levels
    assert got[("push", "tls")]["s_per_gb"] == pytest.approx(1.9)
    assert got[("push", "tls")]["capped"] == ["c=8 host-cpu"] and got[("push", "none")]["capped"] == []
    assert "c=4,8" in got[("push", "none")]["from"]


def test_plan_prints_gateways_and_cores_for_100g(tmp_path, capsys):
    run = _run(tmp_path)
    args = ["plan", "--rate", "100Gb/s", "--force", "--calibrate", str(run.path), "--calibrate-osds", "3",
            "--cluster-spec", "tier1-hdd-ec8+3", "--mode", "push"]
    assert main([*args, "--format", "json"]) == 0
    p = json.loads(capsys.readouterr().out)
    sz = p["gateway_sizing"]
    rows = {r["what"]: r for r in sz["rows"]}
    none = rows["measured read-back/push/none"]
    # 12.5 GB/s x 1.1 s/GB / 0.7 = 19.6 -> 20 cores; the tier1 gateway spec has 32 cores -> 1
    assert none["cores"] == 20 and none["gateways"] == 1
    assert rows["measured read-back/push/tls"]["cores"] == 34  # 12.5 x 1.9 / 0.7 = 33.9
    assert any(not r["measured"] for r in sz["rows"])  # the datasheet figure beside
    assert "64 cores" in sz["reference"] and "one origin could not reach 100 Gb/s" in sz["reference"]
    assert len(sz["warnings"]) == 1 and "cell T" in sz["warnings"][0] and "host-cpu" in sz["warnings"][0]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "GATEWAYS FOR 100 Gb/s" in out and "cells used: sec cell N" in out
    assert "warning: sec cell T (tmpfs o1 push tls): rate capped by c=8 host-cpu" in out
    assert "no gateway CPU measured" not in out


def test_md_and_html_plans_carry_the_sizing_and_rtt(tmp_path, capsys):
    run = _run(tmp_path)
    for fmt in ("md", "html"):
        out = tmp_path / f"p.{fmt}"
        assert main(["plan", "--rate", "100Gb/s", "--force", "--calibrate", str(run.path), "--calibrate-osds", "3",
                     "--rtt", "40", "--format", fmt, "--out", str(out)]) == 0
        text = out.read_text()
        assert "GATEWAYS FOR 100 Gb/s" in text and "RTT ON PAPER" in text and "rate capped by" in text


def test_plan_security_sizes_its_own_gateway_from_that_modes_cpu(tmp_path, capsys):
    run = _run(tmp_path)
    args = ["plan", "--rate", "100Gb/s", "--force", "--calibrate", str(run.path), "--calibrate-osds", "3",
            "--cluster-spec", "tier1-hdd-ec8+3", "--mode", "push", "--checksum", "read-back",
            "--format", "json"]
    notes = {}
    for sec in ("none", "tls", "scitokens"):
        assert main([*args, "--security", sec]) == 0
        notes[sec] = json.dumps(json.loads(capsys.readouterr().out))
    assert "1.1 core-s/GB measured (read-back, push, security none" in notes["none"]
    assert "1.9 core-s/GB measured (read-back, push, security tls" in notes["tls"]
    assert "no gateway CPU measured with security scitokens" in notes["scitokens"]
    with pytest.raises(SystemExit) as e:  # argparse's one line, exit 2
        main([*args[:-2], "--security", "kerberos"])
    assert e.value.code == 2
    assert "--security: invalid choice: 'kerberos'" in capsys.readouterr().err
