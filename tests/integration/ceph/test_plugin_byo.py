"""The pytest plugin against an already running cluster (--ceph-conf) starts no other."""

import sys
import uuid

import pytest

from xcbench.system.proc import run

pytestmark = pytest.mark.integration

INNER = '''
def test_uses_given_cluster(ceph_cluster, pytestconfig):
    assert str(ceph_cluster.conf) == pytestconfig.getoption("ceph_conf")
    assert ceph_cluster.pools["replicated"].startswith("xcb-")
    with ceph_cluster.ioctx(ceph_cluster.pools["replicated"]) as io:
        io.write_full("OBJ", b"byo")
        assert io.read("OBJ") == b"byo"
        io.remove_object("OBJ")
'''


def test_plugin_uses_ceph_conf(ceph_cluster, tmp_path):
    obj = f"cluster-test-byo-{uuid.uuid4().hex[:8]}"
    (tmp_path / "test_inner.py").write_text(INNER.replace("OBJ", obj))
    basetemp = tmp_path / "inner-tmp"
    r = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", basetemp,
             "--ceph-conf", ceph_cluster.conf, "--ceph-id", ceph_cluster.ceph_id,
             tmp_path / "test_inner.py"], cwd=tmp_path, check=False, timeout=120,
            env={"CEPH_CONF": "", "CEPH_ARGS": ""})
    assert r.returncode == 0, r.stdout[-2000:]
    assert "1 passed" in r.stdout
    # the fixture made no state dir of its own, so it started no cluster
    assert not list(basetemp.glob("xcb-session*"))
    with ceph_cluster.ioctx(ceph_cluster.pools["replicated"]) as io:
        assert obj not in [o.key for o in io.list_objects()]


def test_plugin_bad_ceph_conf_fails_in_one_line(tmp_path):
    (tmp_path / "test_inner.py").write_text("def test_x(ceph_cluster):\n    pass\n")
    missing = tmp_path / "missing.conf"
    r = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
             tmp_path / "bt", "--ceph-conf", missing, tmp_path / "test_inner.py"],
            cwd=tmp_path, check=False, timeout=120)
    assert r.returncode == 1
    assert f"--ceph-conf: {missing}: ceph.conf not found" in r.stdout
