"""One state home for what outlives a command: the process records (xcbench.system.orphans) and the
cgroup registry (xcbench.system.cgroups) follow the same variable; records an older xcbench left under
$XCBENCH_STATE (the registry's own variable before) are still read."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from xcbench.system import cgroups, orphans, statedir


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("XCBENCH_HOME", raising=False)
    monkeypatch.delenv("XCBENCH_STATE", raising=False)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_records_and_registry_share_the_state_home(clean_env, tmp_path):
    assert statedir.home() == tmp_path / ".xcbench"
    clean_env.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    clean_env.setenv("XCBENCH_STATE", str(tmp_path / "old"))
    assert orphans.records_dir() == tmp_path / "home" / "procs"
    assert cgroups.Registry().file == tmp_path / "home" / "cgroups.json"
    assert statedir.legacy() == [tmp_path / "old", tmp_path / ".xcbench"]


def test_xcbench_state_alone_is_taken_as_the_state_home(clean_env, tmp_path):
    clean_env.setenv("XCBENCH_STATE", str(tmp_path / "old"))
    assert orphans.records_dir() == tmp_path / "old" / "procs"
    assert cgroups.Registry().dir == tmp_path / "old"
    assert statedir.legacy() == [tmp_path / ".xcbench"]


def test_a_registry_left_under_the_old_variable_is_still_swept(clean_env, tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    gone = tmp_path / "cg" / "xcb-killed-gateway"  # the group itself is already gone
    (old / cgroups.STATE_FILE).write_text(json.dumps(
        [{"path": str(gone), "owner": _dead_pid(), "created": time.time(), "owner_start": 1.0}]))
    clean_env.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    clean_env.setenv("XCBENCH_STATE", str(old))
    assert cgroups.sweep_stale() == [str(gone)]
    assert cgroups.Registry(old).entries() == []


def test_process_records_left_in_the_old_default_are_still_reaped(clean_env, tmp_path):
    """Only $XCBENCH_STATE was set: an older xcbench wrote its records to ./.xcbench."""
    clean_env.setenv("XCBENCH_STATE", str(tmp_path / "old"))
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        ident = orphans.identity(child.pid) | {"name": "sleep"}
        owner = _dead_pid()
        d = tmp_path / ".xcbench" / "procs"
        d.mkdir(parents=True)
        (d / f"{owner}.json").write_text(json.dumps(
            {"owner": {"pid": owner, "start": 1.0, "cmdline": ["x"]}, "procs": [ident],
             "mounts": []}))
        said = orphans.reap(grace=5)
        assert said is not None and "stopped 1 processes (sleep)" in said
        assert child.wait(timeout=10) is not None
        assert not list(d.glob("*.json"))
    finally:
        child.kill()
        child.wait()
