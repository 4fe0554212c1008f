"""Fixtures the backend tests share: a workdir the xrootd user can reach, the module's backend
(``BACKEND`` of the test module) on the session's cluster, the gateway module, and the demo
matrix's shape run once for the session (``demo_run``), and a second mini cluster on a module's
emulated hosts' bridge (``bridge_cluster``)."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.support.demorun import run_demo_shape
from tests.support.gwcheck import xrootd_workdir
from xcbench.ceph.mini import MiniCluster


@pytest.fixture(scope="module")
def workdir(request):
    # not pytest's tmp_path: the xrootd user must reach the mount and the gateway dirs below it
    name = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_").replace("_", "-")
    with xrootd_workdir(f"xcb-test-{name}-") as d:
        yield d


@pytest.fixture(scope="module")
def backend(request, ceph_cluster, workdir):
    """An instance of the test module's ``BACKEND``; closed (unmounted) after the module."""
    from xcbench.system.proc import ProcessSet
    procs = ProcessSet()
    b = request.module.BACKEND(ceph_cluster, workdir, procs)
    try:
        yield b
    finally:
        b.close()
        procs.stop_all()


@pytest.fixture(scope="module")
def gateway_mod():
    return pytest.importorskip("xcbench.gateway")


@pytest.fixture(scope="session")
def demo_run(ceph_cluster, tmp_path_factory):
    """The demo matrix's shape run once for the session (tests/support/demorun.py)."""
    return run_demo_shape(ceph_cluster, tmp_path_factory.mktemp("demo-run"))


@pytest.fixture(scope="module")
def bridge_cluster(bridge_site):
    """A second mini cluster listening on the bridge address of the module's emulated hosts only
    (they reach it; the session's cluster listens on loopback); down after, nothing of it left.
    ``bridge_site``, the module's own fixture: (a dir for the cluster's state, the bridge's
    address)."""
    where, addr = bridge_site
    if shutil.which("ceph-mon") is None:
        pytest.skip("ceph-mon is not installed")
    mc = MiniCluster(where / "cluster")
    t0 = time.monotonic()
    try:
        cluster, _ = mc.up(addr=addr)
        print(f"\nmini cluster on {addr}: up in {time.monotonic() - t0:.1f} s")
        yield cluster
    finally:
        mc.down()
        assert not mc.state.exists()
