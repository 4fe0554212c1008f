"""Trees another user can make (the xrootd user in its logs dir; anyone through an anonymous
gateway's ``mkdir -p``) stop no command: a 2,000-deep tree in a recorded scratch dir is removed
by the next command's reap, which then goes on, and so does the one after; copies of such a tree
stop at their depth and at their budget (10⁴ sparse files do not become 640 GB); a record whose
reaping fails costs one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from xcbench.system import fsutil, orphans, statedir, treewalk

DEPTH = 2000


def deep(top: Path, depth: int = DEPTH) -> None:
    """``top/d/d/.../d`` ``depth`` levels deep, a file at the bottom (made through descriptors:
    the path is longer than PATH_MAX)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    os.close(fd)


def dead_owner_record(home: Path, dirs: list[str]) -> Path:
    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    owner.wait()
    d = home / "procs"
    statedir.ensure(d)
    f = d / f"{owner.pid}.json"
    statedir.write_private(f, json.dumps({
        "host": statedir.HOST, "uid": os.geteuid(), "owner": {"pid": owner.pid, "start": 1.0, "cmdline": ["x"]},
        "procs": [], "mounts": [], "dirs": [{"path": p, "uid": os.geteuid()} for p in dirs]}))
    return f


@pytest.fixture
def scratch():
    d = Path(tempfile.mkdtemp(prefix="xcb-test-deep-", dir="/var/tmp"))
    yield d
    fsutil.remove_tree(d)


def test_the_next_command_removes_a_2000_deep_scratch_tree_and_goes_on(tmp_path, scratch, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("XCBENCH_HOME", str(home))
    (scratch / "logs").mkdir()
    deep(scratch / "logs")
    dead_owner_record(home, [str(scratch)])
    env = {**os.environ, "XCBENCH_HOME": str(home)}
    for n in (1, 2):  # the command that reaps, and the one after it
        r = subprocess.run([sys.executable, "-m", "xcbench", "cluster", "status"], env=env,
                           capture_output=True, text=True, timeout=120)
        assert "Traceback" not in r.stderr and r.returncode == 2, r.stderr
        assert r.stderr.strip().splitlines()[-1].startswith(f"xcbench: error: {home}/cluster: ")
        assert ("removed 1 scratch dirs" in r.stderr) == (n == 1), r.stderr
    assert not scratch.exists() and not list((home / "procs").glob("*.json"))


def test_remove_tree_holds_few_descriptors_and_checks_what_it_reopens(scratch):
    deep(scratch, 300)
    before = len(os.listdir("/proc/self/fd"))
    seen = []
    real = os.open

    def counting(*a, **k):
        fd = real(*a, **k)
        seen.append(len(os.listdir("/proc/self/fd")))
        return fd
    os.open = counting  # type: ignore[assignment]
    try:
        assert fsutil.remove_tree(scratch) == []
    finally:
        os.open = real  # type: ignore[assignment]
    assert not scratch.exists() and max(seen) - before <= treewalk.FD_WINDOW + 4


def test_a_tree_deeper_than_the_cap_is_left_and_named(scratch, capsys):
    deep(scratch, 50)
    fd = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY)
    left: list[Path] = []
    why: dict[Path, str] = {}
    try:
        treewalk.clear(fd, scratch, os.fstat(fd).st_dev, set(), left, why, max_depth=10)
    finally:
        os.close(fd)
    assert len(left) == 1 and "more than 10 levels deep" in why[left[0]]
    assert len(left[0].relative_to(scratch).parts) == 11


def test_copies_stop_at_their_depth_and_their_budget(tmp_path, scratch):
    deep(scratch, 40)
    for i in range(50):  # sparse: 64 MiB each on paper, nothing on disk
        with open(scratch / f"sparse-{i}", "wb") as fh:
            fh.truncate(64 << 20)
    budget = treewalk.Budget(bytes=3 << 20, entries=1000)
    got = fsutil.keep_copy(scratch, tmp_path / "copy", cap=1 << 20, budget=budget)
    assert len(got) == 3 and sum(p.stat().st_size for p in got) == 3 << 20
    assert budget.spent()
    got = fsutil.keep_copy(scratch / "d", tmp_path / "deep")  # only a bottom file, 41 levels down
    assert got == [] and not any(p.name == "bottom" for p in (tmp_path / "deep").rglob("*"))


def test_a_record_whose_reaping_fails_costs_one_line(tmp_path, scratch, monkeypatch, capsys):
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    f = dead_owner_record(tmp_path / "home", [str(scratch)])

    def broken(*a, **k):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(orphans, "remove_dir", broken)
    assert orphans.reap() is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(f) in err[0] and "RecursionError" in err[0]
