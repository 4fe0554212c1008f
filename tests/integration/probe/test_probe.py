"""Short fio probes on real targets: a tmpfs dir (local and client/server), CephFS layout dirs on
the ceph-fuse mount (replicated, EC 2+1), and the rados engine on xcb-rep1 and xcb-ec2-1.
Each must report non-zero IOPS and bandwidth and leave nothing behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.campaign_rows import Rows
from xcbench.backends.base import Target
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.errors import XcbError
from xcbench.probe import fio
from xcbench.probe.jobfiles import PREFIX, direct_io_supported
from xcbench.probe.jobs import run_probe
from xcbench.store.tables import PROBE
from xcbench.system import ports, proc

pytestmark = pytest.mark.integration
M = 1 << 20
REP = PoolSpec("replicated", size=1)
EC = PoolSpec("erasure", k=2, m=1)
QUICK = {"runtime": 1, "iodepth": 4, "numjobs": 1, "size": 16 * M}


def cell(ident: str, backend: str, *, layout=None, pool=None, **probe) -> Cell:
    return Cell(id=f"pr-{ident}", label=f"probes test {ident}", backend=backend, layout=layout,
                pool=pool, probe={**QUICK, **probe})


def check_rows(rows: list[dict], cell_id: str, patterns=("randwrite", "write", "read")) -> None:
    assert {r["job"] for r in rows} == set(patterns)
    for r in rows:
        assert tuple(r) == PROBE and r["cell_id"] == cell_id
        assert r["iops"] > 0 and r["bw"] > 0, r
        assert r["errors"] == 0 and r["runtime_s"] > 0 and r["lat_p99_us"] > 0
    rw = next(r for r in rows if r["job"] == "randwrite")
    assert rw["bs"] == 4096


@pytest.fixture
def shm_dir():
    d = Path(tempfile.mkdtemp(prefix="xcb-probes-", dir="/dev/shm"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_probe_on_a_tmpfs_dir(shm_dir, tmp_path):
    c = cell("tmpfs", "tmpfs")
    target = Target(cell_id=c.id, backend="tmpfs", path=str(shm_dir))
    sink = Rows()
    rows = run_probe(c, target, workdir=tmp_path / "w", sink=sink, raw_dir=tmp_path / "raw")
    check_rows(rows, c.id)
    assert sink["probes"] == rows
    assert {r["host"] for r in rows} == {"local"}
    assert all(r["direct"] == direct_io_supported(shm_dir) for r in rows)
    assert list(shm_dir.iterdir()) == []  # fio's files are gone
    # the raw JSON is kept and parses to the same rows
    raw = tmp_path / "raw" / f"{PREFIX}.{c.id}.json"
    jobfile = (tmp_path / "raw" / f"{PREFIX}.{c.id}.fio").read_text()
    assert fio.parse(fio.load_file(raw), cell_id=c.id, jobfile=jobfile) == rows


def test_buffered_fallback_where_o_direct_is_refused(tmp_path):
    """ramfs refuses O_DIRECT (so does tmpfs before Linux 6.6): psync, direct=0, and a finding."""
    if os.geteuid() != 0:
        pytest.skip("mounting a ramfs needs root")
    mnt = tmp_path / "ramfs"
    mnt.mkdir()
    proc.run(["mount", "-t", "ramfs", "xcb-probes-ramfs", mnt])
    try:
        assert direct_io_supported(mnt) is False
        c = cell("ramfs", "tmpfs", patterns=["randwrite"])
        sink = Rows()
        rows = run_probe(c, Target(cell_id=c.id, backend="tmpfs", path=str(mnt)),
                         workdir=tmp_path / "w", sink=sink)
        check_rows(rows, c.id, ["randwrite"])
        assert rows[0]["engine"] == "psync" and rows[0]["direct"] is False
        assert rows[0]["iodepth"] == 1
        (finding,) = sink["findings"]
        assert finding["cell_id"] == c.id and "O_DIRECT" in finding["why"]
        assert list(mnt.iterdir()) == []
    finally:
        proc.run(["umount", mnt])


@pytest.fixture
def fio_servers(tmp_path):
    procs = proc.ProcessSet()
    server_ports = ports.free_ports(2)
    for i, port in enumerate(server_ports):
        proc.spawn(["fio", f"--server=ip:127.0.0.1,{port}"], name=f"fio-server-{i}",
                   log=tmp_path / f"fio-server-{i}.log", procs=procs)
    for port in server_ports:
        net_wait(port)
    yield [f"127.0.0.1:{p}" for p in server_ports]
    procs.stop_all()


def net_wait(port: int, timeout: float = 10.0) -> None:
    import time
    deadline = time.monotonic() + timeout
    while not ports.port_open(port):
        if time.monotonic() > deadline:
            raise AssertionError(f"fio --server on port {port} did not come up")
        time.sleep(0.1)


def test_probe_client_server_two_hosts(shm_dir, tmp_path, fio_servers):
    c = cell("cs", "tmpfs", patterns=["randwrite", "write"], numjobs=2)
    target = Target(cell_id=c.id, backend="tmpfs", path=str(shm_dir))
    rows = run_probe(c, target, workdir=tmp_path / "w", sink=None, hosts=",".join(fio_servers))
    assert {r["host"] for r in rows} == set(fio_servers) | {"all"}
    for job in ("randwrite", "write"):
        per = {r["host"]: r for r in rows if r["job"] == job}
        assert all(per[h]["iops"] > 0 and per[h]["bw"] > 0 for h in fio_servers)
        assert per["all"]["iops"] == pytest.approx(sum(per[h]["iops"] for h in fio_servers))
        assert per["all"]["bw"] == sum(per[h]["bw"] for h in fio_servers)
        assert per["all"]["numjobs"] == 4 and per[fio_servers[0]]["numjobs"] == 2
    assert list(shm_dir.iterdir()) == []
    # each host had its own job file, with its own file names
    jobfiles = sorted((tmp_path / "w").glob("*.fio"))
    assert [f.name for f in jobfiles] == [f"{PREFIX}.{c.id}.h0.fio", f"{PREFIX}.{c.id}.h1.fio"]


def leftover_objects(cluster, pool: str, cell_id: str | None = None) -> list[str]:
    prefix = f"{PREFIX}.{cell_id}." if cell_id else f"{PREFIX}."
    return [o.key for o in cluster.ioctx(pool).list_objects() if o.key.startswith(prefix)]


@pytest.mark.parametrize("pool", [REP, EC], ids=["rep1", "ec2+1"])
def test_probe_rados_engine(ceph_cluster, tmp_path, pool):
    name = ceph_cluster.ensure_pool(pool)
    assert name in ("xcb-rep1", "xcb-ec2-1")
    c = cell(f"rados-{pool.label}", "rados", layout=Layout(4 * M, 1, 4 * M), pool=pool)
    target = Target(cell_id=c.id, backend="rados", pool=name, layout=c.layout)
    rows = run_probe(c, target, cluster=ceph_cluster, workdir=tmp_path, sink=None)
    check_rows(rows, c.id)
    assert all(r["engine"] == "rados" for r in rows)
    assert next(r for r in rows if r["job"] == "write")["bs"] == 4 * M  # object-sized
    assert leftover_objects(ceph_cluster, name, c.id) == []


def test_rados_objects_removed_when_fio_fails(ceph_cluster, tmp_path):
    """fio cannot reach its server: the objects written for the read job must still go."""
    name = ceph_cluster.ensure_pool(REP)
    c = cell("rados-fail", "rados", layout=Layout(4 * M, 1, 4 * M), pool=REP, patterns=["read"])
    target = Target(cell_id=c.id, backend="rados", pool=name, layout=c.layout)
    port = ports.free_port()
    with pytest.raises(XcbError, match="fio .*no JSON output"):
        run_probe(c, target, cluster=ceph_cluster, workdir=tmp_path, sink=None,
                  hosts=[f"127.0.0.1:{port}"])
    assert leftover_objects(ceph_cluster, name, c.id) == []


@pytest.mark.parametrize("pool", [REP, EC], ids=["rep1", "ec2+1"])
def test_probe_cephfs_layout_dir(ceph_cluster, cephfs_backend, tmp_path, pool):
    c = cell(f"cephfs-{pool.label}", "cephfs", layout=Layout(1 * M, 2, 4 * M), pool=pool)
    target = cephfs_backend.prepare(c)
    try:
        assert "/" in target.path and Path(target.path).is_dir()
        rows = run_probe(c, target, cluster=ceph_cluster, workdir=tmp_path, sink=None)
        check_rows(rows, c.id)
        assert next(r for r in rows if r["job"] == "write")["bs"] == 4 * M
        assert list(Path(target.path).iterdir()) == []
    finally:
        cephfs_backend.cleanup(target)


def test_one_line_errors_before_running(ceph_cluster, tmp_path, monkeypatch):
    # a pool that does not exist
    c = cell("nopool", "rados", layout=Layout(4 * M, 1, 4 * M), pool=REP)
    target = Target(cell_id=c.id, backend="rados", pool="xcb-probes-no-such-pool", layout=c.layout)
    with pytest.raises(XcbError) as e:
        run_probe(c, target, cluster=ceph_cluster, workdir=tmp_path, sink=None)
    assert "xcb-probes-no-such-pool does not exist" in str(e.value) and "\n" not in str(e.value)
    assert "pr-nopool" in str(e.value)
    # a layout dir that is gone
    gone = tmp_path / "gone"
    c = cell("gone", "cephfs", layout=Layout(4 * M, 1, 4 * M), pool=REP)
    with pytest.raises(XcbError, match=r"cell pr-gone: probe: target dir .*gone is gone"):
        run_probe(c, Target(cell_id=c.id, backend="cephfs", path=str(gone)),
                  cluster=ceph_cluster, workdir=tmp_path, sink=None)
    # no fio on PATH
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(XcbError, match="fio: command not found .*fio"):
        run_probe(c, Target(cell_id=c.id, backend="tmpfs", path=str(tmp_path)),
                  workdir=tmp_path, sink=None)


MATRIX = """\
name: probe-cli
defaults:
  concurrency: [1, 4]          # two cells per storage: probed once
  file_size: 16M
  probe: {runtime: 1, iodepth: 2, numjobs: 1, size: 16M}
