"""The Grafana dashboard kept in docs/grafana, as the tests read it."""

from __future__ import annotations

import json
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "xcbench.json"


def load() -> dict:
    return json.loads(DASHBOARD.read_text())


def exprs(d: dict) -> list[str]:
    return [t["expr"] for p in d["panels"] for t in p["targets"]]


