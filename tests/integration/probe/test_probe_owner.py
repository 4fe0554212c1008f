"""A probe on a target the xrootd user owns: fio runs as that user, never as root.

The xrootd user (the attacker: a site's production xrootd shares the uid) plants a link named
like fio's next file (``<prefix>.<job>.<jobnum>.<filenum>``) in its own dir, pointing at a
root-owned file outside; root's fio would write through it. The victim stays as it was, every
file fio wrote in the target is the target owner's, and what root keeps (fio's JSON, the
bandwidth logs) is root's.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from pathlib import Path

import pytest

from xcbench.backends.base import Target
from xcbench.cell import Cell
from xcbench.probe import fio, levels
from xcbench.probe.jobs import PREFIX, run_probe
from xcbench.probe.noise import logs
from xcbench.system.fsutil import remove_tree
from xcbench.system.xrootd_user import xrootd_ids

pytestmark = pytest.mark.integration
M = 1 << 20
CONTENT = "root's file, not to be written by a probe\n"


@pytest.fixture
def ids():
    got = xrootd_ids()
    if got is None:
        pytest.skip("the attack needs root probing a dir the xrootd user owns")
    return got


@pytest.fixture
def victim():
    """A root-owned file the xrootd user can reach (0711 dir, 0644 file) but not write."""
    d = Path(tempfile.mkdtemp(prefix="xcb-test-victim-", dir="/var/tmp"))
    d.chmod(0o711)
    v = d / "victim"
    v.write_text(CONTENT)
    v.chmod(0o644)
    yield v
    remove_tree(d)


@pytest.fixture
def target_dir(ids):
    """The gateway's export: a dir on /dev/shm's tmpfs owned by the xrootd user."""
    d = Path(tempfile.mkdtemp(prefix="xcb-test-owned-", dir="/dev/shm"))
    d.chmod(0o755)
    os.chown(d, *ids)
    yield d
    remove_tree(d)


class Attacker(threading.Thread):
    """Watches the target as its owner could: every file of ours seen (with its owner), and a
    link put (as that user) in place of fio's next jobs' files once the first job's shows."""

    def __init__(self, d: Path, ids, victim: Path, first: str, nexts: tuple[str, ...]):
        super().__init__(daemon=True)
        self.d, self.ids, self.victim, self.first, self.nexts = d, ids, victim, first, nexts
        self.seen: dict[str, int] = {}
        self.planted: list[str] = []
        self.done = threading.Event()

    def plant(self, name: str) -> None:
        """fio lays out every job's file at its start: the owner swaps the next one for a link."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.d / name)
        os.symlink(self.victim, self.d / name)
        os.lchown(self.d / name, *self.ids)
        self.planted.append(name)

    def run(self) -> None:
        while not self.done.wait(0.01):
            for name in os.listdir(self.d):
                try:
                    st = os.lstat(self.d / name)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    self.seen[name] = st.st_uid
                    if not self.planted and name.endswith(self.first):
                        for nxt in self.nexts:
                            self.plant(name[: -len(self.first)] + nxt)


def _victim_intact(victim: Path) -> None:
    st = os.lstat(victim)
    assert victim.read_text() == CONTENT
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o644)


def test_probe_in_the_xrootd_users_dir_runs_as_it(ids, victim, target_dir, tmp_path):
    c = Cell(id="po-owned", label="probe owner", backend="tmpfs",
             probe={"runtime": 1, "iodepth": 4, "numjobs": 1, "size": 4 * M})
    target = Target(cell_id=c.id, backend="tmpfs", path=str(target_dir))
    # fio's first job makes <prefix>.randwrite.0.0: the next jobs' files are named from it
    spy = Attacker(target_dir, ids, victim, ".randwrite.0.0", (".write.0.0", ".read.0.0"))
    spy.start()
    try:
        rows = run_probe(c, target, workdir=tmp_path / "w", sink=None, raw_dir=tmp_path / "raw")
    finally:
        spy.done.set()
        spy.join()
    _victim_intact(victim)
    assert len(spy.planted) == 2, spy.seen  # the attack happened
    assert spy.seen and set(spy.seen.values()) == {ids[0]}, spy.seen  # fio wrote as the owner
    assert os.listdir(target_dir) == []  # fio's files and the planted links (our names) removed
    by_job = {r["job"]: r for r in rows}
    assert by_job["randwrite"]["errors"] == 0 and by_job["randwrite"]["iops"] > 0
    assert by_job["write"]["errors"] > 0  # it met the link and could not write through it
    out = tmp_path / "raw" / f"{PREFIX}.{c.id}.json"
    assert os.lstat(out).st_uid == 0 and fio.load_file(out)["jobs"]  # kept by root, as before
    assert "err=13" in out.read_text()  # fio's EACCES at the link, as the owner


def test_level_probe_in_the_xrootd_users_dir_runs_as_it(ids, victim, target_dir, tmp_path):
    c = Cell(id="pl-owned", label="level owner", backend="tmpfs", file_size=4 * M,
             probe={"ss_dur": 2})
    target = Target(cell_id=c.id, backend="tmpfs", path=str(target_dir))
    prefix = f"{PREFIX}.{c.id}.feed"
    (target_dir / f"{prefix}.write-c2.0.0").symlink_to(victim)  # job 0's file, before fio starts
    os.lchown(target_dir / f"{prefix}.write-c2.0.0", *ids)
    spy = Attacker(target_dir, ids, victim, "-", ())
    spy.start()
    raw = tmp_path / "raw"
    raw.mkdir()
    try:
        rows = levels.run_levels(c, target, [2], raw_dir=raw, prefix=prefix)
    finally:
        spy.done.set()
        spy.join()
    _victim_intact(victim)
    assert spy.seen and set(spy.seen.values()) == {ids[0]}, spy.seen
    (row,) = rows
    assert row["numjobs"] == 2 and row["errors"] > 0 and row["bw"] > 0  # job 1 wrote
    kept = logs(raw / f"{PREFIX}.{c.id}.write-c2")
    assert kept and all(os.lstat(p).st_uid == 0 for p in kept)  # copied back, root's
