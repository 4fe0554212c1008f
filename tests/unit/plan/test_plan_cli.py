"""`xcbench plan` end to end: formats, flags that change assumptions and specs."""

import json

import pytest

from xcbench.cli import main
from xcbench.plan.spec import Assumptions


def plan_json(capsys, *argv):
    assert main(["plan", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_text_default(capsys):
    assert main(["plan", "--target", "ska-aa4"]) == 0
    out = capsys.readouterr().out
    assert "target ska-aa4: 200 Gb/s (25 GB/s)" in out
    assert "400 PB (355 PiB) per year" in out
    for d in Assumptions.describe():
        assert d["flag"] in out  # every assumption is printed with its flag
    assert "GATEWAY NIC BUDGET" in out


def test_html_report(tmp_path, capsys):
    out = tmp_path / "plan.html"
    assert main(["plan", "--target", "uscms-t2", "--format", "html", "--out", str(out)]) == 0
    html = out.read_text()
    assert "<h2>Assumptions</h2>" in html and "data:image/png;base64," in html
    assert "ceil(target x headroom / per-gateway rate) + spares" in html  # formulas are shown
    assert "--nic-saturation" in html


def test_flags_change_the_plan(capsys):
    base = plan_json(capsys, "--rate", "100Gb/s")
    rb = plan_json(capsys, "--rate", "100Gb/s", "--checksum", "read-back")
    g0, g1 = base["columns"][0]["values"]["gateways_needed"], rb["columns"][0]["values"]["gateways_needed"]
    # tier1 example gateway: 2 x 25 Gb/s x 0.7 = 35 Gb/s; writes only. On the fly: 125/35 -> 4 + 1.
    # Read-back doubles the bytes in: 125/17.5 -> 8 + 1.
    assert (g0, g1) == (5, 9)
    sat = plan_json(capsys, "--rate", "100Gb/s", "--nic-saturation", "1.0", "--gateway-spares", "0")
    assert sat["columns"][0]["values"]["gateways_needed"] == 3  # 125 / 50 = 2.5 -> 3
    changed = {a["flag"]: a for a in sat["assumptions"]}
    assert changed["--nic-saturation"]["changed"] and not changed["--headroom"]["changed"]
    big = plan_json(capsys, "--rate", "100Gb/s", "--set", "gateway.speed=100Gb/s")
    # 2 x 100 Gb/s x 0.7 = 140 Gb/s of NIC, but CPU: 32 cores / (1/1 GB/s move + 1/2 GB/s adler32)
    # = 21.3 GB/s = 170.7 Gb/s x 0.7 = 119.5 Gb/s binds: 125 / 119.5 = 1.05 -> 2, + 1 = 3.
    assert big["columns"][0]["gateway"]["binding"] == "CPU"
    assert big["columns"][0]["values"]["gateways_needed"] == 3
    rep = plan_json(capsys, "--rate", "100Gb/s", "--cluster-spec", "tier1-hdd-rep3")
    assert rep["cluster"]["protection"] == "rep3"


def test_list(capsys):
    assert main(["plan", "--list"]) == 0
    out = capsys.readouterr().out
    assert "hl-lhc-t1-flex" in out and "1.22 Tb/s" in out and "tier1-hdd-ec8+3" in out


@pytest.mark.parametrize("columns", ["60", "80", "120"])
def test_the_text_plan_gives_its_answer_first_within_columns(capsys, monkeypatch, columns):
    """The gateways, storage hosts and OSDs the target needs come first, and no line is wider
    than $COLUMNS (a table wraps its widest column, a long line folds under its first word)."""
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["plan", "--target", "ska-aa4-mid", "--cluster-spec", "tier1-hdd-ec8+3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("xcbench plan: ska-aa4-mid at 100 Gb/s")
    assert any("gateways needed" in ln for ln in lines[1:4]) and any("OSDs needed" in ln for ln in lines[2:10])
    over = [ln for ln in lines if len(ln) > int(columns) and len(ln.split()) > 1]  # a URL may not fold
    assert over == []