backends:
  tmpfs: {size: [256M]}
  rados:
    layouts: [{stripe_unit: 4M, stripe_count: 1, object_size: 4M}]
    pools: [replicated]
"""


def test_probe_command_prints_a_ral_table(ceph_cluster, tmp_path, capsys):
    from xcbench.cli import main
    m = tmp_path / "m.yaml"
    m.write_text(MATRIX)
    rc = main(["probe", str(m), "--ceph-conf", str(ceph_cluster.conf),
               "--raw", str(tmp_path / "raw")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "IO rate, Gb/s (GiB/s)" in out and "IOPS" in out and "stripe unit" in out
    lines = [ln for ln in out.splitlines() if "tmpfs 256M" in ln or "rep3" in ln]
    assert len(lines) == 2  # one row per storage, not per concurrency level
    rados_line = next(ln for ln in lines if "rados" in ln)
    assert "4M" in rados_line and "error" not in rados_line
    raws = sorted(p.name for p in (tmp_path / "raw").rglob("*.json"))
    assert len(raws) == 2
    assert leftover_objects(ceph_cluster, "xcb-rep3") == []


def test_steady_state_on_a_tmpfs_dir(shm_dir, tmp_path):
    c = cell("ss", "tmpfs", patterns=["randwrite"], runtime=4, ss="iops_slope:50%", ss_dur=2,
             ss_ramp=1)
    rows = run_probe(c, Target(cell_id=c.id, backend="tmpfs", path=str(shm_dir)),
                     workdir=tmp_path, sink=None)
    check_rows(rows, c.id, ["randwrite"])
    (row,) = rows
    assert isinstance(row["ss_reached"], bool)
    data = fio.load_file(tmp_path / f"{PREFIX}.{c.id}.json")
    assert data["jobs"][0]["steadystate"]["ss"].startswith("iops_slope:50")
    assert row["ss_reached"] == bool(data["jobs"][0]["steadystate"]["attained"])


def test_probe_rados_client_server(ceph_cluster, tmp_path, fio_servers):
    """Two fio servers each write their own objects (prefix .h0 / .h1); all are removed."""
    name = ceph_cluster.ensure_pool(REP)
    c = cell("rados-cs", "rados", layout=Layout(4 * M, 1, 4 * M), pool=REP)
    target = Target(cell_id=c.id, backend="rados", pool=name, layout=c.layout)
    rows = run_probe(c, target, cluster=ceph_cluster, workdir=tmp_path, sink=None,
                     hosts=fio_servers)
    check_rows([r for r in rows if r["host"] == "all"], c.id)
    for job in ("randwrite", "write", "read"):
        per = {r["host"]: r for r in rows if r["job"] == job}
        assert set(per) == set(fio_servers) | {"all"}
        assert all(per[h]["iops"] > 0 for h in fio_servers)
        assert per["all"]["bw"] == sum(per[h]["bw"] for h in fio_servers)
    assert leftover_objects(ceph_cluster, name, c.id) == []
