"""The pytest plugin's "how to fix" message when Ceph is not installed (no cluster needed)."""

import sys

from xcbench.system.proc import run


def test_missing_ceph_mon_says_how_to_fix(tmp_path):
    (tmp_path / "test_inner.py").write_text("def test_x(ceph_cluster):\n    pass\n")
    r = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", tmp_path / "bt",
             tmp_path / "test_inner.py"], cwd=tmp_path, check=False, timeout=120,
            env={"PATH": str(tmp_path / "empty-bin"), "CEPH_CONF": "", "CEPH_ARGS": ""})
    assert r.returncode == 1, r.stdout[-1500:]
    assert "ceph-mon not found" in r.stdout and "make setup" in r.stdout and "--ceph-conf" in r.stdout
    assert "Traceback" not in r.stdout
    assert not list((tmp_path / "bt").glob("xcb-session*"))
