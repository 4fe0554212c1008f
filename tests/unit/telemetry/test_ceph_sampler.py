"""CephSampler's parsing on `ceph` JSON answers recorded from a real mini cluster (tests/data/ceph/:
4 x 4 MiB objects written to xcb-rep1 with librados, Ceph 16.2.15 on 3 bluestore OSDs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xcbench.errors import XcbError
from xcbench.telemetry import CephSampler, SampleGap

DATA = Path(__file__).resolve().parents[2] / "data" / "ceph"
POOL = (DATA / "pool.txt").read_text().strip()
ANSWERS = {"osd pool stats": "osd_pool_stats", "df": "df_detail", "osd perf": "osd_perf",
           "health": "health", "pg stat": "pg_stat"}


class Recorded:
    """A cluster handle without a conf: the sampler asks its mon_command (as the recorder did)."""

    def __init__(self, broken: set[str] = frozenset()):
        self.asked: list[tuple[str, dict]] = []
        self.broken = broken

    def mon_command(self, prefix: str, **args):
        self.asked.append((prefix, args))
        if prefix in self.broken:
            raise XcbError(f"ceph {prefix}: timed out")
        return json.loads((DATA / f"{ANSWERS[prefix]}.json").read_text())


def by_metric(rows, **labels):
    return {r["metric"]: r["value"] for r in rows if all(r["labels"].get(k) == v for k, v in labels.items())}


def test_pool_rows_from_df_and_pool_stats():
    c = Recorded()
    rows = CephSampler(c, [POOL], osd_perf=False).sample(5.0, 50.0)
    assert ("df", {"detail": "detail"}) in c.asked
    pool = by_metric(rows, pool=POOL)
    df = {p["name"]: p["stats"] for p in json.loads((DATA / "df_detail.json").read_text())["pools"]}
    assert pool["pool.stored"] == df[POOL]["stored"] == 16 << 20
    assert pool["pool.wr_bytes"] == df[POOL]["wr_bytes"] and pool["pool.objects"] == 4
    assert pool["pool.raw_per_stored"] == pytest.approx(1.0)  # a size-1 replicated pool
    # the mgr leaves out rate keys that are zero: they are rows of 0, not missing rows
    for metric in ("client_read_bytes_per_s", "client_write_bytes_per_s",
                   "client_read_ops_per_s", "client_write_ops_per_s", "recovering_bytes_per_s"):
        assert pool[f"pool.{metric}"] == 0
    assert {r["labels"].get("pool") for r in rows} <= {POOL, None}  # other pools left out
    for r in rows:
        assert r["sampler"] == "ceph" and (r["wall"], r["mono"]) == (5.0, 50.0)


def test_cluster_osd_health_and_pg_rows():
    rows = CephSampler(Recorded(), osd_perf=False).sample(1.0, 1.0)
    flat = by_metric(rows)
    assert flat["cluster.total_bytes"] == 64424509440
    assert flat["cluster.total_used_raw_bytes"] == 930471936
    assert flat["cluster.health"] == 0 and flat["pg.total"] == 113
    assert by_metric(rows, state="active+clean")["pg.count"] == 113
    osds = {r["labels"]["osd"] for r in rows if r["metric"] == "osd.commit_latency_ms"}
    assert osds == {0, 1, 2}
    pools = {r["labels"]["pool"] for r in rows if r["metric"] == "pool.stored"}
    assert POOL in pools and len(pools) == 5  # no pool filter: every pool


def test_empty_ec_pool_has_no_raw_per_stored():
    rows = CephSampler(Recorded(), ["xcb-ec2-1"], osd_perf=False).sample(1.0, 1.0)
    pool = by_metric(rows, pool="xcb-ec2-1")
    assert pool["pool.stored"] == 0 and "pool.raw_per_stored" not in pool


def test_a_failing_command_is_a_gap_with_the_rows_before_it_then_a_back_off():
    c = Recorded(broken={"osd perf"})
    s = CephSampler(c, [POOL], osd_perf=False)
    with pytest.raises(SampleGap) as e:
        s.sample(1.0, 1.0)
    assert "osd perf" in str(e.value)
    assert {"pool.stored", "pool.client_write_bytes_per_s"} <= {r["metric"] for r in e.value.rows}
    asked = len(c.asked)
    with pytest.raises(XcbError, match="not sampled, retrying"):
        s.sample(2.0, 2.0)  # backing off: the cluster is not asked again at once
    assert len(c.asked) == asked
