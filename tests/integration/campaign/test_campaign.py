"""Campaigns against real tmpfs gateways: clients, modes, the concurrency limit, checksum
failures, a gateway killed and restarted mid-campaign, the FTS3 REST path."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.campaign_rows import Rows, finals, local, max_overlap
from tests.support.gwcheck import tmpfs_gateways
from xcbench.backends.tmpfs import BACKEND
from xcbench.campaign import CampaignHooks, CampaignSpec, run_campaign
from xcbench.cell import Cell
from xcbench.gateway import start_gateway
from xcbench.system.proc import ProcessSet

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateways(tmp_path_factory):
    """A destination and a source tmpfs gateway (the source holds the TPC datasets)."""
    wd = tmp_path_factory.mktemp("campaign")
    with tmpfs_gateways(wd, ("camp-dst", "camp-src"), size=1 << 30) as gws:
        yield gws[0], gws[1]










@pytest.mark.parametrize("client, streams", [("xrootd", 1), ("xrootd", 3), ("gfal2", 1)])
def test_push_both_clients(gateways, client, streams):
    dst, _ = gateways
    rows = Rows()
    spec = CampaignSpec(files=10, file_size="3M", size_dist="lognormal", seed=1, mode="push",
                        client=client, concurrency=3, streams=streams, timeout=60,
                        chunk_size="1M")  # several chunks per file, tails of odd sizes
    summary = run_campaign(spec, dest=dst, sink=rows, cell_id="cell-push")
    ts = rows["transfers"]
    assert (summary["finished"], summary["failed"]) == (10, 0), [r["reason"] for r in ts]
    assert len(ts) == 10 and all(r["checksum_source"] == r["checksum_dest"] for r in ts)
    assert all(r["cell_id"] == "cell-push" and r["transferred"] == r["file_size"] for r in ts)
    assert max_overlap(ts) <= 3
    for r in ts:  # the bytes on the gateway's storage are the dataset's
        assert local(dst, r["destination"]).stat().st_size == r["file_size"]
    assert rows["timeline"] and rows["campaigns"] == [summary]


def test_concurrency_limit_is_never_exceeded(gateways):
    dst, _ = gateways
    rows = Rows()
    spec = CampaignSpec(files=150, file_size="64K", size_dist="uniform", concurrency=24,
                        delete_after_verify=True, timeout=60)
    summary = run_campaign(spec, dest=dst, sink=rows)
    ts = rows["transfers"]
    assert summary["finished"] == 150
    peak = max_overlap(ts)
    assert 12 <= peak <= 24  # the limit is reached (the test means something) and never passed
    assert max(r["active"] for r in rows["timeline"]) <= 24
    assert not list(Path(dst.target.path).glob(f"xcb-{spec.campaign_id}.*"))  # deleted


@pytest.mark.parametrize("mode, client", [("tpc-root", "xrootd"), ("tpc-root", "gfal2"),
                                          ("tpc-http", "xrootd"), ("tpc-http", "gfal2")])
def test_third_party_copies_from_a_tmpfs_source(gateways, mode, client):
    dst, src = gateways
    rows = Rows()
    spec = CampaignSpec(files=4, file_size="2M", size_dist="uniform", seed=5, mode=mode,
                        client=client, concurrency=4, streams=2, timeout=60)
    summary = run_campaign(spec, dest=dst, source=src, sink=rows)
    ts = rows["transfers"]
    assert summary["finished"] == 4, [r["reason"] for r in ts]
    for r in ts:
        assert r["source"].startswith(src.root_url if mode == "tpc-root" else src.http_url)
        assert r["checksum_source"] == r["checksum_dest"]
        assert local(dst, r["destination"]).stat().st_size == r["file_size"]
    assert all(local(src, r["source"]).exists() for r in ts)  # staged on the source's tmpfs


def test_corruption_on_the_destination_is_caught_by_the_checksum(gateways):
    """Bit rot between write and verification: flip one byte in the stored file."""
    dst, _ = gateways
    rows = Rows()

    def corrupt(index, url):
        if index == 2:
            with open(local(dst, url), "r+b") as fh:
                fh.seek(1000)
                b = fh.read(1)
                fh.seek(1000)
                fh.write(bytes([b[0] ^ 0x01]))

    spec = CampaignSpec(files=5, file_size="1M", concurrency=2, checksum="both", timeout=60)
    summary = run_campaign(spec, dest=dst, sink=rows, hooks=CampaignHooks(after_transfer=corrupt))
    assert (summary["finished"], summary["failed"]) == (4, 1)
    bad = [r for r in rows["transfers"] if r["file_state"] == "FAILED"]
    assert len(bad) == 1 and bad[0]["file_index"] == 2
    assert "CHECKSUM MISMATCH" in bad[0]["reason"] and bad[0]["error_scope"] == "DESTINATION"
    assert bad[0]["checksum_dest"] and bad[0]["checksum_dest"] != bad[0]["checksum_source"]
    assert not local(dst, bad[0]["destination"]).exists()  # FTS cleans a failed destination


def test_gateway_killed_and_restarted_mid_campaign(gateways):
    dst, _ = gateways
    rows = Rows()
    # the gateway dies after 30 of the 120 files: most of them are still to go through the restart
    spec = CampaignSpec(files=120, file_size="16M", concurrency=4, retries=4, retry_delay=1.0,
                        timeout=8, timeout_per_mib=0, delete_after_verify=True)
    out = {}
    t = threading.Thread(target=lambda: out.update(run_campaign(spec, dest=dst, sink=rows)))
    t.start()
    deadline = time.time() + 60
    while len(rows.get("transfers", [])) < 30 and time.time() < deadline:
        time.sleep(0.05)
    os.kill(dst.servers[0].pid, signal.SIGKILL)  # the gateway dies mid-transfer...
    time.sleep(2)
    dst.restart()  # ... and comes back on the same port
    t.join(timeout=120)
    assert not t.is_alive()
    ts = rows["transfers"]
    last = finals(ts)
    assert sorted(last) == list(range(120))  # every file has a final record
    assert all(r["file_state"] == "FINISHED" for r in last.values()), \
        [r["reason"] for r in last.values() if r["file_state"] != "FINISHED"]
    failed = [r for r in ts if r["file_state"] == "FAILED"]
    assert failed and any(r["retry"] > 0 for r in last.values())  # attempts failed, retries won
    per_file = defaultdict(list)
    for r in ts:
        per_file[r["file_index"]].append(r["retry"])
    assert all(sorted(v) == list(range(len(v))) for v in per_file.values())  # one row per attempt
    assert out["finished"] == 120 and out["failed"] == 0


def test_the_same_campaign_through_an_fts3_rest_api(gateways):
    """Submitted with the fts3 client to a local FTS3 stand-in that copies with gfal2: link
    limit honoured, per-file checksums in the job, a wrong source file caught by FTS's
    checksum, every attempt harvested into TRANSFER rows."""
    from tests.support.fts3_double import Fts3Double
    from xcbench.campaign.dataset import Dataset
    from xcbench.scaleout.fts3 import submit_campaign

    dst, src = gateways
    spec = CampaignSpec(files=6, file_size="1M", size_dist="uniform", seed=11, mode="tpc-http",
                        concurrency=2, retries=1, retry_delay=0, checksum="both")
    ds = Dataset.generate(6, 1 << 20, "uniform", 11, block_size=spec.chunk_size)
    wrong = Path(src.target.path) / f"xcb-ds-{ds.ident}.{ds.name(4)}"
    wrong.write_bytes(b"\0" * ds.size(4))  # right size, wrong bytes: staging keeps it
    rows = Rows()
    with Fts3Double() as fts:
        summary = submit_campaign(spec, fts=fts.url, dest=dst, source=src, sink=rows,
                                  cell_id="cell-fts", token=fts.token, poll=0.3)
        job = fts.submitted[0]
        link = (f"http://{urlsplit(src.http_url).hostname}", f"http://{urlsplit(dst.http_url).hostname}")
        assert fts.links[link]["max_active"] == 2 and fts.peak_active[link] <= 2
    assert [f["checksum"] for f in job["files"]] == [f"ADLER32:{ds.adler32(i)}" for i in range(6)]
    assert job["params"]["verify_checksum"] == "both" and job["params"]["retry"] == 1
    assert (summary["finished"], summary["failed"]) == (5, 1)
    last = finals(rows["transfers"])
    assert sorted(last) == list(range(6))
    bad = last[4]
    assert bad["file_state"] == "FAILED" and "CHECKSUM" in bad["reason"].upper() and bad["retry"] == 1
    assert [r["retry"] for r in rows["transfers"] if r["file_index"] == 4] == [0, 1]
    for i, r in last.items():
        if i != 4:
            assert r["file_state"] == "FINISHED" and r["checksum_dest"] == ds.adler32(i)
            assert local(dst, r["destination"]).stat().st_size == ds.size(i)
    assert rows["timeline"] and rows["campaigns"] == [summary]


def test_delete_after_verify_deletes_only_what_the_job_submitted(gateways, tmp_path_factory):
    """An FTS server that answers a file's dest_surl with a URL this job never submitted (a
    file of someone else's, on another storage): xcbench neither reads nor deletes it; the row
    says so; the files it did submit are verified and deleted."""
    from tests.support.fts3_double import Fts3Double
    from xcbench.scaleout.fts3 import submit_campaign
    dst, src = gateways
    with tmpfs_gateways(tmp_path_factory.mktemp("foreign"), ("camp-foreign",)) as (other,):
        foreign = Path(other.target.path) / "someone-elses-file"
        foreign.write_bytes(b"precious")

        def answer(i, dest):
            return f"{other.http_url}/someone-elses-file" if i == 0 else dest
        spec = CampaignSpec(files=3, file_size="256K", seed=5, mode="tpc-http", concurrency=2,
                            checksum="none", delete_after_verify=True)
        rows = Rows()
        with Fts3Double(answer_dest=answer) as fts:
            summary = submit_campaign(spec, fts=fts.url, dest=dst, source=src, sink=rows,
                                      cell_id="cell-foreign", token=fts.token, poll=0.3)
        assert foreign.read_bytes() == b"precious"  # not deleted
        last = finals(rows["transfers"])
        assert last[0]["file_state"] == "FAILED" and "did not submit" in last[0]["reason"]
        assert summary["failed"] == 1 and summary["finished"] == 2
        for i in (1, 2):  # verified copies of this job: deleted as asked
            assert last[i]["file_state"] == "FINISHED"
            assert not local(dst, last[i]["destination"]).exists()


def test_a_full_destination_never_yields_a_wrong_finished_file(tmp_path):
    """XRootD 5.5.3 on a full file system acknowledges some short writes: the stored file is
    truncated with no error. With checksums off, FTS's size check must still catch it."""
    procs = ProcessSet()
    tmp_path.chmod(0o755)
    backend = BACKEND(None, tmp_path, procs)
    target = backend.prepare(Cell(id="camp-full", label="full", backend="tmpfs", tmpfs_size=48 << 20))
    try:
        if target.info.get("kind") != "tmpfs mount":
            pytest.skip("needs a size-limited tmpfs mount (mounting not permitted here)")
        gw = start_gateway(target, workdir=tmp_path, procs=procs, name="camp-full")
        rows = Rows()
        spec = CampaignSpec(files=24, file_size="4M", concurrency=8, checksum="none", timeout=60)
        summary = run_campaign(spec, dest=gw, sink=rows)
        ts = rows["transfers"]
        assert summary["failed"] > 0  # 96 MiB do not fit in 48 MiB
        for r in ts:
            p = local(gw, r["destination"])
            if r["file_state"] == "FINISHED":
                assert p.stat().st_size == r["file_size"]
            else:
                assert not p.exists()  # failed destinations are cleaned up
                assert "SIZE MISMATCH" in r["reason"] or r["error_code"] == 28, r["reason"]
        gw.stop()
    finally:
        procs.stop_all()
        backend.cleanup(target)


