"""A directory or output path of another user given on the command line: one line naming the
flag and the path, exit 2, nothing in it touched."""

from __future__ import annotations

import os
import stat

import pytest

from tests.support.synthrun import make_run, mixed_cells
from xcbench import cli


@pytest.fixture
def theirs(tmp_path, other_user):
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, other_user.uid, other_user.gid)
    tmp_path.chmod(0o755)
    return d


def _refused(capsys, argv, flag, path) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{flag} {path}" in err and "refusing" in err, err


def _untouched(d, before) -> None:
    st = os.lstat(d)
    assert (st.st_uid, st.st_mode) == (before.st_uid, before.st_mode)
    if stat.S_ISDIR(st.st_mode):
        assert list(d.iterdir()) == []


def test_cluster_up_and_down_refuse_a_state_dir_of_another_user(theirs, capsys):
    before = os.lstat(theirs)
    _refused(capsys, ["cluster", "up", "--state-dir", str(theirs)], "--state-dir", theirs)
    _refused(capsys, ["cluster", "down", "--state-dir", str(theirs)], "--state-dir", theirs)
    _untouched(theirs, before)


def test_cluster_up_refuses_a_state_dir_below_another_users_dir(theirs, capsys):
    before = os.lstat(theirs)
    inner = theirs / "cluster"
    _refused(capsys, ["cluster", "up", "--state-dir", str(inner)], "--state-dir", inner)
    _untouched(theirs, before)


def test_gateway_up_refuses_a_workdir_of_another_user_or_a_link(theirs, tmp_path, capsys):
    before = os.lstat(theirs)
    link = tmp_path / "link"
    link.symlink_to(theirs)
    for wd in (theirs, link):
        _refused(capsys, ["gateway", "up", "--matrix", "x.yaml", "--cell", "c", "--workdir", str(wd)],
                 "--workdir", wd)
    _untouched(theirs, before)


def test_report_refuses_an_output_through_a_link_or_in_another_users_dir(theirs, tmp_path, capsys,
                                                                        other_user):
    run, _ = make_run(tmp_path / "store", mixed_cells()[:1])
    victim = tmp_path / "victim"
    victim.write_text("not a report")
    planted = tmp_path / "report.html"
    planted.symlink_to(victim)
    _refused(capsys, ["report", str(run), "--out", str(planted)], "--out", planted)
    _refused(capsys, ["report", str(run), "--out", str(theirs / "r.html")], "--out", theirs / "r.html")
    assert victim.read_text() == "not a report"
    _untouched(theirs, os.lstat(theirs))
    os.chown(run, other_user.uid, other_user.gid)  # another user's run: its default report path
    _refused(capsys, ["report", str(run)], "RUN", run / "report.html")
    assert not (run / "report.html").exists()
