"""The report's gateway CPU table: median core-s/GB per mode, security and direction, with the
ratio to security none of the same mode."""

from __future__ import annotations

import pandas as pd

from xcbench.analysis.report.gateway_cpu_table import section


def test_rows_per_mode_and_security_with_the_ratio_to_none():
    camp = pd.DataFrame([
        {"mode": "push", "security": "none", "direction": "write", "gateway_cpu_s_per_gb": 1.0},
        {"mode": "push", "security": "none", "direction": "write", "gateway_cpu_s_per_gb": 2.0},
        {"mode": "push", "security": "tls", "direction": "write", "gateway_cpu_s_per_gb": 3.0},
        {"mode": "tpc-http", "security": "tls", "direction": "write", "gateway_cpu_s_per_gb": 4.0},
        {"mode": "push", "security": None, "direction": "write", "gateway_cpu_s_per_gb": None},
    ])
    rows = {(r["mode"], r["security"]): r for r in section(camp)}
    assert set(rows) == {("push", "none"), ("push", "tls"), ("tpc-http", "tls")}
    assert rows[("push", "none")]["s_per_gb"] == "1.5" and rows[("push", "none")]["n"] == 2
    assert rows[("push", "tls")]["vs_none"] == "2.00×"
    assert rows[("tpc-http", "tls")]["vs_none"] == "–"  # no tpc-http none to compare with


def test_a_run_without_the_column_has_no_table():
    assert section(pd.DataFrame([{"mode": "push", "rate": 1.0}])) == []
    assert section(None) == []
