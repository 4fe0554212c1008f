"""The run's scratch tag (xcbench.system.scratch): every dir private_dir makes under it carries
it in its name, so what a run made on a node is found from the tag alone; a bad tag is one line."""

from __future__ import annotations

import os

import pytest

from xcbench.errors import XcbError
from xcbench.system import scratch


def test_private_dirs_carry_the_tag_and_are_found_by_it(tmp_path, monkeypatch):
    tag = "0123456789abcdef"
    monkeypatch.setenv(scratch.TAG_ENV, tag)
    a = scratch.private_dir(tmp_path, "xcbgw-")
    b = scratch.private_dir(tmp_path, "xcb-push-c1-")
    assert a.name.startswith(f"xcbgw-{tag}-") and b.name.startswith(f"xcb-push-c1-{tag}-")
    (tmp_path / f"xcbgw-{tag}x-1").mkdir()  # another tag that begins the same: not this one's
    (tmp_path / f"other-{tag}-1").mkdir()  # not a name xcbench gives
    assert scratch.tagged(tag, [str(tmp_path)]) == sorted([a, b])
    removed, left = scratch.remove_tagged(tag, [str(tmp_path)])
    assert sorted(removed) == sorted(map(str, (a, b))) and left == [] and not a.exists()
    monkeypatch.delenv(scratch.TAG_ENV)
    assert "-" not in scratch.private_dir(tmp_path, "xcbgw-").name[len("xcbgw-"):]  # untagged


@pytest.mark.parametrize("bad", ["xyz", "0123456789ABCDEF", "../../etc/passwd", "ab" * 20])
def test_a_bad_tag_is_one_line(monkeypatch, tmp_path, bad):
    monkeypatch.setenv(scratch.TAG_ENV, bad)
    with pytest.raises(XcbError, match=r"^scratch: \$XCBENCH_SCRATCH_TAG=.* is not a scratch tag"):
        scratch.private_dir(tmp_path, "xcbgw-")
    with pytest.raises(XcbError, match="is not a scratch tag"):
        scratch.tagged(bad)


def test_what_is_mounted_below_a_tagged_dir_goes_first(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    import subprocess
    tag = "fedcba9876543210"
    monkeypatch.setenv(scratch.TAG_ENV, tag)
    d = scratch.private_dir(tmp_path, "xcb-gwagent-")
    (d / "t").mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d / "t")], check=True)
    (d / "t" / "f").write_text("x")
    assert scratch.remove_tagged(tag, [str(tmp_path)]) == ([str(d)], [])
    assert not d.exists() and str(d / "t") not in open("/proc/self/mounts").read()
