"""The probe tests' CephFS: one ceph-fuse mount of the session's cluster for the package's
modules (each test makes and removes its own layout dir on it)."""

from __future__ import annotations

import pytest

from tests.support.gwcheck import xrootd_workdir
from xcbench.backends import get_backend
from xcbench.system import proc


@pytest.fixture(scope="package")
def cephfs_backend(ceph_cluster):
    with xrootd_workdir("xcb-test-probes-") as d:
        procs = proc.ProcessSet()
        backend = get_backend("cephfs")(ceph_cluster, d, procs)
        yield backend
        backend.close()
        procs.stop_all()
