"""SIGTERM or SIGHUP to `xcbench campaign`, `probe` and `run` (real CLI subprocesses, the real
mini cluster): each stops what it started, flushes every record up to the signal and after it,
and a run stays resumable. Signals are sent once the first records are on disk (never after a
fixed sleep)."""

from __future__ import annotations

import json
import signal
import time

import pytest

from tests.support.faults import check_complete, final_rows, flushed, lines, scene, start_run

pytestmark = pytest.mark.integration
SIGNALS = [signal.SIGTERM, signal.SIGHUP]
IDS = ["TERM", "HUP"]
# every command stops the same way on SIGINT, SIGTERM and SIGHUP (one mechanism:
# xcbench.system.signals, tests/unit/system/test_signals.py); here each command's stop path is
# driven by one of them, the signals taking turns, so that each reaches a real command (SIGINT:
# test_run.py's mid-matrix run; SIGTERM: the Slurm coordinator's): a pass of both over every
# command cost `make test` 19 s
ONE = {"campaign": signal.SIGHUP, "probe": signal.SIGTERM, "run": signal.SIGHUP}


@pytest.mark.parametrize("sig", [ONE["campaign"]], ids=["HUP"])
def test_campaign_stops_on_a_signal_and_loses_no_record(sig):
    with scene("xcb-fault-campaign-") as s:
        out = s.root / "results"
        cli = s.start("campaign", "--gateway", "tmpfs", "--files", "300", "--size", "8M",
                      "--concurrency", "1", "--delete-after-verify", "--store", str(out),
                      "--run-name", "c", "--no-progress")
        records = out / "c" / "records"
        cli.wait_for(flushed(records / "timeline.jsonl"), "first timeline row on disk")
        before = lines(records / "transfers.jsonl")
        assert s.processes() and s.mounts()  # the gateway and its tmpfs, while it runs
        cli.p.send_signal(sig)
        rc = cli.finish()
        assert rc == 130, cli.stderr
        assert "Traceback" not in cli.stderr and signal.Signals(sig).name in cli.stderr
        after = lines(records / "transfers.jsonl")
        assert after[:len(before)] == before  # what was flushed before the signal is all there
        last = final_rows(records / "transfers.jsonl")
        assert sorted(i for _, i in last) == list(range(300))  # every file has its final row
        states = {r["file_state"] for r in last.values()}
        assert "CANCELED" in states and states <= {"FINISHED", "CANCELED"}
        assert len(lines(records / "campaigns.jsonl")) == 1
        m = json.loads((out / "c" / "manifest.json").read_text())
        assert m["status"] == "interrupted"
        s.assert_clean(f"after {signal.Signals(sig).name}")


PROBE_MATRIX = """
name: fault-probe
defaults:
  probe: {{runtime: {runtime}, size: 8M, iodepth: 2}}
backends:
  tmpfs: {{size: 56M, probe: {{patterns: [write]}}}}
  cephfs: {{layouts: [{{stripe_unit: 1M, stripe_count: 1, object_size: 1M}}], pools: [replicated]}}
"""
# the signal comes during the second cell's (CephFS) fio: the first cell (tmpfs) probes one job, so
# its complete rows are on stdout first without three jobs waited out


@pytest.mark.parametrize("sig", [ONE["probe"]], ids=["TERM"])
def test_probe_stops_fio_and_unmounts_on_a_signal(ceph_cluster, sig):
    with scene("xcb-fault-probe-") as s:
        m = s.root / "m.yaml"
        m.write_text(PROBE_MATRIX.format(runtime=30))  # long enough to be mid-fio when signalled
        cli = s.start("probe", str(m), "--runtime", "2", "--json",
                      "--ceph-conf", str(ceph_cluster.conf))
        cli.wait_for(lambda: cli.out, "the first cell's rows on stdout")
        cli.wait_for(lambda: sum("probe:" in ln for ln in cli.err) >= 2, "the second probe")
        cli.wait_for(lambda: any("fio" in c for c in s.processes().values()), "fio running")
        first = list(cli.out)
        cli.p.send_signal(sig)
        rc = cli.finish()
        assert rc == 130, cli.stderr
        assert "Traceback" not in cli.stderr and "interrupted" in cli.stderr
        assert cli.out[:len(first)] == first and all(json.loads(ln) for ln in cli.out)
        assert {json.loads(ln)["cell_id"] for ln in cli.out} == {json.loads(first[0])["cell_id"]}
        s.assert_clean(f"after {signal.Signals(sig).name}")


