"""RTT on paper: per-stream ceiling = window / RTT, streams and origins for the target, the
window from the flag, a run's TCP audit or fasterdata's tier, and the US-CMS figures beside."""

from __future__ import annotations

import json

import pytest

from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.plan.rtt import buffers, parse_rtts, rtt_section
from xcbench.store.rundir import RunDir

MiB = 1 << 20


def test_per_stream_ceiling_streams_and_origins():
    sec = rtt_section([5, 120], 12.5e9, {"rmem": 16 * MiB, "wmem": 4 * MiB, "from": "x"})
    five, long = sec["rows"]
    assert sec["window"] == 4 * MiB  # the smaller of the two buffers bounds the window
    assert five["per_stream"] == pytest.approx(4 * MiB / 0.005)  # 839 MB/s
    assert five["streams"] == 15  # 12.5e9 / 838.9e6 = 14.9
    assert long["per_stream"] == pytest.approx(4 * MiB / 0.120)
    assert long["streams"] == 358  # 12.5e9 / 34.95e6 = 357.6
    assert long["bdp"] == pytest.approx(12.5e9 * 0.120)
    # no measured per-origin rate: US-CMS's 25 Gb/s per origin -> 4 origins for 100 Gb/s
    assert long["origins"] == 4 and long["streams_per_origin"] == 90
    assert "one origin could not reach 100 Gb/s" in sec["reference"]["lines"]
    measured = rtt_section([5], 12.5e9, {"rmem": MiB, "wmem": MiB, "from": "x"}, 1e9, "run r")
    assert measured["rows"][0]["origins"] == 13 and measured["per_origin_from"] == "run r"


@pytest.mark.parametrize("bad", ["0", "-5", "abc", "20000", "5,,"])
def test_a_bad_rtt_names_the_flag(bad):
    with pytest.raises(XcbError, match="--rtt"):
        parse_rtts([bad])


def test_rtts_parse_lists_and_units():
    assert parse_rtts(["120", "5,40ms"]) == [5.0, 40.0, 120.0]


def test_window_from_a_runs_tcp_audit_else_fasterdata():
    audit = {"checks": [{"key": "net.ipv4.tcp_rmem", "value": "4096 131072 6291456"},
                        {"key": "net.ipv4.tcp_wmem", "value": "4096 16384 4194304"}]}
    b = buffers(None, [("r1", audit)], 25e9 / 8)
    assert (b["rmem"], b["wmem"]) == (6291456, 4194304) and "TCP audit of run r1" in b["from"]
    f = buffers(None, [("r1", {})], 100e9 / 8)
    assert f["rmem"] == 1073741824 and "fasterdata's 100 Gb/s tier" in f["from"]
    assert buffers(8 * MiB, [("r1", audit)], 1e9)["from"] == "--tcp-window-max"


def test_plan_cli_prints_the_rtt_section_from_a_calibrate_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # the phrases read here on one line each (80 folds them)
    run = RunDir.create(tmp_path, name="r")
    run.state.extra["tcp_audit"] = {"checks": [{"key": "net.ipv4.tcp_rmem", "value": "4096 131072 4194304"},
                                               {"key": "net.ipv4.tcp_wmem", "value": "4096 16384 4194304"}]}
    run.finalize()
    assert main(["plan", "--rate", "100Gb/s", "--rtt", "5,120", "--force", "--calibrate", str(run.path),
                 "--calibrate-osds", "3"]) == 0
    out = capsys.readouterr().out
    assert "RTT ON PAPER" in out and "window 4 MiB (the TCP audit of run r" in out
    assert "US-CMS reference (RTT 5-120 ms)" in out and "a single server capped near 260 Gb/s" in out
    assert main(["plan", "--rate", "100Gb/s", "--rtt", "40", "--tcp-window-max", "8M", "--format", "json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["rtt"]["rows"][0]["streams"] == 60  # 12.5e9 / (8 MiB / 0.04 s) = 59.6
    assert main(["plan", "--rate", "100Gb/s", "--rtt", "40", "--tcp-window-max", "lots"]) == 2
    assert "--tcp-window-max" in capsys.readouterr().err
