"""xcbench.system.blkio on this host's kernel: a write throttle holds a direct-I/O writer to its rate,
the group counts its writes, and nothing of it is left behind."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from xcbench.system.blkio import IoGroups, device_of, why_not
from xcbench.system.cgroups import CgroupError, Registry

SCRATCH = Path("/var/tmp")
WHY = why_not(SCRATCH)
pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(WHY), reason=WHY or "blkio")]


def test_a_bytes_throttle_holds_a_direct_writer_and_the_group_goes(tmp_path):
    dev = device_of(SCRATCH)
    target = SCRATCH / f"xcb-blkio-test-{os.getpid()}"
    limit = 4 << 20  # 4 MiB/s: 12 MiB take >= ~2 s (the first burst may pass unthrottled)
    with IoGroups(tmp_path, run=f"t{os.getpid()}") as groups:
        g = groups.create("dd", dev, write_bytes_per_s=limit)
        assert Registry(tmp_path).entries()  # recorded before it was made
        # the shell waits for a line, so dd starts (exec: the same pid) inside the group
        p = subprocess.Popen(["sh", "-c", f'read x; exec dd if=/dev/zero of="{target}" bs=1M count=12 '
                              "oflag=direct"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            g.add(p.pid)
            t0 = time.monotonic()
            assert p.stdin is not None
            p.stdin.write(b"go\n")
            p.stdin.close()
            assert p.wait(timeout=60) == 0
            took = time.monotonic() - t0
        finally:
            target.unlink(missing_ok=True)
        ios, nbytes = g.written()
        assert nbytes >= 12 << 20 and ios >= 12, (ios, nbytes)
        assert took >= 1.0, f"12 MiB at a 4 MiB/s throttle took {took:.2f} s"
        path = g.path
    assert not path.exists() and Registry(tmp_path).entries() == []


def test_no_throttle_on_a_virtual_file_system():
    with pytest.raises(CgroupError, match="no block device"):
        device_of(Path("/proc/self/status"))
