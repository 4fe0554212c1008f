"""What root does around a fio that runs in another user's dir: remove fio's leftovers without
following a link, and copy back only the bandwidth logs it expects, never through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xcbench.probe import dirowner


def test_remove_files_unlinks_links_never_their_targets(tmp_path):
    d, outside = tmp_path / "d", tmp_path / "outside"
    d.mkdir()
    outside.write_text("keep")
    (d / "P.write.0.0").write_text("fio's")
    (d / "P.read.0.0").symlink_to(outside)
    (d / "P.sub").mkdir()
    (d / "Q.write.0.0").write_text("another probe's")
    assert dirowner.remove_files(d, ["P"]) == 2
    assert sorted(os.listdir(d)) == ["P.sub", "Q.write.0.0"]
    assert outside.read_text() == "keep"
    assert dirowner.remove_files(tmp_path / "gone", ["P"]) == 0


def test_owner_of_is_none_for_our_own_dir(tmp_path):
    assert dirowner.owner_of(tmp_path) is None


def test_log_dir_as_ourselves_is_the_stem_itself(tmp_path):
    with dirowner.log_dir(None, tmp_path / "s", 2) as stem:
        assert stem == tmp_path / "s"


def test_log_dir_keeps_only_the_expected_logs_and_never_follows_a_link(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("handing a dir to another user needs root")
    ids = (65534, 65534)
    raw, outside = tmp_path / "raw", tmp_path / "outside"
    raw.mkdir()
    outside.write_text("secret")
    (raw / "x.json").write_text("root's record")
    with dirowner.log_dir(ids, raw / "x.write-c2", 2) as stem:
        d = stem.parent
        assert os.lstat(d).st_uid == ids[0] and d.parent != raw
        (d / "x.write-c2_bw.1.log").write_text("500, 1000, 0, 0, 0\n")
        (d / "x.write-c2_bw.2.log").symlink_to(outside)  # a link: not followed
        (d / "x.write-c2_bw.9.log").write_text("no such job")  # not one of the 2 jobs
        (d / "x.json").write_text("planted")  # not a log name
        top = d.parent
    assert sorted(os.listdir(raw)) == ["x.json", "x.write-c2_bw.1.log"]
    assert (raw / "x.json").read_text() == "root's record"
    assert (raw / "x.write-c2_bw.1.log").read_text() == "500, 1000, 0, 0, 0\n"
    assert os.lstat(raw / "x.write-c2_bw.1.log").st_uid == 0
    assert not top.exists()  # the scratch dir is gone


def test_log_dir_caps_a_log(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("handing a dir to another user needs root")
    monkeypatch.setattr(dirowner, "LOG_CAP", 10)
    with dirowner.log_dir((65534, 65534), tmp_path / "y", 1) as stem:
        Path(f"{stem}_bw.1.log").write_text("x" * 100)
    assert (tmp_path / "y_bw.1.log").read_text() == "x" * 10
