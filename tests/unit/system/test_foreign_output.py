"""A process run as another uid (xcbench.system.proc.run with ``user``) is that user's: it can
be made to write without end, so what root keeps of its stdout and stderr is bounded."""

from __future__ import annotations

import psutil
import pytest

from xcbench.errors import XcbError
from xcbench.system import proc

NOBODY = (65534, 65534)


def test_output_over_the_bound_stops_the_process_and_says_so(monkeypatch):
    monkeypatch.setattr(proc, "FOREIGN_OUTPUT", 1 << 20)
    with pytest.raises(XcbError, match="yes: over 1 MiB of output from a process running as another user"):
        proc.run(["yes", "a-line-without-end"], user=NOBODY, timeout=60)
    left = [p.pid for p in psutil.process_iter(["name", "uids"])
            if p.info["name"] == "yes" and p.info["uids"] and p.info["uids"].real == NOBODY[0]]
    assert not left


def test_within_the_bound_input_and_output_pass_as_before():
    text = "".join(f"line {i}\n" for i in range(20000))  # more than a pipe's buffer each way
    cp = proc.run(["cat"], user=NOBODY, input=text, timeout=60)
    assert cp.returncode == 0 and cp.stdout == text and cp.stderr == ""
    cp = proc.run(["sh", "-c", "echo out; echo err >&2; exit 3"], user=NOBODY, check=False, timeout=60)
    assert (cp.returncode, cp.stdout, cp.stderr) == (3, "out\n", "err\n")
    with pytest.raises(XcbError, match="timed out"):
        proc.run(["sleep", "30"], user=NOBODY, timeout=0.5)
