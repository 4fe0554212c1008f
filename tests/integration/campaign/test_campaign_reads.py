"""Read and mixed campaigns against real gateways (tmpfs and CephFS on the mini cluster): the
dataset is written once and verified, every byte read is verified (a file corrupted after that
is caught, and only it), random and vector reads return the right bytes, a mixed campaign has
per-direction records, and the XRootD client, gfal2 and plain HTTP GET each read."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from tests.support.campaign_rows import Rows
from tests.support.gwcheck import tmpfs_gateways
from xcbench.backends.cephfs import BACKEND  # noqa: F401 - the conftest backend fixture
from xcbench.campaign import CampaignSpec, run_campaign
from xcbench.campaign.access import ranges
from xcbench.campaign.reads import ReadCampaign, prepare_dataset
from xcbench.cell import Cell, Layout, PoolSpec

pytestmark = pytest.mark.integration
M = 1 << 20


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    wd = tmp_path_factory.mktemp("reads")
    with tmpfs_gateways(wd, ("reads",), size=256 << 20) as gws:
        yield gws[0]


def spec(seed: int, **kw) -> CampaignSpec:
    base = dict(files=6, file_size=3 * M + 4321, seed=seed, direction="read", concurrency=3,
                timeout=60, delete_after_verify=True, campaign_id=f"rd{seed}")
    return CampaignSpec(**{**base, **kw})


def written(gw, s: CampaignSpec) -> ReadCampaign:
    """The dataset written into the gateway and verified; the campaign that knows its names."""
    c = ReadCampaign(s, gw)
    info = prepare_dataset(c)
    assert info["written"] == s.files and info["kept"] == 0
    return c


def stored(gw, c: ReadCampaign, i: int) -> Path:
    return Path(gw.target.path) / c.read_name(i).lstrip("/")


def corrupt(path: Path, whole: bool = False) -> None:
    """Flip one byte in the middle (or zero every byte): same size, other content."""
    data = bytearray(path.read_bytes())
    if whole:
        data = bytearray(len(data))
    else:
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("client, seed", [("xrootd", 11), ("gfal2", 12), ("http", 13)])
def test_full_reads_verify_every_byte(gw, client, seed):
    s = spec(seed, client=client)
    c = written(gw, s)
    corrupt(stored(gw, c, 2))
    rows = Rows()
    summary = run_campaign(s, dest=gw, sink=rows, cell_id="cell-r")
    t = rows["transfers"]
    assert len(t) == s.files and {r["direction"] for r in t} == {"read"}
    assert {r["client"] for r in t} == {client}
    bad = [r for r in t if r["file_state"] != "FINISHED"]
    assert [r["file_index"] for r in bad] == [2], [r["reason"] for r in bad]
    assert [r["file_index"] for r in bad] == [2]
    assert "SOURCE CHECKSUM MISMATCH" in bad[0]["reason"]
    assert bad[0]["checksum_source"] == c.dataset.adler32(2) != bad[0]["checksum_dest"]
    for r in t:
        assert r["transferred"] == c.dataset.size(r["file_index"])  # every byte was read
        assert r["checksum_type"] == "adler32" and r["destination"] == "memory://"
        if r["file_index"] != 2:
            assert r["checksum_source"] == r["checksum_dest"] == c.dataset.adler32(r["file_index"])
    assert summary["direction"] == "read" and summary["failed"] == 1
    settings = json.loads(summary["settings"])
    assert settings["read_dataset"]["kept"] == s.files  # written once, before the campaign
    assert settings["access"]["pattern"] == "full"
    assert any("differ from what was written" in f["what"] for f in rows["findings"])
    # a read never removes the dataset, even a failed one
    assert all(stored(gw, c, i).exists() for i in range(s.files))
    tl = rows["timeline"]
    assert sum(r["bytes_read"] for r in tl) == sum(r["transferred"] for r in t)
    assert sum(r["bytes_written"] for r in tl) == 0


@pytest.mark.parametrize("pattern", ["random", "readv"])
def test_random_and_vector_reads(gw, pattern):
    s = spec(20 + len(pattern), access={"pattern": pattern, "size": 10000, "count": 7})
    c = written(gw, s)
    corrupt(stored(gw, c, 4), whole=True)
    rows = Rows()
    run_campaign(s, dest=gw, sink=rows, cell_id="cell-r")
    t = rows["transfers"]
    assert [r["file_index"] for r in t if r["file_state"] != "FINISHED"] == [4]
    for r in t:
        assert r["transferred"] == 7 * 10000 and r["checksum_type"] == "adler32-ranges"
        if r["file_state"] == "FINISHED":  # the adler32 of the dataset's bytes of those ranges
            seq = int(r["transfer_id"].split("-")[-2])
            want = b"".join(c.dataset.read_range(r["file_index"], o, n) for o, n in
                            ranges(s.access, c.dataset.size(r["file_index"]), s.seed,
                                   r["file_index"], seq))
            assert r["checksum_source"] == r["checksum_dest"] == f"{zlib.adler32(want):08x}"
        else:
            assert "SOURCE CONTENT MISMATCH: 7 of 7 chunks" in r["reason"]


def test_mixed_campaign_has_both_directions(gw):
    s = spec(30, direction="mixed", files=10, read_fraction=0.3, file_size=2 * M)
    rows = Rows()
    summary = run_campaign(s, dest=gw, sink=rows, cell_id="cell-m")
    t = rows["transfers"]
    reads = [r for r in t if r["direction"] == "read"]
    writes = [r for r in t if r["direction"] == "write"]
    assert len(reads) == 3 and len(writes) == 7
    assert all(r["file_state"] == "FINISHED" for r in t), [r["reason"] for r in t]
    assert all(r["checksum_source"] == r["checksum_dest"] for r in t)
    assert all(r["destination"] == "memory://" for r in reads)
    assert all(r["source"].startswith("dataset://") for r in writes)
    settings = json.loads(summary["settings"])
    assert settings["directions"]["read"]["finished"] == 3
    assert settings["directions"]["write"]["bytes"] == 7 * 2 * M
    assert settings["read_share"] == pytest.approx(0.3)
    assert summary["direction"] == "mixed" and summary["bytes"] == 10 * 2 * M
    tl = rows["timeline"]
    assert sum(r["bytes_read"] for r in tl) == 3 * 2 * M
    assert sum(r["bytes_written"] for r in tl) == 7 * 2 * M
    assert all(r["bytes_read"] + r["bytes_written"] == r["bytes"] for r in tl)


def test_time_based_read_level_cycles_the_dataset(gw):
    s = spec(40, files=3, file_size=M, duration={"min": 2, "max": 3},
             steady={"window": 2, "points": 2}, concurrency=2)
    rows = Rows()
    summary = run_campaign(s, dest=gw, sink=rows, cell_id="cell-t")
    t = rows["transfers"]
    assert len(t) > 3 and {r["file_index"] for r in t} == {0, 1, 2}
    assert all(r["file_state"] == "FINISHED" and r["direction"] == "read" for r in t)
    assert json.loads(summary["settings"])["level"]["ended_by"] in ("steady", "max")


def test_cephfs_read_catches_a_corrupt_file(ceph_cluster, backend, workdir):
    """On the mini cluster: the dataset lands in the CephFS layout dir, a file changed on the
    mount after it was verified is the one read that fails."""
    from xcbench.gateway import start_gateway
    target = backend.prepare(Cell(id="rd-ceph", label="reads", backend="cephfs",
                                  layout=Layout(1 * M, 1, 1 * M), pool=PoolSpec("replicated", size=1)))
    try:
        with start_gateway(target, workdir=workdir / "gw", cluster=backend.cluster,
                           procs=backend.procs) as g:
            s = spec(50, files=4, file_size=2 * M + 17)
            c = written(g, s)
            corrupt(stored(g, c, 1))
            rows = Rows()
            run_campaign(s, dest=g, sink=rows, cell_id="cell-c")
            t = rows["transfers"]
            assert [r["file_index"] for r in t if r["file_state"] != "FINISHED"] == [1]
            assert all(r["transferred"] == c.dataset.size(r["file_index"]) for r in t)
    finally:
        backend.cleanup(target)


def test_run_matrix_reads_each_level_from_one_dataset(ceph_cluster, tmp_path):
    """Through the runner: a read cell writes its dataset at the first level only; a mixed
    cell has both directions at every level; write cells are unchanged."""
    from xcbench.commands.run import load_run_matrix
    from xcbench.run.runner import RunOptions, run_matrix
    p = tmp_path / "reads.yaml"
    p.write_text("name: reads\ndefaults:\n  concurrency: [1, 2]\n  file_size: 2M\n  files: 4\n"
                 "  direction: [read, mixed]\n  campaign: {timeout: 60}\n"
                 "backends:\n  tmpfs: {size: 128M}\n")
    opts = RunOptions(store=tmp_path / "r", name="reads", probes=False, baseline=False,
                      report=False, progress=False, telemetry="host")
    run = run_matrix(load_run_matrix(p, ceph_cluster, opts), ceph_cluster, opts)
    cells = {c["label"].split()[-1]: (cid, c) for cid, c in run.manifest["cells"].items()}
    assert {k: c["status"] for k, (_, c) in cells.items()} == {"read": "complete",
                                                               "mixed": "complete"}
    t, camps = run.table("transfers"), run.table("campaigns")
    read_id, mixed_id = cells["read"][0], cells["mixed"][0]
    rt = t[t["cell_id"] == read_id]
    assert set(rt["direction"]) == {"read"} and set(rt["file_state"]) == {"FINISHED"}
    assert len(rt) == 2 * 4
    prep = [json.loads(s)["read_dataset"] for s in
            camps[camps["cell_id"] == read_id].sort_values("concurrency")["settings"]]
    assert [(d["written"], d["kept"]) for d in prep] == [(4, 0), (0, 4)]
    mt = t[t["cell_id"] == mixed_id]
    assert mt.groupby("concurrency")["direction"].nunique().tolist() == [2, 2]
    assert set(camps[camps["cell_id"] == mixed_id]["direction"]) == {"mixed"}


def test_rados_read_catches_a_corrupt_object(ceph_cluster, workdir):
    """XrdCeph: one RADOS object of one file changed after the dataset was verified; a random
    read pass and a full read pass each fail that file only."""
    from xcbench.backends.rados import BACKEND as RADOS
    from xcbench.backends.rados.backend import object_name
    from xcbench.cell.layout import striper_objects
    from xcbench.gateway import start_gateway
    from xcbench.system.proc import ProcessSet
    procs = ProcessSet()
    rados_backend = RADOS(ceph_cluster, workdir, procs)
    layout, pool = Layout(1 * M, 1, 1 * M), PoolSpec("replicated", size=1)
    target = rados_backend.prepare(Cell(id="rd-rados", label="reads", backend="rados",
                                        layout=layout, pool=pool))
    try:
        with start_gateway(target, workdir=workdir / "gw-rados", cluster=ceph_cluster,
                           procs=procs) as g:
            s = spec(60, files=4, file_size=3 * M + 5)
            c = written(g, s)
            # the object of a name is what follows its XrdCeph selector (backends/rados)
            oids = striper_objects(object_name(c.read_name(3)), c.dataset.size(3), layout)
            with ceph_cluster.ioctx(target.pool) as io:
                for oid in oids:  # every object of file 3: any random range hits one
                    data = bytearray(io.read(oid, oids[oid]))
                    io.write(oid, bytes(b ^ 0x5A for b in data), 0)
            for access in (None, {"pattern": "random", "size": 4096, "count": 4}):
                rows = Rows()
                run_campaign(s.with_(access=access, campaign_id=f"rdr{access is None}"),
                             dest=g, sink=rows, cell_id="cell-x")
                t = rows["transfers"]
                assert [r["file_index"] for r in t if r["file_state"] != "FINISHED"] == [3], \
                    [r["reason"] for r in t]
    finally:
        rados_backend.cleanup(target)
        rados_backend.close()
        procs.stop_all()


def test_a_stopped_read_campaign_keeps_a_final_row_per_file(gw):
    import threading
    s = spec(70, direction="mixed", files=5)
    written(gw, s)
    stop = threading.Event()
    stop.set()  # stopped before its first transfer: every file is CANCELED, none lost
    rows = Rows()
    run_campaign(s, dest=gw, sink=rows, cell_id="cell-s", stop_event=stop)
    t = rows["transfers"]
    assert sorted(r["file_index"] for r in t) == list(range(5))
    assert {r["file_state"] for r in t} == {"CANCELED"}
    reads = [r for r in t if r["direction"] == "read"]
    assert len(reads) in (2, 3) and all(r["destination"] == "memory://" for r in reads)
    assert all(r["direction"] == "write" and r["source"].startswith("dataset://")
               for r in t if r not in reads)
