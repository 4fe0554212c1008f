"""The mount table helpers of xcbench.ceph.mounts, and proc.stop_pids (the mini cluster's teardown),
on this machine's real /proc and real processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from xcbench.system import mounts, proc


def test_mount_table_has_root_and_proc():
    table = dict(mounts.mount_table())
    assert Path("/") in table and table.get(Path("/proc")) == "proc"


def test_is_mount_point_and_mounts_under(tmp_path):
    assert mounts.is_mount_point("/") and mounts.is_mount_point("/proc")
    assert not mounts.is_mount_point(tmp_path)
    link = tmp_path / "proc-link"
    link.symlink_to("/proc")
    assert mounts.is_mount_point(link)  # symlinks resolved
    assert Path("/proc") in mounts.mounts_under("/")
    assert Path("/") not in mounts.mounts_under("/")
    assert mounts.mounts_under(tmp_path) == []


def test_unescaped_mount_points():
    assert mounts._unescape(r"/tmp/a\040b\011c") == "/tmp/a b\tc"


STUBBORN = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(30)"


def _spawn(*cmd: str) -> subprocess.Popen:
    p = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, start_new_session=True)
    if "python" in cmd[0]:
        p.stdout.readline()  # its SIGTERM handler is in place
    return p


def test_stop_pids_terms_then_kills_after_each_grace():
    polite = _spawn("sleep", "30")
    stubborn = _spawn(sys.executable, "-c", STUBBORN)
    t0 = time.monotonic()
    proc.stop_pids({polite.pid: 5.0, stubborn.pid: 1.0})
    took = time.monotonic() - t0
    assert not proc.pid_alive(polite.pid) and not proc.pid_alive(stubborn.pid)
    # the polite one went on SIGTERM (not after its 5 s grace); the stubborn one ignored
    # SIGTERM and was killed after its 1 s
    assert 1.0 <= took < 5.0


def test_stop_pids_per_pid_signal():
    p = _spawn(sys.executable, "-c", STUBBORN)
    t0 = time.monotonic()
    proc.stop_pids({p.pid: 10.0}, sig={p.pid: 9})
    assert not proc.pid_alive(p.pid) and time.monotonic() - t0 < 10.0
