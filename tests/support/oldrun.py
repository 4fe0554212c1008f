"""A run as an xcbench before the tables' version wrote it (tables' version 1), made from one in
today's shape: what xcbench.store.upgrade must bring back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

# columns today's producers write that the oldest supported runs lack
DROPPED = {"transfers": ["direction"], "campaigns": ["direction", "security"],
           "verdicts": ["direction"], "baseline": ["direction", "gateway", "client"]}


def old_shape(current: Path, dest: Path | None = None) -> Path:
    """The run at ``current`` (finalized) in the old shape: no tables_version in the manifest,
    no direction on any row, campaigns without security, the baseline naming its gateway
    ``host`` only. Copied to ``dest`` when given, else changed in place."""
    old = current
    if dest is not None:
        old = dest
        shutil.copytree(current, old)
    m = json.loads((old / "manifest.json").read_text())
    m.pop("tables_version", None)
    (old / "manifest.json").write_text(json.dumps(m))
    for table, cols in DROPPED.items():
        pq = old / f"{table}.parquet"
        if pq.exists():
            pd.read_parquet(pq).drop(columns=cols, errors="ignore").to_parquet(pq, index=False)
    return old