def test_optimizer_and_stop_event(gateways):
    """The FTS optimizer emulation drives the limit (decisions logged with reasons); a stop
    ends the campaign with a final record for every file (CANCELED for those never run)."""
    dst, _ = gateways
    rows = Rows()
    stop = threading.Event()
    spec = CampaignSpec(files=400, file_size="1M", concurrency=12, delete_after_verify=True,
                        optimizer={"interval": 0.5, "min_active": 2}, timeout=60)

    moved = []

    def stop_later(index, url):  # after the 150th file whose data moved (whatever its index)
        moved.append(index)
        if len(moved) == 150:
            stop.set()

    summary = run_campaign(spec, dest=dst, sink=rows, stop_event=stop,
                           hooks=CampaignHooks(after_transfer=stop_later))
    opt = rows["optimizer"]
    assert opt[0]["reason"] == "No information. Start halfway." and opt[0]["decision"] == 7
    assert all(2 <= r["decision"] <= 12 and r["reason"] for r in opt)
    assert max_overlap(rows["transfers"]) <= max(r["decision"] for r in opt)
    last = finals(rows["transfers"])
    assert sorted(last) == list(range(400))
    states = {r["file_state"] for r in last.values()}
    assert "CANCELED" in states and states <= {"FINISHED", "CANCELED"}
    # a stop cancels what is in flight, checksum queries included: at most `concurrency` (12)
    # of the 150 files whose data had moved can end CANCELED
    assert summary["finished"] + summary["failed"] == 400 and summary["finished"] >= 150 - 12
