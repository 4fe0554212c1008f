"""A SampleIndex of storage hosts' Prometheus rows built from the recorded answers."""

from __future__ import annotations

import json

import pandas as pd

from tests.support.promserver import ANSWERS
from xcbench.analysis.verdicts.samples import SampleIndex
from xcbench.telemetry import promqueries as pq


def _samples(hosts: pq.HostMap, extra: list[dict] = ()) -> SampleIndex:
    rows = [r for name in pq.QUERIES for r in pq.rows(name, ANSWERS["range"][name]["data"]["result"], hosts, 0.0)]
    rows += list(extra)
    df = pd.DataFrame([{**r, "cell_id": "c", "labels": json.dumps(r["labels"], sort_keys=True)} for r in rows])
    return SampleIndex(df)


