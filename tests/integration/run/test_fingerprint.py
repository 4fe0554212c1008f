"""Fingerprint helpers against a real cluster: pool settings + EC profile as Ceph reports
them, CephFS layout xattrs as Ceph applied them (read back from a ceph-fuse mount)."""

from __future__ import annotations

import os
import shutil

import pytest

from xcbench.cell.layout import layout_xattrs
from xcbench.ceph.pools import pool_settings

pytestmark = pytest.mark.integration


def test_pool_settings_and_ec_profile(ceph_cluster):
    rep = pool_settings(ceph_cluster, ceph_cluster.pools["replicated"])
    assert rep["settings"]["pool"] == ceph_cluster.pools["replicated"] and "ec_profile" not in rep
    assert rep["settings"]["size"] >= 1
    ec = pool_settings(ceph_cluster, ceph_cluster.pools["erasure"])
    prof = ec["ec_profile"]
    assert ec["settings"]["erasure_code_profile"] and int(prof["k"]) >= 2 and int(prof["m"]) >= 1
    assert ec["settings"]["size"] == int(prof["k"]) + int(prof["m"])
    gone = pool_settings(ceph_cluster, "xcb-analysis-no-such-pool")
    assert "error" in gone  # recorded, not raised: a fingerprint never stops a run


def test_layout_xattrs_as_applied(ceph_fuse_mount):
    d = ceph_fuse_mount / f"analysis-fp-{os.getpid()}"
    d.mkdir()
    try:
        os.setxattr(d, "ceph.dir.layout", b"stripe_unit=1048576 stripe_count=4 object_size=4194304")
        got = layout_xattrs(d)
        assert got["stripe_unit"] == 1 << 20 and got["stripe_count"] == 4
        assert got["object_size"] == 4 << 20 and got["xattr"] == "ceph.dir.layout" and got["pool"]
    finally:
        shutil.rmtree(d, ignore_errors=True)
