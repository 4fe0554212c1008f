"""fuse_umount stops a recorded pid only when it is provably the ceph-fuse of that mount point
(the ceph-fuse program, that mount point in its arguments, this user's): a recycled pid, or a
process whose name merely contains "ceph-fuse", is never signalled."""

from __future__ import annotations

import shutil
import subprocess

from xcbench.system import mounts


def test_a_process_merely_named_like_ceph_fuse_is_not_stopped(tmp_path):
    fake = tmp_path / "not-ceph-fuse-at-all"
    shutil.copy("/bin/sleep", fake)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    p = subprocess.Popen([str(fake), "60"], start_new_session=True)
    try:
        mounts.fuse_umount(mnt, pid=p.pid)
        assert p.poll() is None  # still running: not ours to stop
    finally:
        p.kill()
        p.wait()


def test_a_ceph_fuse_of_another_mount_point_is_not_ours(tmp_path):
    assert not mounts._is_ceph_fuse(1, tmp_path)  # init: never
