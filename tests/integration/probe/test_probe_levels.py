"""Level probes on the mini cluster's CephFS: at each level fio writes as the gateway does (as
many jobs as transfers, new files per loop, the campaign's write size), after a settle step, and
the pool is probed apart with fio's rados engine; each row carries its noise and the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.probe.jobs import run_probe
from xcbench.probe.noise import logs
from xcbench.store.tables import PROBE

pytestmark = pytest.mark.integration
M = 1 << 20


def test_level_probes_on_cephfs(ceph_cluster, cephfs_backend, tmp_path):
    c = Cell(id="pl-cephfs", label="level probes", backend="cephfs",
             layout=Layout(4 * M, 1, 4 * M), pool=PoolSpec("replicated", size=1),
             file_size=8 * M, concurrency=[1, 2],
             probe={"runtime": 1, "iodepth": 4, "numjobs": 1, "size": 8 * M, "direct": False,
                    "ss_dur": 2, "patterns": ["randwrite", "write"]})
    target = cephfs_backend.prepare(c)
    raw = tmp_path / "raw"
    try:
        rows = run_probe(c, target, cluster=ceph_cluster, workdir=tmp_path, sink=None,
                         raw_dir=raw, levels=c.concurrency)
        assert list(Path(target.path).iterdir()) == []  # every new file was removed
    finally:
        cephfs_backend.cleanup(target)
    assert all(tuple(r) == PROBE for r in rows)
    # the level probes replace the cell's one sequential write job
    assert [r["job"] for r in rows] == ["randwrite", "write-c1", "pool-c1", "write-c2", "pool-c2"]
    for r in rows[1:]:
        level = r["concurrency"]
        assert r["numjobs"] == level and r["iodepth"] == 1 and r["bs"] == 4 * M
        assert r["target"] == ("pool" if r["job"].startswith("pool") else "mount")
        assert r["engine"] == ("rados" if r["target"] == "pool" else "psync")
        assert r["bw"] > 0 and r["errors"] == 0
        # noise from fio's interval samples, one log per job
        assert len(logs(raw / f"xcb-probe.{c.id}.{r['job']}")) == level
        assert r["bw_n"] >= 3 and r["bw_steady"] > 0 and 0 < r["bw_rel_se"] < 1
        assert 0 < r["host_busy"] <= 1 and r["osd_cores"] > 0
        assert r["settle_s"] >= 0 and r["settled"] in (True, False)
    # the mount jobs wrote new files: several whole files per job, each created and removed
    for r in rows[1:]:
        if r["target"] == "mount":
            text = (raw / f"xcb-probe.{c.id}.{r['job']}.fio").read_text()
            assert "create_on_open=1" in text and "unlink_each_loop=1" in text
    pool = ceph_cluster.ioctx(target.pool)
    assert [o.key for o in pool.list_objects() if o.key.startswith("xcb-probe.pl-cephfs")] == []
