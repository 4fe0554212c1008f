"""gfal2 push staging on a shared host: another local user who plants a directory with the name
xcbench would use, with symlinks in it to a file of root's, must not get root to write that
file; a TPC source file written over a planted link replaces the link, never its target."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from xcbench.campaign.dataset import Dataset
from xcbench.campaign.staging import LocalSource
from xcbench.system import orphans

PRECIOUS = "root's own file: must not change\n"


@pytest.fixture
def shm(tmp_path, monkeypatch):
    """A world-writable sticky dir like /dev/shm, and a file of root's another user can name."""
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    base = Path(tempfile.mkdtemp(prefix="xcbt-shm-", dir="/dev/shm"))
    base.chmod(0o1777)
    victim = Path(tempfile.mkdtemp(prefix="xcbt-victim-", dir="/dev/shm")) / "shadow"
    victim.write_text(PRECIOUS)
    victim.chmod(0o600)
    victim.parent.chmod(0o755)
    yield base, victim
    orphans.stop()
    for d in (base, victim.parent):
        os.system(f"rm -rf -- '{d}'")  # the other user's files too


def _victim_intact(victim: Path) -> None:
    st = os.lstat(victim)
    assert victim.read_bytes() == PRECIOUS.encode()
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600


def test_a_planted_push_staging_dir_with_links_is_never_written_through(shm, other_user):
    base, victim = shm
    orphans.start()
    # the names the push staging of campaign c1 had: xcb-push-c1/f000000{,.part}
    planted = base / "xcb-push-c1"
    other_user.run(["mkdir", "-m", "0777", str(planted)])
    for name in ("f000000", "f000000.part", "f000001.part"):
        other_user.run(["ln", "-s", str(victim), str(planted / name)])
    local = LocalSource(Dataset.generate(3, 4096), "c1", base=str(base))
    try:
        local.stage_all()
        _victim_intact(victim)
        assert local.dir != planted and local.dir.parent == base
        st = os.lstat(local.dir)
        assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700
        got = Path(local.path(0)).read_bytes()
        assert got == b"".join(Dataset.generate(3, 4096).chunks(0))
        _victim_intact(victim)
    finally:
        local.cleanup()
    assert not local.dir.exists()
    assert planted.is_dir() and (planted / "f000000").is_symlink()  # not ours: left alone
    _victim_intact(victim)


def test_a_source_file_written_over_a_planted_link_replaces_the_link(shm, other_user):
    """A TPC source dir belongs to the gateway's user: a link that user plants at a dataset
    file's name (or its temporary name) is replaced; the file it points to is neither written
    nor given to that user."""
    base, victim = shm
    d = base / "xcb-source"
    d.mkdir()
    os.chown(d, other_user.uid, other_user.gid)
    other_user.run(["ln", "-s", str(victim), str(d / "f000000")])
    other_user.run(["ln", "-s", str(victim), str(d / "f000000.part")])
    ds = Dataset.generate(1, 8192)
    ds.materialise(0, d / "f000000", owner=(other_user.uid, other_user.gid))
    st = os.lstat(d / "f000000")
    assert stat.S_ISREG(st.st_mode) and st.st_uid == other_user.uid and st.st_size == 8192
    _victim_intact(victim)


def test_push_staging_refuses_what_would_not_fit_in_memory(shm, monkeypatch):
    """On a tmpfs, files written one attempt at a time must still fit: ``concurrent`` of the
    largest files; refused in one line before anything is made."""
    from xcbench.system import scratch
    base, _ = shm
    monkeypatch.setattr(scratch, "memory_room", lambda: (3 << 30, 2 << 30))  # 1 GiB of room
    import xcbench.campaign.staging as staging
    monkeypatch.setattr(staging, "memory_room", scratch.memory_room)
    ds = Dataset([300 << 20] * 10)  # 3 GiB: not kept; 4 x 300 MiB at once do not fit
    with pytest.raises(Exception, match=r"gfal2 push staging .* does not fit in memory"):
        LocalSource(ds, "c3", base=str(base), concurrent=4)
    assert not list(base.glob("xcb-push-c3-*"))
    small = LocalSource(ds, "c4", base=str(base), concurrent=2)  # 600 MiB at once: fits
    assert small.keep is False
    small.cleanup()
