"""One state home for what outlives a command, in one documented place (never the current
directory unless asked), private and ours: the process records (xcbench.system.orphans) and the cgroup
registry (xcbench.system.cgroups) follow the same variable."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from xcbench.errors import XcbError
from xcbench.system import cgroups, orphans, statedir


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("XCBENCH_HOME", raising=False)
    monkeypatch.delenv("XCBENCH_STATE", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def test_records_and_registry_share_the_state_home(clean_env, tmp_path):
    clean_env.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    clean_env.setenv("XCBENCH_STATE", str(tmp_path / "old"))
    assert orphans.records_dir() == tmp_path / "home" / "procs"
    assert cgroups.Registry().file == tmp_path / "home" / "cgroups.json"


def test_xcbench_state_alone_is_taken_as_the_state_home(clean_env, tmp_path):
    clean_env.setenv("XCBENCH_STATE", str(tmp_path / "old"))
    assert orphans.records_dir() == tmp_path / "old" / "procs"
    assert cgroups.Registry().dir == tmp_path / "old"


def test_the_default_is_never_the_current_directory(clean_env, tmp_path):
    assert statedir.home() != tmp_path / ".xcbench"
    if os.geteuid() == 0:
        assert statedir.home() == Path("/var/lib/xcbench")
    clean_env.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    code = ("import os; os.setuid(65534) if os.geteuid() == 0 else None; "
            "from xcbench.system import statedir; print(statedir.home())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "HOME": str(tmp_path / "u")}).stdout
    assert out.strip() == str(tmp_path / "xdg" / "xcbench")
    clean_env.delenv("XDG_STATE_HOME")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "HOME": str(tmp_path / "u")}).stdout
    assert out.strip() == str(tmp_path / "u" / ".local" / "state" / "xcbench")


def test_the_state_home_is_made_private(clean_env, tmp_path):
    clean_env.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir(mode=0o755)
    assert statedir.ensure() == tmp_path / "home"
    assert stat.S_IMODE((tmp_path / "home").stat().st_mode) == 0o700
    d = statedir.ensure(tmp_path / "home" / "procs")
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_a_state_home_of_another_user_or_a_link_is_refused(clean_env, tmp_path, other_user):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, other_user.uid, other_user.gid)
    clean_env.setenv("XCBENCH_HOME", str(theirs))
    with pytest.raises(XcbError, match=rf"state dir {theirs}: owned by uid {other_user.uid}"):
        statedir.ensure()
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    clean_env.setenv("XCBENCH_HOME", str(link))
    with pytest.raises(XcbError, match="not a directory"):
        statedir.ensure()


def test_records_are_written_private(clean_env, tmp_path):
    clean_env.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    rec = orphans.start()
    try:
        rec.add_dir(str(tmp_path / "xcb-x"))
        st = os.stat(rec.path)
        assert stat.S_IMODE(st.st_mode) == 0o600
        assert stat.S_IMODE(os.stat(tmp_path / "home").st_mode) == 0o700
    finally:
        rec.drop_dir(str(tmp_path / "xcb-x"))
        orphans.stop()


def test_a_command_refuses_a_state_home_it_does_not_own(clean_env, tmp_path, capsys, other_user):
    from xcbench import cli
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, other_user.uid, other_user.gid)
    clean_env.setenv("XCBENCH_HOME", str(theirs))
    assert cli.main(["campaign", "--gateway", "tmpfs", "--files", "1", "--size", "1M",
                     "--store", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"state dir {theirs}: owned by uid {other_user.uid}" in err
    assert not (tmp_path / "r").exists() and list(theirs.iterdir()) == []
