"""The /dev/shm staging of a push campaign (LocalSource) is recorded like the other orphans: a
`kill -9` of the driver leaves it, and the next xcbench command removes it and says so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from xcbench.campaign.dataset import Dataset
from xcbench.campaign.staging import LocalSource
from xcbench.system import mounts, orphans, statedir


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XCBENCH_STATE", raising=False)
    yield tmp_path / "home"
    orphans.stop()


DRIVER = textwrap.dedent("""
    import os, signal, sys
    from xcbench.system import orphans; from xcbench.system import statedir
    from xcbench.campaign.dataset import Dataset
    from xcbench.campaign.staging import LocalSource
    orphans.start()
    local = LocalSource(Dataset.generate(3, 4096), "c1", base=sys.argv[1])
    local.stage_all()
    print(local.dir, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # the driver is killed: no cleanup runs
""")


def test_staging_left_by_a_killed_driver_is_removed_by_the_next_command(home, tmp_path):
    shm = tmp_path / "shm"
    shm.mkdir()
    cp = subprocess.run([sys.executable, "-c", DRIVER, str(shm)], capture_output=True, text=True,
                        env={**os.environ, "XCBENCH_HOME": str(home)}, timeout=60)
    assert cp.returncode == -signal.SIGKILL, cp.stderr
    [staged] = shm.glob("xcb-push-c1-*")  # a private dir of a random name
    assert cp.stdout.strip() == str(staged) and len(list(staged.iterdir())) == 3
    assert oct(staged.stat().st_mode & 0o777) == "0o700"
    [record] = (home / "procs").glob("*.json")
    assert [d["path"] for d in json.loads(record.read_text())["dirs"]] == [str(staged)]

    said = orphans.reap()
    assert said is not None and "removed 1 scratch dirs" in said and str(staged) in said
    assert not staged.exists() and not record.exists()
    assert orphans.reap() is None  # said once


def test_staging_removed_by_its_cleanup_leaves_no_record(home, tmp_path):
    orphans.start()
    local = LocalSource(Dataset.generate(2, 4096), "c2", base=str(tmp_path))
    local.stage_all()
    record = home / "procs" / f"{os.getpid()}.json"
    assert [d["path"] for d in json.loads(record.read_text())["dirs"]] == [str(local.dir)]
    local.cleanup()
    assert not local.dir.exists() and not record.exists()


def test_a_killed_driver_record_keeps_a_dir_with_a_mount_below_it(home, tmp_path, monkeypatch):
    """remove_dir never crosses a mount: such a dir is left, and not reported as removed."""
    d = tmp_path / "xcb-scratch"
    (d / "mnt").mkdir(parents=True)
    monkeypatch.setattr(mounts, "mount_table", lambda: [(d / "mnt", "tmpfs")])
    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    owner.wait()
    (home / "procs").mkdir(parents=True)
    (home / "procs" / f"{owner.pid}.json").write_text(json.dumps(
        {"host": statedir.HOST, "uid": os.getuid(),
         "owner": {"pid": owner.pid, "start": 1.0, "cmdline": ["x"]}, "procs": [],
         "mounts": [], "dirs": [str(d)]}))
    assert orphans.reap() is None
    assert (d / "mnt").is_dir()
