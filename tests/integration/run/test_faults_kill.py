"""Harder faults on the real mini cluster: `kill -9` of the run driver (the next command stops
the orphans it left and says so; `--resume` completes the run), and a result store that fills
up mid-run (the loss is recorded, the run goes on and ends cleanly)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.faults import check_complete, flushed, lines, run_matrix, scene, start_run

pytestmark = pytest.mark.integration


def test_kill9_of_the_run_then_orphans_reaped_then_resume(ceph_cluster):
    with scene("xcb-fault-kill-") as s:
        r = start_run(s, ceph_cluster.conf)
        name, out, records, before = r.name, r.out, r.records, r.before
        r.cli.p.send_signal(signal.SIGKILL)
        assert r.cli.finish() == -signal.SIGKILL
        left = s.processes()
        assert any("xrootd" in c for c in left.values()), left  # orphans of the dead driver
        assert s.mounts()  # and the cell's tmpfs
        assert list((s.home / "procs").glob("*.json"))

        cp = s.run("run", "--resume", str(out / name), *r.common)
        assert cp.returncode == 0, cp.stderr
        said = [ln for ln in cp.stderr.splitlines() if "was killed and left" in ln]
        assert len(said) == 1 and "xrootd" in said[0] and "unmounted" in said[0], cp.stderr
        assert f"xcbench-{name}-" in said[0] and "scratch dirs" in said[0], cp.stderr
        assert "Traceback" not in cp.stderr
        kept = lines(records / "transfers.jsonl") + lines(records / "superseded" / "transfers.jsonl")
        assert all(ln in kept for ln in before if ln.endswith("\n"))  # kept or superseded, not lost
        check_complete(out / name, files=100)
        s.assert_clean("after the resume reaped the orphans")
        assert not list(Path("/var/tmp").glob(f"xcbench-{name}-*"))  # the killed run's scratch too


def _fill(path) -> int:
    """Write into ``path`` until the file system is full; returns the bytes written."""
    n = 0
    with open(path, "wb", buffering=0) as fh:
        while True:
            try:
                n += fh.write(b"\0" * (64 << 10))
            except OSError as e:
                assert e.errno == errno.ENOSPC
                return n


def test_a_result_store_that_fills_up_mid_run(ceph_cluster):
    with scene("xcb-fault-full-") as s:
        m, name = run_matrix(s, files=60, sizes="72M")
        store = s.root / "store"
        store.mkdir()
        # mode 0755: a tmpfs is 1777 by default, and a store others may write is refused
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2M,mode=0755", "xcb-fault-full",
                        str(store)], check=True)
        try:
            cli = s.start("run", str(m), "--store", str(store), "--run-name", name,
                          "--ceph-conf", str(ceph_cluster.conf), "--no-probes", "--no-baseline",
                          "--telemetry", "host:0.2")
            records = store / name / "records"
            # The first telemetry sample: the cell is running. Its campaign hands all its
            # transfer rows over at the end here (a short campaign), so waiting for those would
            # fill the disk after the last of them about one run in ten.
            cli.wait_for(flushed(records / "samples.jsonl", 1), "the first telemetry samples")
            _fill(store / "filler")  # the disk is full from here on, mid-cell
            rc = cli.finish(timeout=300)
            assert rc in (0, 1), cli.stderr
            assert "Traceback" not in cli.stderr
            # The filler takes every block the disk frees, yet the final manifest landed, in the
            # room the run's reserve slots hold (xcbench.store.reserve), and says what was lost.
            man = json.loads((store / name / "manifest.json").read_text())
            assert man["status"] in ("complete", "partial"), (man["status"], cli.stderr)
            assert "manifest.json not updated" not in cli.stderr
            lost = man.get("lost_rows") or {}
            assert sum(v["rows"] for v in lost.values()) > 0, (lost, cli.stderr)
            assert all("No space left on device" in v["error"] for v in lost.values())
            kept = sum(1 for ln in lines(records / "transfers.jsonl") if ln.endswith("\n"))
            assert kept + lost.get("transfers", {}).get("rows", 0) >= 60  # each file accounted for
            assert "records lost" in cli.stderr  # said to the user too, not only in a file
            assert {c["status"] for c in man["cells"].values()} <= {"complete", "degraded"}
            assert not list((store / name).glob(".reserve*"))  # given back at the end
            s.assert_clean("after a full result store", keep=(str(store),))
        finally:
            subprocess.run(["umount", "-l", str(store)], check=False)
            os.rmdir(store)
