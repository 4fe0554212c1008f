"""xcbench.selftest.lifts on this host's kernel: the limits xcbench made that hold a process (a CPU
quota, a device write throttle) are found; one is lifted in place for a block (the process stays
in its group) and restored after it; a lift left behind (a confirm killed) is restored by the
next; a group xcbench did not record is never touched."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.quota import needs_quota
from xcbench.errors import XcbError
from xcbench.selftest import lifts
from xcbench.system.blkio import IoGroups, device_of
from xcbench.system.blkio import why_not as blkio_why_not
from xcbench.system.cgroups import CpuGroups

SCRATCH = Path("/var/tmp")
WHY = blkio_why_not(SCRATCH)
pytestmark = [pytest.mark.integration, needs_quota, pytest.mark.skipif(bool(WHY), reason=WHY or "blkio")]


def test_limits_xcbench_made_are_found_lifted_in_place_and_restored(tmp_path):
    dev = device_of(SCRATCH)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        with CpuGroups(tmp_path, run=f"lift{os.getpid()}") as cpu, \
                IoGroups(tmp_path, run=f"lift{os.getpid()}") as io:
            g = cpu.create("osd", 0.2)
            b = io.create("osd", dev, write_bytes_per_s=20_000_000, write_iops=300)
            g.add(sleeper.pid)
            b.add(sleeper.pid)
            got = lifts.found([sleeper.pid], tmp_path)
            assert got["cpu"]["cores"] == pytest.approx(0.2) and got["cpu"]["group"] == str(g.path)
            assert got["write_bytes_per_s"]["value"] == 20_000_000 and got["write_bytes_per_s"]["dev"] == dev
            assert got["write_iops"]["value"] == 300
            with lifts.lifted(got["write_bytes_per_s"], 40_000_000, tmp_path):
                assert (b.path / lifts.BYTES_FILE).read_text().split() == [dev, "40000000"]
                assert str(sleeper.pid) in (b.path / "cgroup.procs").read_text().split()  # still in its group
                rec = json.loads((tmp_path / lifts.RECORD).read_text())
                assert rec[0]["value"] == 20_000_000 and rec[0]["new"] == 40_000_000
            assert (b.path / lifts.BYTES_FILE).read_text().split() == [dev, "20000000"]
            assert json.loads((tmp_path / lifts.RECORD).read_text()) == []
            # a confirm killed mid-arm: its lift stays recorded, the next one restores it
            left = lifts.lifted(got["cpu"], 40000, tmp_path)
            left.__enter__()
            assert int((g.path / "cpu.cfs_quota_us").read_text()) == 40000
            assert lifts.restore_left(tmp_path) == [str(g.path)]
            assert int((g.path / "cpu.cfs_quota_us").read_text()) == 20000
            with contextlib.suppress(Exception):
                left.__exit__(None, None, None)  # its own restore finds nothing left to do
            assert int((g.path / "cpu.cfs_quota_us").read_text()) == 20000
        assert lifts.found([sleeper.pid], tmp_path) == {}  # the groups are gone: nothing of xcbench's
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_group_xcbench_did_not_record_is_never_touched(tmp_path):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        with CpuGroups(tmp_path / "a", run=f"lift{os.getpid()}") as cpu:
            g = cpu.create("other", 0.3)
            g.add(sleeper.pid)
            assert lifts.found([sleeper.pid], tmp_path / "b") == {}  # another registry's
            fake = {"group": str(g.path), "file": "cpu.cfs_quota_us", "value": 30000, "cores": 0.3}
            with pytest.raises(XcbError, match="not a limit of a group xcbench made"), \
                    lifts.lifted(fake, 60000, tmp_path / "b"):
                pass
            assert int((g.path / "cpu.cfs_quota_us").read_text()) == 30000
    finally:
        sleeper.kill()
        sleeper.wait()
