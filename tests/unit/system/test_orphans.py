"""xcbench.system.orphans: what a command starts is recorded; after a kill -9 the next command stops
exactly those processes (pid, start time and command line), unmounts, and says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from xcbench.system import mounts, orphans, proc, statedir
from xcbench.system.mounts import is_mount_point


@pytest.fixture
def records(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    yield tmp_path / "home" / "procs"
    orphans.stop()


def _dead_owner_record(directory, procs, mounts=()):
    """A record as a command killed with -9 leaves it: its owner is gone."""
    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    owner.wait()
    directory.mkdir(parents=True, exist_ok=True)
    f = directory / f"{owner.pid}.json"
    f.write_text(json.dumps({"host": statedir.HOST, "uid": os.geteuid(),
                             "owner": {"pid": owner.pid, "start": 1.0, "cmdline": ["x"]},
                             "procs": procs, "mounts": list(mounts)}))
    return f


def test_a_spawned_process_is_recorded_while_it_runs_and_forgotten_when_stopped(records):
    orphans.start()
    ps = proc.ProcessSet()
    p = proc.spawn(["sleep", "30"], procs=ps)
    rec = json.loads((records / f"{os.getpid()}.json").read_text())
    assert [r["pid"] for r in rec["procs"]] == [p.pid]
    assert rec["procs"][0]["cmdline"][-1] == "30" and rec["procs"][0]["pgid"] == p.pid
    assert rec["owner"]["pid"] == os.getpid()
    ps.stop_all()
    assert not (records / f"{os.getpid()}.json").exists()  # nothing left to name


def test_a_set_that_does_not_record_is_not_recorded(records):
    orphans.start()
    ps = proc.ProcessSet(record=False)  # the mini cluster's daemons: they outlive commands
    proc.spawn(["sleep", "30"], procs=ps)
    try:
        assert not (records / f"{os.getpid()}.json").exists()
    finally:
        ps.stop_all()


def test_the_next_command_stops_the_orphans_of_a_killed_one(records):
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        ident = orphans.identity(child.pid) | {"name": "sleep"}
        f = _dead_owner_record(records, [ident])
        said = orphans.reap()
        assert child.wait(timeout=15) is not None
        assert said.startswith("xcbench: an earlier xcbench") and "stopped 1 processes (sleep)" in said
        assert not f.exists()
    finally:
        child.kill()


def test_a_recycled_pid_is_never_signalled(records):
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        other_start = orphans.identity(child.pid) | {"start": time.time() - 3600}
        other_cmd = orphans.identity(child.pid) | {"cmdline": ["xrootd", "-c", "x.cfg"]}
        _dead_owner_record(records, [other_start, other_cmd])
        assert orphans.reap() is None
        time.sleep(0.2)
        assert child.poll() is None  # same pid, another process: left alone
    finally:
        child.kill()
        child.wait()


def test_a_live_owners_record_is_left_alone(records):
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        records.mkdir(parents=True)
        me = orphans.identity(os.getppid())  # alive: pytest's parent
        (records / f"{os.getppid()}.json").write_text(json.dumps(
            {"owner": me, "procs": [orphans.identity(child.pid)], "mounts": []}))
        assert orphans.reap() is None and child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_an_exec_shim_is_the_same_process():
    then = ["/usr/bin/python3", "-m", "xcbench.system.sdlisten", "--listen", "127.0.0.1:1", "--",
            "xrootd", "-c", "a.cfg"]
    assert orphans._same_command(then, ["xrootd", "-c", "a.cfg"])
    assert orphans._same_command(["/usr/bin/fio", "j.fio"], ["fio", "j.fio"])
    assert not orphans._same_command(then, ["xrootd", "-c", "b.cfg"])
    assert not orphans._same_command(["fio", "j.fio"], [])


def test_mount_and_umount_through_proc_follow_the_record(records, tmp_path):
    rec = orphans.start()
    rec.mount_change(["/bin/mount", "-t", "tmpfs", "-o", "size=1M", "xcbench-x", str(tmp_path / "m")])
    assert list(rec.mounts) == [str(tmp_path / "m")] and rec.mounts[str(tmp_path / "m")]["fstype"] == "tmpfs"
    rec.mount_change(["/bin/umount", "-l", str(tmp_path / "m")])
    assert rec.mounts == {}


def test_a_killed_commands_mount_is_unmounted(records, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "xcb-orphan-test", str(mnt)], check=True)
    try:
        _dead_owner_record(records, [], [{"path": str(mnt), "fstype": "tmpfs"}])
        said = orphans.reap()
        assert f"unmounted 1 ({mnt})" in said
        assert not is_mount_point(mnt) and not mnt.exists()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False, capture_output=True)


def test_a_killed_commands_scratch_dir_goes_but_never_across_a_mount(records, tmp_path):
    plain, held = tmp_path / "xcb-plain", tmp_path / "xcb-held"
    for d in (plain, held):
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "f").write_text("x")
    real_table = mounts.mount_table
    try:  # something mounted below ``held``: it must stay, with all it holds
        mounts.mount_table = lambda: [*real_table(), (held / "sub", "tmpfs")]
        _dead_owner_record(records, [], ())
        f = next(records.glob("*.json"))
        rec = json.loads(f.read_text())
        f.write_text(json.dumps({**rec, "dirs": [str(plain), str(held)]}))
        orphans.reap()
    finally:
        mounts.mount_table = real_table
    assert not plain.exists() and (held / "sub" / "f").exists()
