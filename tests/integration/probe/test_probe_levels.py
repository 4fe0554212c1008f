"""Level probes on the mini cluster's CephFS: at each level fio writes as the gateway does (as
many jobs as transfers, new files per loop, the campaign's write size), after a settle step, and
the pool is probed apart with fio's rados engine; each row carries its noise and the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcbench.backends.base import Target
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.probe import levels
from xcbench.probe.jobfiles import remove_objects
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
    # the mount jobs wrote new files: several whole files per job, each created and removed;
    # the pool jobs new objects, each written once (not time-based: never rewritten)
    for r in rows[1:]:
        print(r["job"], "wall", r["wall_s"], "runtime", r["runtime_s"], "objects", r["objects_per_job"],
              "ran out", r["objects_ran_out"])
        text = (raw / f"xcb-probe.{c.id}.{r['job']}.fio").read_text()
        if r["target"] == "mount":
            assert "create_on_open=1" in text and "unlink_each_loop=1" in text
        else:
            assert "file_service_type=sequential" in text and "time_based" not in text
            assert r["objects_per_job"] >= 1 and r["objects_ran_out"] in (True, False)
    pool = ceph_cluster.ioctx(target.pool)
    assert [o.key for o in pool.list_objects() if o.key.startswith("xcb-probe.pl-cephfs")] == []


def test_a_pool_level_writes_new_objects_and_never_one_twice(ceph_cluster, tmp_path, monkeypatch):
    """A pool level job sized for one object a job (the best rate so far: 1 B/s) writes exactly
    that object's bytes per job and ends there, long before its runtime: not time-based, it never
    wraps to rewrite an object; the objects it named are gone after it."""
    name = ceph_cluster.ensure_pool(PoolSpec("replicated", size=1))
    c = Cell(id="pl-newobj", label="new objects", backend="rados", layout=Layout(4 * M, 1, 4 * M),
             pool=PoolSpec("replicated", size=1), file_size=8 * M, concurrency=[2],
             probe={"runtime": 3, "ss_dur": 2})
    names: list[str] = []
    target = Target(cell_id=c.id, backend="rados", pool=name)
    monkeypatch.setattr(levels, "FIRST_BYTES_PER_S", 1)
    try:
        rows = levels.run_levels(c, target, [2], cluster=ceph_cluster, raw_dir=tmp_path,
                                 prefix="xcb-probe.pl-newobj.ab12", conf=str(ceph_cluster.conf),
                                 ceph_id=ceph_cluster.ceph_id, prev_bw=1.0, object_names=names)
    finally:
        remove_objects(ceph_cluster, name, names)
    (r,) = rows
    assert r["objects_per_job"] == 1 and r["objects_ran_out"] is True
    assert names == ["xcb-probe.pl-newobj.ab12.pool-c2.0.0", "xcb-probe.pl-newobj.ab12.pool-c2.1.0"]
    assert r["bw"] * r["runtime_s"] == pytest.approx(2 * 4 * M, rel=0.05)  # one object a job, once
    assert r["runtime_s"] < levels.LEVEL_RUNTIME
    io = ceph_cluster.ioctx(name)
    assert [o.key for o in io.list_objects() if o.key.startswith("xcb-probe.pl-newobj")] == []
