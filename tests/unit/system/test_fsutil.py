"""remove_tree: never crosses a mount point, never follows a symlink, says what it left."""

from __future__ import annotations

import os
import shutil

import pytest

from xcbench.ceph import keys
from xcbench.errors import XcbError
from xcbench.system import fsutil, proc


def _tree(root):
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("x")
    (root / "g").write_text("y")
    return root


def test_removes_a_plain_tree(tmp_path):
    t = _tree(tmp_path / "t")
    assert fsutil.remove_tree(t) == []
    assert not t.exists()


def test_missing_is_fine(tmp_path):
    assert fsutil.remove_tree(tmp_path / "nope") == []


def test_symlinks_are_removed_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("precious")
    t = _tree(tmp_path / "t")
    (t / "a" / "link-dir").symlink_to(outside)
    (t / "link-file").symlink_to(outside / "keep")
    fsutil.remove_tree(t)
    assert not t.exists()
    assert (outside / "keep").read_text() == "precious"


def test_top_symlink_removes_only_the_link(tmp_path):
    outside = _tree(tmp_path / "outside")
    link = tmp_path / "link"
    link.symlink_to(outside)
    fsutil.remove_tree(link)
    assert not link.is_symlink() and (outside / "a" / "b" / "f").exists()


def _mount_tmpfs(where):
    where.mkdir(parents=True, exist_ok=True)
    r = proc.run(["mount", "-t", "tmpfs", "-o", "size=1m", "xcb-test", str(where)], check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (not root?): {r.stderr.strip()}")


def test_never_crosses_a_mount_point(tmp_path, capsys):
    t = _tree(tmp_path / "t")
    mnt = t / "a" / "mnt"
    _mount_tmpfs(mnt)
    try:
        (mnt / "theirs").write_text("not ours")
        left = fsutil.remove_tree(t, what="scratch")
        assert left == [mnt]
        assert (mnt / "theirs").read_text() == "not ours"
        assert not (t / "g").exists() and not (t / "a" / "b").exists()
        err = capsys.readouterr().err
        assert "scratch: left" in err and str(mnt) in err and "mount point" in err
        with pytest.raises(XcbError, match="mount point"):
            fsutil.remove_tree(t, check=True)
    finally:
        proc.run(["umount", "-l", str(mnt)], check=False)
    fsutil.remove_tree(t, check=True)
    assert not t.exists()


def test_bind_mount_of_the_same_device_is_not_crossed(tmp_path):
    outside = _tree(tmp_path / "outside")
    t = tmp_path / "t"
    (t / "bind").mkdir(parents=True)
    r = proc.run(["mount", "--bind", str(outside), str(t / "bind")], check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {r.stderr.strip()}")
    try:
        assert os.stat(t / "bind").st_dev == os.stat(t).st_dev  # st_dev alone would not see it
        assert fsutil.remove_tree(t) == [t / "bind"]
        assert (outside / "a" / "b" / "f").exists()
    finally:
        proc.run(["umount", "-l", str(t / "bind")], check=False)


def test_unmount_first_for_own_trees(tmp_path):
    t = _tree(tmp_path / "t")
    mnt = t / "m"
    _mount_tmpfs(mnt)
    (mnt / "x").write_text("gone with the tmpfs")
    assert fsutil.remove_tree(t, unmount=True, check=True) == []
    assert not t.exists()


def test_top_mount_point_refused(tmp_path):
    mnt = tmp_path / "m"
    _mount_tmpfs(mnt)
    try:
        (mnt / "x").write_text("x")
        with pytest.raises(XcbError, match="mount point"):
            fsutil.remove_tree(mnt, check=True)
        assert (mnt / "x").exists()
    finally:
        proc.run(["umount", "-l", str(mnt)], check=False)


def test_no_shutil_rmtree_left():
    """Every tree deletion of xcbench goes through fsutil.remove_tree."""
    import pathlib
    root = pathlib.Path(fsutil.__file__).parent.parent
    hits = [str(p) for d in ("xcbench", "backends", "analysis") for p in (root / d).rglob("*.py")
            if "rmtree(" in p.read_text() and p.name != "fsutil.py"]
    assert hits == []


# ---- key copies ---------------------------------------------------------------------------------
def test_key_dir_private_fresh_and_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    kd = keys.KeyDir()
    p = kd.write("ceph.client.x.keyring", b"[client.x]\n\tkey = SECRET\n")
    d = p.parent
    assert oct(d.stat().st_mode & 0o777) == "0o700" and d.name.startswith(keys.PREFIX)
    assert oct(p.stat().st_mode & 0o777) == "0o400"
    assert len(list((tmp_path / "home" / "keydirs").glob("*.json"))) == 1
    kd2 = keys.KeyDir()
    assert kd2.write("k", b"other").parent != d  # one fresh dir per handle, unpredictable
    kd.close()
    kd2.close()
    assert not d.exists() and not list((tmp_path / "home" / "keydirs").glob("*.json"))


def test_key_write_refuses_a_planted_symlink(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    kd = keys.KeyDir()
    d = kd.ensure()
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (d / "k").symlink_to(victim)
    with pytest.raises(XcbError, match="symlink"):
        kd.write("k", b"secret")
    assert victim.read_text() == "untouched"
    kd.close()
    assert victim.exists()


def test_sweep_removes_dirs_of_dead_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    import subprocess
    import sys
    code = ("from xcbench.ceph import keys; import os; kd = keys.KeyDir(); "
            "print(kd.write('k', b'secret').parent, flush=True); os._exit(0)")  # like a kill -9
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "XCBENCH_HOME": str(tmp_path / "home")})
    d = __import__("pathlib").Path(out.stdout.strip())
    assert d.is_dir()
    assert keys.sweep() == [d]
    assert not d.exists() and not list((tmp_path / "home" / "keydirs").glob("*.json"))
    shutil.rmtree(tmp_path / "home")
