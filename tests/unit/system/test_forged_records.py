"""State that does not prove it is ours is never acted on: a forged or foreign record of each kind
(process record, cgroup registry, emulated-hosts record, gateway.json) is named in one line and
left alone, and what it names stays. Records keep no secret of a command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xcbench import cli
from xcbench.hosts import emulate
from xcbench.system import cgroups, orphans, statedir


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XCBENCH_STATE", raising=False)
    statedir.ensure(tmp_path / "home" / "procs")
    yield tmp_path / "home"
    orphans.stop()


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _record(home: Path, **over) -> Path:
    owner = _dead_pid()
    rec = {"version": 2, "host": statedir.HOST, "uid": os.geteuid(),
           "owner": {"pid": owner, "start": 1.0, "cmdline": ["xcbench", "run"]},
           "procs": [], "mounts": [], "dirs": [], **over}
    f = home / "procs" / f"{owner}.json"
    f.write_text(json.dumps(rec))
    f.chmod(0o600)
    return f


def _precious(tmp_path: Path, name: str = "precious") -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "data").write_text("keep me")
    return d


def _left_alone(f: Path, capsys, why: str) -> None:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if str(f) in ln]
    assert len(lines) == 1 and "left alone" in lines[0] and why in lines[0], err
    assert f.exists()


def test_a_record_naming_a_dir_xcbench_never_makes_is_left_alone(home, tmp_path, capsys):
    victim = _precious(tmp_path)
    f = _record(home, dirs=[str(victim)])
    assert orphans.reap() is None
    _left_alone(f, capsys, "not named xcb-* or xcbench-* or xcbgw-* or xcbsec-*")
    assert (victim / "data").read_text() == "keep me"


def test_a_recorded_scratch_dir_swapped_for_a_link_is_not_followed(home, tmp_path, capsys):
    victim = _precious(tmp_path)
    link = tmp_path / "xcb-push-c1-0123"
    link.symlink_to(victim)
    f = _record(home, dirs=[{"path": str(link), "uid": os.geteuid()}])
    assert orphans.reap() is None
    _left_alone(f, capsys, "not a directory (a symlink is never followed)")
    assert (victim / "data").read_text() == "keep me"


def test_a_scratch_dir_of_another_user_is_not_removed(home, tmp_path, capsys, other_user):
    theirs = _precious(tmp_path, "xcb-tmpfs-c1-theirs")
    os.chown(theirs, other_user.uid, other_user.gid)
    f = _record(home, dirs=[{"path": str(theirs), "uid": os.geteuid()}])
    assert orphans.reap() is None
    _left_alone(f, capsys, f"owned by uid {other_user.uid}")
    assert (theirs / "data").exists()


def test_a_record_written_by_another_user_kills_nothing(home, tmp_path, capsys, other_user):
    """The record names a live process with its true identity: only the file's owner says it
    is not ours (another user who could write in the state dir)."""
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        f = _record(home, procs=[orphans.identity(child.pid) | {"name": "sleep"}])
        os.chown(f, other_user.uid, other_user.gid)
        assert orphans.reap(grace=2) is None
        _left_alone(f, capsys, f"owned by uid {other_user.uid}")
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_a_record_of_another_host_is_left_to_that_host(home, tmp_path, capsys):
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        f = _record(home, host="gw-02.example.org",
                    procs=[orphans.identity(child.pid) | {"name": "sleep"}])
        assert orphans.reap(grace=2) is None
        _left_alone(f, capsys, "written on host 'gw-02.example.org'")
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_a_record_naming_a_mount_xcbench_never_makes_is_not_unmounted(home, tmp_path, capsys,
                                                                      monkeypatch):
    unmounted = []
    monkeypatch.setattr(orphans, "_unmount", lambda m: unmounted.append(m) or True)
    f = _record(home, mounts=[{"path": "/", "fstype": "ext4"}])
    assert orphans.reap() is None
    _left_alone(f, capsys, "type 'ext4' is not one xcbench makes")
    assert unmounted == []


def test_records_keep_no_secret_and_still_match_their_process(home):
    secret = "s3cr3t-AQBvalue-of-a-key=="
    rec = orphans.start()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                              "--mkfs", "--key", secret], start_new_session=True)
    try:
        for _ in range(200):  # exec: the argv is there once python runs
            if orphans.identity(child.pid) and "--key" in orphans.identity(child.pid)["cmdline"]:
                break
            time.sleep(0.01)
        rec.add(child.pid, "osd-mkfs", [])
        text = rec.path.read_text()
        assert secret not in text and "--key" in text
        [entry] = json.loads(text)["procs"]
        assert orphans.same_process(entry)  # the redacted word stands for the secret
        # a kill -9 of the owner: the next command still finds and stops it
        data = json.loads(text)
        data["owner"] = {"pid": _dead_pid(), "start": 1.0, "cmdline": ["x"]}
        rec.procs.clear()
        rec.path.unlink()
        f = home / "procs" / "1234567.json"
        statedir.write_private(f, json.dumps(data))
        said = orphans.reap(grace=5)
        assert said is not None and "osd-mkfs" in said
        assert child.wait(timeout=10) is not None
    finally:
        child.kill()
        child.wait()


def test_the_owner_command_line_is_redacted_on_disk(home, monkeypatch):
    monkeypatch.setattr(orphans, "identity", lambda pid: {
        "pid": pid, "start": 1.0, "cmdline": ["xcbench", "campaign", "--fts-token", "tok-123456"]})
    rec = orphans.Recorder(home / "procs")
    rec.add_dir("/dev/shm/xcb-x")
    assert "tok-123456" not in rec.path.read_text()
    rec.drop_dir("/dev/shm/xcb-x")


# ---- the cgroup registry ------------------------------------------------------------------------
def test_a_registry_entry_outside_the_cgroup_tree_is_never_written_to(home, tmp_path, capsys):
    """remove_group moves a group's pids into its parent's task list: a forged entry could
    name any xcb-* dir and so any file named cgroup.procs/tasks."""
    fake_parent = tmp_path / "notacgroup"
    (fake_parent / "xcb-evil").mkdir(parents=True)
    (fake_parent / "cgroup.procs").write_text("precious\n")
    (fake_parent / "xcb-evil" / "tasks").write_text(f"{os.getpid()}\n")
    reg = home / cgroups.STATE_FILE
    reg.write_text(json.dumps([{"path": str(fake_parent / "xcb-evil"), "owner": _dead_pid(),
                                "created": time.time(), "host": statedir.HOST}]))
    reg.chmod(0o600)
    assert cgroups.sweep_stale() == []
    assert (fake_parent / "cgroup.procs").read_text() == "precious\n"
    assert (fake_parent / "xcb-evil").is_dir()
    err = capsys.readouterr().err
    assert "left alone" in err and "is not a cgroup under /sys/fs/cgroup" in err


def test_a_registry_of_another_user_is_not_read(home, capsys, other_user):
    reg = home / cgroups.STATE_FILE
    reg.write_text(json.dumps([{"path": "/sys/fs/cgroup/cpu/xcb-x", "owner": _dead_pid(),
                                "host": statedir.HOST}]))
    os.chown(reg, other_user.uid, other_user.gid)
    assert cgroups.Registry().entries() == []
    assert f"owned by uid {other_user.uid}" in capsys.readouterr().err


# ---- emulated hosts -------------------------------------------------------------------------------
def test_hosts_down_deletes_only_xcb_links_of_its_own_records(home, monkeypatch, capsys, other_user):
    ran = []
    monkeypatch.setattr(emulate.proc, "run", lambda cmd, **kw: ran.append(cmd))
    monkeypatch.setattr(emulate.Path, "exists", lambda self: True)
    r = emulate.Record(home / "hosts-br0.json")
    r.data["bridge"] = {"name": "br0"}
    r.add(kind="link", name="br0")  # the host's own bridge: the old name check accepted it
    r.add(kind="link", name="xcb0")
    r.add(kind="link", name="eth0")
    emulate.teardown(r)
    assert [c[-1] for c in ran if c[:3] == ["ip", "link", "delete"]] == ["xcb0"]
    ran.clear()
    r.path.unlink(missing_ok=True)
    theirs = emulate.Record(home / "hosts-xcb1.json")
    theirs.add(kind="link", name="xcb1")
    os.chown(theirs.path, other_user.uid, other_user.gid)
    done, left = emulate.down()
    assert ran == [] and left == [f"record {theirs.path}"]
    assert "left alone" in capsys.readouterr().err


# ---- gateway.json -----------------------------------------------------------------------------------
def test_gateway_down_refuses_a_record_naming_dirs_it_never_made(home, tmp_path, capsys):
    victim = _precious(tmp_path)
    wd = tmp_path / "gw"
    (wd / "gateway-x").mkdir(parents=True)
    state = {"matrix": "m.yaml", "cell": "c1", "label": "c1", "backend": "tmpfs",
             "host": statedir.HOST, "uid": os.geteuid(),
             "target": {"cell_id": "c1", "backend": "tmpfs", "created": []},
             "gateway": {"name": "x", "keep_dir": str(wd / "gateway-x"),
                         "live_dir": str(wd / "gateway-x"), "admin_dir": str(victim),
                         "servers": []}}
    (wd / "gateway.json").write_text(json.dumps(state))
    assert cli.main(["gateway", "down", "--workdir", str(wd)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not one xcbench makes (xcbgw-*)" in err
    assert (victim / "data").read_text() == "keep me"
    # a target dir outside the workdir, not named xcb-*
    state["gateway"]["admin_dir"] = str(tmp_path / "xcbgw-abc")
    state["target"]["created"] = [f"dir:{victim}"]
    (wd / "gateway.json").write_text(json.dumps(state))
    assert cli.main(["gateway", "down", "--workdir", str(wd)]) == 2
    assert f"dir {victim}, not one xcbench makes" in capsys.readouterr().err
    assert (victim / "data").exists()
