"""Making and handing over what another user is given, without working in that user's dirs."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from xcbench.errors import XcbError
from xcbench.system import fsutil, xrootd_user


def test_make_dir_refuses_a_planted_dir_or_link(tmp_path):
    (tmp_path / "planted").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "planted")
    for name in ("planted", "link"):
        with pytest.raises(FileExistsError):
            fsutil.make_dir(tmp_path / name)
    d = fsutil.make_dir(tmp_path / "new", 0o711)
    assert stat.S_IMODE(d.stat().st_mode) == 0o711


def test_write_file_never_writes_through_a_link_or_a_hard_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "soft").symlink_to(victim)
    os.link(victim, tmp_path / "hard")
    with pytest.raises(OSError):  # ELOOP: O_NOFOLLOW
        fsutil.write_file(tmp_path / "soft", "owned")
    with pytest.raises(XcbError, match="2 links"):
        fsutil.write_file(tmp_path / "hard", "owned")
    with pytest.raises(FileExistsError):
        fsutil.write_file(victim, "owned", new=True)
    assert victim.read_text() == "keep me"
    out = fsutil.write_file(tmp_path / "conf", "x = 1\n", 0o640)
    assert out.read_text() == "x = 1\n" and stat.S_IMODE(out.stat().st_mode) == 0o640


def test_hand_over_never_follows_a_link(tmp_path, other_user):
    victim = tmp_path / "victim"
    victim.write_text("root's")
    (tmp_path / "link").symlink_to(victim)
    before = victim.stat()
    with pytest.raises(OSError):
        fsutil.hand_over(tmp_path / "link", (other_user.uid, other_user.gid), 0o666)
    assert victim.stat().st_uid == os.geteuid() and victim.stat().st_mode == before.st_mode
    d = fsutil.make_dir(tmp_path / "given", 0o700)
    fsutil.hand_over(d, (other_user.uid, other_user.gid))
    assert d.stat().st_uid == other_user.uid
    with pytest.raises(XcbError, match="not a file or directory of ours"):
        fsutil.hand_over(d, (other_user.uid, other_user.gid))  # theirs now: never touched again


def test_keep_copy_skips_links_and_fifos_and_caps_each_file(tmp_path):
    src, dst = tmp_path / "live", tmp_path / "keep"
    (src / "sub").mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.write_text("root's secret")
    (src / "daemon.log").write_bytes(b"a" * 5000)
    (src / "sub" / "client.log").write_text("ok")
    (src / "stolen.log").symlink_to(secret)
    (src / "linkdir").symlink_to(tmp_path)
    os.mkfifo(src / "fifo")
    dst.mkdir()
    got = fsutil.keep_copy(src, dst, cap=1000)
    assert sorted(p.relative_to(dst).as_posix() for p in got) == ["daemon.log", "sub/client.log"]
    assert (dst / "daemon.log").read_bytes() == b"a" * 1000
    assert not (dst / "stolen.log").exists() and not (dst / "linkdir").exists()
    assert "root's secret" not in "".join(p.read_text() for p in got)


def test_not_ours_names_links_other_owners_and_their_parents(tmp_path, other_user):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, other_user.uid, other_user.gid)
    (tmp_path / "link").symlink_to(tmp_path)
    assert fsutil.not_ours(tmp_path) is None
    assert fsutil.not_ours(tmp_path / "missing" / "deeper") is None
    assert "symlink" in fsutil.not_ours(tmp_path / "link")
    assert f"uid {other_user.uid}" in fsutil.not_ours(theirs)
    assert f"parent {theirs}" in fsutil.not_ours(theirs / "sub" / "report.html")


@pytest.fixture
def reachable(tmp_path):
    """A dir every user can traverse (pytest's tmp_path is 0700)."""
    d = Path(tempfile.mkdtemp(prefix="xcb-test-handover-", dir="/var/tmp"))
    d.chmod(0o755)
    yield d
    fsutil.remove_tree(d)


def test_the_owner_makes_a_dir_in_its_own_dir_never_root(reachable, other_user):
    tmp_path = reachable
    ids = (other_user.uid, other_user.gid)
    export = fsutil.make_dir(tmp_path / "export", 0o755)
    fsutil.hand_over(export, ids)
    target = fsutil.make_dir(tmp_path / "roots", 0o755)
    (export / "origin-1").symlink_to(target)  # as if the user planted it (owner: root here)
    os.lchown(export / "origin-1", *ids)
    xrootd_user.make_dir_for(ids, export / "origin-2")
    xrootd_user.make_dir_for(ids, export / "origin-1")  # its own link: its own business
    assert (export / "origin-2").stat().st_uid == other_user.uid
    assert target.stat().st_uid == os.geteuid() and list(target.iterdir()) == []
    mine = fsutil.make_dir(tmp_path / "mine", 0o755)
    xrootd_user.make_dir_for(ids, mine / "o1")  # a parent of ours: made, then handed over
    assert (mine / "o1").stat().st_uid == other_user.uid


def test_daemon_env_is_small_and_named(monkeypatch):
    monkeypatch.setenv("BEARER_TOKEN", "s3cret")
    env = xrootd_user.daemon_env(None, {"CEPH_CONF": "/x/ceph.conf"})
    assert set(env) == {"PATH", "HOME", "LANG", "CEPH_CONF"}
    argv = xrootd_user.daemon_argv(["printenv"], env)
    from xcbench.system import proc
    out = proc.run(argv, timeout=30).stdout
    assert "s3cret" not in out and "CEPH_CONF=/x/ceph.conf" in out
    assert sorted(line.split("=", 1)[0] for line in out.splitlines()) == sorted(env)


def test_gateway_user_is_named_by_the_operator(monkeypatch, other_user):
    monkeypatch.setenv(xrootd_user.USER_ENV, "")  # restored after: set_user writes it
    assert xrootd_user.user_name() == "xrootd"
    with pytest.raises(XcbError, match="no such user"):
        xrootd_user.set_user("xcb-no-such-user")
    with pytest.raises(XcbError, match="uid 0"):
        xrootd_user.set_user("root")
    xrootd_user.set_user(other_user.name)
    assert xrootd_user.xrootd_ids() == (other_user.uid, other_user.gid)


def test_a_daemons_log_is_read_without_following_a_link(tmp_path):
    from xcbench.system import proc
    secret = tmp_path / "secret"
    secret.write_text("root's secret\n")
    (tmp_path / "xcb-xrootd.log").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo.log")
    assert proc.tail(tmp_path / "xcb-xrootd.log") == ""
    assert proc.tail(tmp_path / "fifo.log") == ""  # never blocks on a planted fifo
    (tmp_path / "real.log").write_text("a\nb\n")
    assert proc.tail(tmp_path / "real.log", 1) == "b"


def test_what_an_agent_sends_back_is_kept_as_a_plain_file_of_ours(tmp_path):
    from xcbench.gateway.remote import _kept
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    keep = tmp_path / "keep"
    keep.mkdir()
    assert _kept(keep, "../../victim", "x") == keep / "victim"  # the name only, in keep
    assert victim.read_text() == "keep me"
    for bad in ("..", "", "/", "agent-standalone-h.jsonl"):
        assert _kept(keep, bad, "x") is None
    assert _kept(keep, "xcb.cfg", {"not": "text"}) is None
