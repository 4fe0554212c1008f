"""A campaign's stop cancels its gfal2 contexts; the cleanup of a canceled attempt must still
remove what the attempt wrote. gfal2_cancel refuses every new operation on its context until the
running ones have drained: a FIFO nobody writes holds one open, so the cancel stays draining for
as long as the test needs."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

import gfal2
import pytest

from tests.support.waits import until
from xcbench.clients.gfal2_client import Gfal2Client


def _refused(ctx, url: str) -> bool:
    try:
        ctx.stat(url)
    except gfal2.GError as e:
        return e.code == errno.ECANCELED
    return False


def test_a_delete_during_a_draining_cancel_still_removes_the_file(tmp_path):
    client = Gfal2Client()
    fifo, partial = tmp_path / "fifo", tmp_path / "partial"
    os.mkfifo(fifo)
    partial.write_bytes(b"x" * 4096)
    tid: list[int] = []

    def blocker_open() -> None:
        tid.append(threading.get_native_id())
        client.ctx.open(f"file://{fifo}", "r")

    blocker = threading.Thread(target=blocker_open)
    canceller = threading.Thread(target=client.cancel)
    blocker.start()
    try:
        # the open waits in the kernel for a writer: an operation in flight on the context
        assert until(lambda: bool(tid) and Path(f"/proc/self/task/{tid[0]}/wchan").read_text()
                     == "wait_for_partner", 10, 0.01), "the open never waited on the FIFO"
        canceller.start()
        # the cancel waits for that open: new operations on the context are refused meanwhile
        assert until(lambda: _refused(client.ctx, f"file://{tmp_path}"), 10, 0.01), "no cancel draining"
        assert canceller.is_alive()
        with pytest.raises(gfal2.GError) as refused:  # what the old cleanup met on its context
            client.ctx.unlink(f"file://{partial}")
        assert refused.value.code == errno.ECANCELED
        assert client.delete(f"file://{partial}")
        assert not partial.exists()
    finally:
        with open(fifo, "w"):  # a writer lets the open return, and the cancel end
            blocker.join(10)
        if canceller.ident is not None:
            canceller.join(10)
    assert not blocker.is_alive() and not canceller.is_alive()


# a fresh interpreter: gfal2 loads its plugins once per process, with the first context
MASK_PROBE = """
import os, signal, subprocess
from xcbench.campaign.readers import Gfal2Reader
from xcbench.clients.gfal2_client import Gfal2Client
before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
Gfal2Client(), Gfal2Reader()
after = signal.pthread_sigmask(signal.SIG_BLOCK, [])
child = subprocess.run(["grep", "SigBlk", "/proc/self/status"], capture_output=True, text=True)
print(sorted(before), sorted(after), child.stdout.split()[1])
"""


def test_a_gfal2_context_leaves_the_threads_signal_mask_and_its_children_as_they_were():
    out = subprocess.run([sys.executable, "-c", MASK_PROBE], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split("] ")
    assert out[0] + "]" == "[]" and out[1] + "]" == "[]", out  # no signal blocked, before and after
    assert int(out[2], 16) == 0  # a process started afterwards blocks nothing either
