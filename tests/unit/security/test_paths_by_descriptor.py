"""Paths by descriptor from a root-owned anchor: "is this path ours?" is not decided by name
and then used by name.

- ``report --out /tmp/<new>/report.html``: while the report renders, another user makes
  ``/tmp/<new>`` (a dir of theirs) and, in it, ``report.html`` as a link to a root-owned file.
  The dir was made ours when the command started: the attacker gets nowhere, the victim keeps
  its content, the report is where it was asked for;
- a directory that became a link, or another user's, on the way to a file is refused;
- a result store that is not ours (another owner, a link, writable by others) is refused in one
  line and left untouched;
- records and manifests are never written through a link."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest

from tests.support.synthrun import make_run, mixed_cells
from xcbench import cli
from xcbench.errors import XcbError
from xcbench.system import outfiles

VICTIM = "root's file\n"


@pytest.fixture
def victim(tmp_path):
    v = Path("/var/tmp") / f"xcb-test-victim-{secrets.token_hex(4)}"
    v.write_text(VICTIM)
    v.chmod(0o644)
    yield v
    v.unlink(missing_ok=True)


def test_report_out_whose_parent_appears_mid_render_with_a_link_in_it(tmp_path, other_user,
                                                                      victim, monkeypatch, capsys):
    from xcbench.analysis.report import document
    run, _ = make_run(tmp_path / "store", mixed_cells()[:1])
    parent = Path("/tmp") / f"xcb-test-out-{secrets.token_hex(4)}"
    out = parent / "report.html"
    real = document.render
    tried = []

    def attacked(*a, **k):  # mid-render: the other user takes the parent and plants a link
        for argv in (["mkdir", str(parent)], ["ln", "-s", str(victim), str(out)]):
            tried.append(subprocess.run(argv, user=other_user.uid, group=other_user.gid,
                                        extra_groups=[], capture_output=True).returncode)
        return real(*a, **k)
    monkeypatch.setattr(document, "render", attacked)
    try:
        assert cli.main(["report", str(run), "--out", str(out)]) == 0
        assert victim.read_text() == VICTIM
        assert tried == [1, 1]  # the dir was ours before the render began: nothing planted
        st = os.lstat(parent)
        assert st.st_uid == 0 and not os.path.islink(out) and "<html" in out.read_text()[:2000].lower()
    finally:
        outfiles.release()
        subprocess.run(["rm", "-rf", str(parent)], check=False)


def test_a_parent_that_became_a_link_or_another_users_is_refused(tmp_path, victim, other_user):
    d = tmp_path / "d"
    d.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.rmdir(d)
    d.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(XcbError, match="a symlink"):
        outfiles.write(d / "x.html", "x")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, other_user.uid, other_user.gid)
    (theirs / "x.html").symlink_to(victim)
    with pytest.raises(XcbError, match="belongs to uid"):
        outfiles.write(theirs / "x.html", "x")
    assert victim.read_text() == VICTIM and not list((tmp_path / "elsewhere").iterdir())


TMPFS = "name: s\ndefaults: {concurrency: [1], file_size: 1M, files: 2}\nbackends: {tmpfs: {size: [64M]}}\n"


@pytest.mark.parametrize("how", ["theirs", "link", "writable", "parent theirs"])
def test_a_result_store_not_ours_is_refused_untouched(tmp_path, other_user, capsys, how):
    m = tmp_path / "m.yaml"
    m.write_text(TMPFS)
    real = tmp_path / "real"
    real.mkdir()
    store = tmp_path / "store"
    if how == "link":
        store.symlink_to(real)
    else:
        store.mkdir()
        if how == "theirs":
            os.chown(store, other_user.uid, other_user.gid)
        elif how == "writable":
            store.chmod(0o777)
        else:  # our store in a dir of theirs: they could rename it and put theirs in its place
            outer = tmp_path / "outer"
            outer.mkdir()
            os.chown(outer, other_user.uid, other_user.gid)
            store = outer / "store"
            store.mkdir()
    before = sorted(os.listdir(real)), sorted(os.listdir(store))
    assert cli.main(["run", str(m), "--store", str(store), "--no-baseline", "--no-report"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("xcbench: error: result store "), err
    assert (sorted(os.listdir(real)), sorted(os.listdir(store))) == before


def test_records_and_manifests_are_never_written_through_a_link(tmp_path, victim):
    from xcbench.store.jsonl import append_lines, open_append
    from xcbench.store.rundir import write_json
    (tmp_path / "t.jsonl").symlink_to(victim)
    (tmp_path / "m.json.tmp").symlink_to(victim)
    for write in (lambda: open_append(tmp_path / "t.jsonl"),
                  lambda: append_lines(tmp_path / "t.jsonl", ["{}\n"]),
                  lambda: write_json(tmp_path / "m.json", {"a": 1})):
        with pytest.raises(OSError):
            write()
    assert victim.read_text() == VICTIM


def test_a_cluster_state_dir_another_user_made_first_is_refused(other_user):
    """`cluster up --state-dir /tmp/<new>`: the other user makes it first (empty, theirs):
    refused, nothing written in it (before: used, chmod'ed, and the cluster's keys put there)."""
    from xcbench.ceph.mini import MiniCluster
    state = Path("/tmp") / f"xcb-test-state-{secrets.token_hex(4)}"
    subprocess.run(["mkdir", "-m", "0777", str(state)], user=other_user.uid, group=other_user.gid,
                   extra_groups=[], check=True)
    try:
        with pytest.raises(XcbError, match="belongs to uid"):
            MiniCluster(state)._prepare_dir(lambda s: None)
        assert os.listdir(state) == [] and (os.stat(state).st_mode & 0o777) == 0o777
    finally:
        subprocess.run(["rm", "-rf", str(state)], check=False)


def test_a_tmpfs_target_is_never_mounted_below_another_users_dir(tmp_path, other_user):
    from xcbench.backends.tmpfs import BACKEND
    from xcbench.cell import Cell
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, other_user.uid, other_user.gid)
    backend = BACKEND(None, theirs / "work", None)
    with pytest.raises(XcbError, match="belongs to uid"):
        backend.prepare(Cell(id="t1", label="x", backend="tmpfs", tmpfs_size=16 << 20))
    assert os.listdir(theirs) == [] and not [m for m in open("/proc/self/mounts") if str(theirs) in m]