@pytest.mark.parametrize("sig", [ONE["run"]], ids=["HUP"])
def test_run_stops_on_a_signal_and_resumes(ceph_cluster, sig):
    with scene("xcb-fault-run-") as s:
        r = start_run(s, ceph_cluster.conf)
        r.cli.p.send_signal(sig)
        rc = r.cli.finish()
        assert rc == 130, r.cli.stderr
        assert "Traceback" not in r.cli.stderr and "--resume" in r.cli.stderr
        assert lines(r.records / "transfers.jsonl")[:len(r.before)] == r.before
        man = json.loads((r.out / r.name / "manifest.json").read_text())
        assert man["status"] == "interrupted"
        assert "interrupted" in {c["status"] for c in man["cells"].values()}
        s.assert_clean(f"after {signal.Signals(sig).name}")

        cp = s.run("run", "--resume", str(r.out / r.name), *r.common)
        assert cp.returncode == 0, cp.stderr
        check_complete(r.out / r.name, files=100)
        s.assert_clean("after --resume")


def held_fts(free: int):
    """An FTS3 double whose agent transfers a job's first ``free`` files and holds the next one
    in flight (ACTIVE) until the job is cancelled: the job is surely still running when the
    test signals xcbench, however fast the box is."""
    import threading

    from tests.support.fts3_double import Fts3Double, _now

    class HeldFts(Fts3Double):
        def __init__(self) -> None:
            super().__init__()
            self.held = threading.Event()  # a file is held in flight
            self._started = 0

        def _run_file(self, job, f, link):
            with self._lock:
                n, self._started = self._started, self._started + 1
            if n >= free and not job["_cancel"]:
                f.update(file_state="ACTIVE", start_time=_now())
                self.held.set()
                while not job["_cancel"]:  # DELETE /jobs/<id> (or the double's stop) sets it
                    time.sleep(0.05)
            super()._run_file(job, f, link)
    return HeldFts()


def test_fts_campaign_streams_records_and_cancels_its_job_on_a_signal():
    with scene("xcb-fault-fts-") as s, held_fts(free=3) as fts:
        out = s.root / "results"
        cli = s.start("campaign", "--gateway", "tmpfs", "--source", "tmpfs", "--mode", "tpc-http",
                      "--files", "60", "--size", "4M", "--concurrency", "1", "--fts", fts.url,
                      "--store", str(out), "--run-name", "f", "--no-progress",
                      env={"FTS_TOKEN": fts.token})
        records = out / "f" / "records"
        cli.wait_for(flushed(records / "transfers.jsonl", 3), "the free files' streamed records")
        cli.wait_for(fts.held.is_set, "a transfer held in flight")
        job = next(iter(fts.jobs.values()))
        assert job["job_state"] == "ACTIVE"  # rows arrive while the job runs, not at its end
        cli.p.send_signal(signal.SIGTERM)
        rc = cli.finish()
        assert rc == 130, cli.stderr
        assert job["_cancel"] and job["job_state"] == "CANCELED"  # cancelled through the REST API
        last = final_rows(records / "transfers.jsonl")
        assert sorted(i for _, i in last) == list(range(60))
        assert sum(r["file_state"] == "FINISHED" for r in last.values()) == 3  # the free ones
        states = {r["file_state"] for r in last.values()}
        assert states == {"FINISHED", "CANCELED"}
        assert json.loads((out / "f" / "manifest.json").read_text())["status"] == "interrupted"
        s.assert_clean("after SIGTERM to an --fts campaign")


GATEWAY_MATRIX = """
name: fault-gateway
backends:
  tmpfs: {size: 40M}
"""


@pytest.mark.parametrize("sig", SIGNALS, ids=IDS)
def test_gateway_up_stopped_while_starting(sig):
    """`gateway up --wait` signalled once its xrootd is spawned: the gateway and its tmpfs go."""
    with scene("xcb-fault-gw-") as s:
        m = s.root / "m.yaml"
        m.write_text(GATEWAY_MATRIX)
        from xcbench.matrix import load_matrix
        cid = load_matrix(m).cells[0].id
        cli = s.start("gateway", "up", "--matrix", str(m), "--cell", cid,
                      "--workdir", str(s.tmp / "gw"), "--wait")
        cli.wait_for(lambda: any("xrootd" in c for c in s.processes().values()), "xrootd spawned")
        cli.p.send_signal(sig)
        rc = cli.finish()
        assert rc in (0, 130), cli.stderr  # 0: it was already up, and `down` ran
        assert "Traceback" not in cli.stderr
        assert not (s.tmp / "gw" / "gateway.json").exists()
        s.assert_clean(f"after {signal.Signals(sig).name}")
