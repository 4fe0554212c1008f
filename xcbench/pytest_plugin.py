"""pytest plugin (entry point pytest11): the session-scoped ``ceph_cluster`` fixture.

Starts the embedded mini cluster once per session (state under pytest's tmp dir, taken down at
the end), or uses an existing cluster given with
``pytest --ceph-conf=PATH [--ceph-id=NAME] [--ceph-keyring=PATH] [--ceph-fs=NAME]``
(a vstart cluster, a site dev cluster, or `xcbench cluster up`'s) and starts nothing.
``ceph_fuse_mount`` (session) mounts the cluster's CephFS with ceph-fuse under a tmp dir.
"""

from __future__ import annotations

import os
import shutil

import pytest

from xcbench.cell import Cell
from xcbench.ceph.cluster import Cluster
from xcbench.ceph.mini import BINARIES, MiniCluster
from xcbench.errors import XcbError
from xcbench.run import matrix_sections  # noqa: F401 (tests load matrices)
from xcbench.run.session import CellSession
from xcbench.system.proc import ProcessSet, pid_alive

HOW_TO_FIX = ("Fix: run `make setup` (installs the Debian packages ceph-mon ceph-osd ceph-mgr "
              "ceph-mds ceph-common ceph-fuse), or test against an existing cluster with "
              "`pytest --ceph-conf=PATH --ceph-id=NAME`.")


def pytest_addoption(parser):
    g = parser.getgroup("xcbench", "xcbench: Ceph cluster for the ceph_cluster fixture")
    g.addoption("--ceph-conf", metavar="PATH", default=None,
                help="use this existing cluster instead of starting a mini cluster")
    g.addoption("--ceph-id", metavar="NAME", default=None, help="client id for --ceph-conf (default admin)")
    g.addoption("--ceph-keyring", metavar="PATH", default=None, help="keyring of that client")
    g.addoption("--ceph-fs", metavar="NAME", default=None, help="CephFS to use (default: the only one)")
    g.addoption("--ceph-objectstore", default="bluestore", choices=("bluestore", "memstore"),
                help="objectstore of the session's mini cluster")


def _missing_prerequisite() -> str | None:
    for b in BINARIES:
        if shutil.which(b) is None:
            return f"{b} not found: the integration tests need a real Ceph cluster. {HOW_TO_FIX}"
    return None


@pytest.fixture(scope="session")
def ceph_cluster(request, tmp_path_factory):
    """A Cluster: the one given by --ceph-conf, else a mini cluster started for this session."""
    opt = request.config.getoption
    if opt("ceph_conf"):
        try:
            cluster = Cluster.from_conf(opt("ceph_conf"), opt("ceph_id"), opt("ceph_keyring"),
                                        fs_name=opt("ceph_fs"))
            cluster.rados()
            cluster.discover_fs()
        except XcbError as e:
            pytest.fail(f"--ceph-conf: {e}", pytrace=False)
        yield cluster
        cluster.close()
        return
    why = _missing_prerequisite()
    if why:
        pytest.fail(why, pytrace=False)
    _down_orphans(tmp_path_factory.getbasetemp().parent)
    session = tmp_path_factory.mktemp("xcb-session")
    (session / "owner.pid").write_text(f"{os.getpid()}\n")
    mc = MiniCluster(session / "cluster")
    try:
        cluster, _ = mc.up(objectstore=opt("ceph_objectstore"))
    except XcbError as e:
        mc.down()
        pytest.fail(f"could not start the mini cluster: {e}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.close()
        mc.down()
        (session / "owner.pid").unlink(missing_ok=True)


def _down_orphans(root) -> None:
    """Take down session clusters left running by a pytest that was killed (no teardown ran)."""
    for owner in {p.resolve() for p in root.glob("pytest-*/xcb-session*/owner.pid")}:
        try:
            pid = int(owner.read_text())
        except (OSError, ValueError):
            continue
        if not pid_alive(pid):
            try:
                MiniCluster(owner.parent / "cluster").down()
                owner.unlink()
            except Exception:  # noqa: BLE001 - best effort, never fail a session on it
                pass


@pytest.fixture(scope="session")
def ceph_fuse_mount(ceph_cluster, tmp_path_factory):
    """Path of a ceph-fuse mount of the cluster's CephFS (root of the fs), for the session."""
    if not os.path.exists("/dev/fuse"):
        pytest.fail("/dev/fuse is missing, ceph-fuse cannot mount CephFS. Fix: `modprobe fuse`, "
                    "or give the container `--device /dev/fuse --cap-add SYS_ADMIN`.", pytrace=False)
    if shutil.which("ceph-fuse") is None:
        pytest.fail(f"ceph-fuse not found. {HOW_TO_FIX}", pytrace=False)
    if not ceph_cluster.fs_name:
        pytest.skip("the cluster has no CephFS file system (give --ceph-fs NAME)")
    mnt = tmp_path_factory.mktemp("cephfs")
    ceph_cluster.fuse_mount(mnt)
    try:
        yield mnt
    finally:
        ceph_cluster.fuse_umount(mnt)


@pytest.fixture
def tmpfs_gateway(tmp_path):
    """A started xcbench.gateway.Gateway on a fresh 512 MiB tmpfs target; stopped and the
    target removed afterwards. (Owner: gateway engineer; see tests/support/gwcheck.py.)"""
    procs = ProcessSet()
    cell = Cell(id="tmpfs-fixture", label="tmpfs fixture", backend="tmpfs", tmpfs_size=512 << 20)
    try:
        with CellSession(cell, cluster=None, workdir=tmp_path, procs=procs, name="fixture") as s:
            yield s.gateway
    finally:
        procs.stop_all()
