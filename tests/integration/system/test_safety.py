"""Safe on a site's cluster, on the real mini cluster: a cleanup never crosses a mount
into the file system; a run with a non-admin key changes no caps and either completes or stops
in one line naming the missing cap; no key reaches the run directory; key copies are removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from xcbench.backends.base import backend_class
from xcbench.ceph import access
from xcbench.ceph.bootstrap import key_of, keyring_text
from xcbench.run.runner import Runner, RunOptions, StopFlag
from xcbench.system import mounts as sysmounts

pytestmark = pytest.mark.integration
XCBENCH = [sys.executable, "-m", "xcbench.cli"]
ISSUE_CAPS = {"mon": "allow rw", "osd": "allow rwx", "mds": "allow rw", "mgr": "allow r"}


def _fs_root_file(cluster, name: str, data: bytes | None = None) -> bytes | None:
    """Write (data given) or read a file at the root of the CephFS, outside /xcbench, via
    libcephfs as the cluster's admin (no mount involved)."""
    import cephfs
    fs = cephfs.LibCephFS(conffile=str(cluster.conf), auth_id=cluster.ceph_id)
    try:
        if cluster.keyring:
            fs.conf_set("keyring", str(cluster.keyring))
        fs.conf_set("client_fs", cluster.fs_name)
        fs.mount()
        if data is not None:
            fd = fs.open(f"/{name}".encode(), "w", 0o644)
            fs.write(fd, data, 0)
            fs.close(fd)
            return None
        try:
            st = fs.stat(f"/{name}".encode())
        except cephfs.ObjectNotFound:
            return None
        fd = fs.open(f"/{name}".encode(), "r", 0)
        try:
            return fs.read(fd, 0, st.st_size)
        finally:
            fs.close(fd)
    finally:
        fs.shutdown()


def test_scratch_cleanup_never_deletes_into_a_left_mount(ceph_cluster):
    """A ceph-fuse mount of the file system's ROOT left under the runner's scratch dir (a cell
    that failed between mount and unmount), and a file outside /xcbench in that file system:
    the runner's cleanup unmounts its own mount and deletes nothing through it."""
    if not ceph_cluster.fs_name:
        pytest.skip("the cluster has no CephFS")
    precious = f"xcb-safety-outside-{os.getpid()}"
    _fs_root_file(ceph_cluster, precious, b"the site's data")
    run = SimpleNamespace(path=Path(f"safety-{os.getpid()}"))
    runner = Runner(SimpleNamespace(cells=[]), ceph_cluster, run, RunOptions(baseline=False),
                    StopFlag())
    mnt = runner.scratch / "cell-x" / "cephfs"
    ceph_cluster.fuse_mount(mnt)  # the worst case: the root, not /xcbench/<run>
    try:
        assert (mnt / precious).read_bytes() == b"the site's data"  # reachable through it
        runner.execute()  # no cells: just the cleanup, as at the end of every run
        assert not sysmounts.is_mount_point(mnt) and not runner.scratch.exists()
        assert _fs_root_file(ceph_cluster, precious) == b"the site's data"
    finally:
        if sysmounts.is_mount_point(mnt):
            ceph_cluster.fuse_umount(mnt)
        shutil.rmtree(runner.scratch, ignore_errors=True)
        import cephfs
        fs = cephfs.LibCephFS(conffile=str(ceph_cluster.conf), auth_id=ceph_cluster.ceph_id)
        if ceph_cluster.keyring:
            fs.conf_set("keyring", str(ceph_cluster.keyring))
        fs.conf_set("client_fs", ceph_cluster.fs_name)
        fs.mount()
        fs.unlink(f"/{precious}".encode())
        fs.shutdown()


def test_scratch_cleanup_refuses_a_mount_it_cannot_remove(tmp_path, capsys):
    """A mount that stays (here: unmount=False, as for a tree that is not xcbench's own) is
    named and never walked into."""
    from xcbench.system import fsutil, proc
    t = tmp_path / "scratch"
    mnt = t / "m"
    mnt.mkdir(parents=True)
    if proc.run(["mount", "-t", "tmpfs", "-o", "size=1m", "xcb-t", str(mnt)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mnt / "theirs").write_text("x")
        assert fsutil.remove_tree(t) == [mnt] and (mnt / "theirs").exists()
    finally:
        proc.run(["umount", "-l", str(mnt)], check=False)


# ---- a run with a non-admin key ---------------------------------------------------------------
MATRIX = """
name: safety
defaults:
  concurrency: [1]
  file_size: 1M
  files: 2
  probe: {runtime: 1, size: 4M, iodepth: 1}
  campaign: {timeout: 60}
backends:
  rados: {layouts: [{stripe_unit: 1M, stripe_count: 1, object_size: 1M}], pools: [replicated]}
"""


def _make_key(cluster, entity: str, caps: dict[str, str], where: Path) -> tuple[Path, str]:
    flat = [x for kv in caps.items() for x in kv]
    key = key_of(cluster.mon_command("auth get-or-create", entity=f"client.{entity}", caps=flat))
    path = where / f"ceph.client.{entity}.keyring"
    path.write_text(keyring_text(f"client.{entity}", key))
    path.chmod(0o600)
    return path, key


def _caps(cluster, entity: str) -> dict:
    return cluster.mon_command("auth get", entity=f"client.{entity}")[0]["caps"]


@pytest.fixture
def site(ceph_cluster, tmp_path):
    """The mini cluster seen as a site's: its conf copied without cluster.json (bring-your-own),
    keys made by the admin handle, removed afterwards."""
    d = tmp_path / "site"
    d.mkdir()
    conf = d / "ceph.conf"
    conf.write_text("".join(ln for ln in ceph_cluster.conf.read_text().splitlines(True)
                            if not ln.strip().startswith("keyring")))  # no path to admin's keyring
    made: list[str] = []

    def key(name: str, caps: dict[str, str]) -> tuple[Path, str]:
        made.append(name)
        return _make_key(ceph_cluster, name, caps, d)
    yield SimpleNamespace(conf=conf, dir=d, key=key)
    for name in made:
        ceph_cluster.mon_command("auth del", entity=f"client.{name}")


def _run(site, tmp_path, key_id, keyring, gw_id, gw_keyring):
    m = tmp_path / "m.yaml"
    m.write_text(MATRIX)
    env = {**os.environ, "XCBENCH_HOME": str(tmp_path / "home"), "CEPH_ARGS": "", "CEPH_CONF": ""}
    cmd = XCBENCH + ["run", str(m), "--store", str(tmp_path / "results"), "--run-name", "r",
                     "--ceph-conf", str(site.conf), "--ceph-id", key_id, "--keyring", str(keyring),
                     "--gateway-id", gw_id, "--gateway-keyring", str(gw_keyring),
                     "--no-baseline", "--no-report", "--telemetry", "none"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def test_run_with_the_issue_bench_key(ceph_cluster, site, tmp_path):
    """`--ceph-id bench` with mon 'allow rw' osd 'allow rwx' mds 'allow rw' mgr 'allow r':
    no `auth caps` (the key's caps are the same after), the gateway uses its own key, the cell
    completes, and no secret reaches the run directory; the key copies are gone after."""
    bench_kr, bench_key = site.key("xcbt-bench", ISSUE_CAPS)
    gw_caps = access.gateway_caps(access.Needs(rados_pools=[ceph_cluster.pools["replicated"]]))
    gw_kr, gw_key = site.key("xcbt-gw", gw_caps)
    before = (_caps(ceph_cluster, "xcbt-bench"), _caps(ceph_cluster, "xcbt-gw"))
    r = _run(site, tmp_path, "xcbt-bench", bench_kr, "xcbt-gw", gw_kr)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (_caps(ceph_cluster, "xcbt-bench"), _caps(ceph_cluster, "xcbt-gw")) == before
    run_dir = tmp_path / "results" / "r"
    manifest = (run_dir / "manifest.json").read_text()
    assert '"complete"' in manifest
    for f in run_dir.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert bench_key.encode() not in data and gw_key.encode() not in data, f
    assert not list((tmp_path / "home" / "keydirs").glob("*.json"))  # copies removed at the end
    left = [p for p in Path("/var/tmp").glob("xcbench-keys-*") if p.stat().st_uid == os.getuid()
            and (p / "ceph.client.xcbt-gw.keyring").exists()]
    assert left == []


def test_too_few_caps_stop_in_one_line_before_touching(ceph_cluster, site, tmp_path):
    weak_kr, _ = site.key("xcbt-weak", {"mon": "allow r", "osd": "allow r"})
    gw_kr, _ = site.key("xcbt-gw2", {"mon": "allow r", "osd": "allow r"})
    pools_before = set(ceph_cluster.pool_names())
    r = _run(site, tmp_path, "xcbt-weak", weak_kr, "xcbt-gw2", gw_kr)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "auth:" not in ln
             and "AuthRegistry" not in ln and not ln.startswith("20")]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "client.xcbt-weak may not" in lines[0] and "missing mgr 'allow r'" in lines[0]
    assert "ceph auth get-or-create client.xcb-bench" in lines[0]
    assert set(ceph_cluster.pool_names()) == pools_before
    assert not (tmp_path / "results" / "r").exists()  # stopped before the run began
    assert _caps(ceph_cluster, "xcbt-weak") == {"mon": "allow r", "osd": "allow r"}


def test_no_gateway_key_says_so(ceph_cluster, site, tmp_path):
    bench_kr, _ = site.key("xcbt-bench3", ISSUE_CAPS)
    r = _run(site, tmp_path, "xcbt-bench3", bench_kr, "xcbt-bench3", bench_kr)
    assert r.returncode == 2 and "gateway needs its own key" in r.stderr
    assert "xcbench cluster caps" in r.stderr


def test_least_privilege_key_for_cephfs(ceph_cluster, site):
    """The bench key `cluster caps` prints (mds path=/xcbench) prepares a CephFS cell: it mounts
    only /xcbench/<run>, sets the layout, and removes the run dir after."""
    from xcbench.backends.cephfs import BACKEND
    from xcbench.cell import Cell, Layout, PoolSpec
    from xcbench.ceph.cluster import Cluster
    from xcbench.system.proc import ProcessSet
    pool = PoolSpec("replicated", size=1)
    ceph_cluster.ensure_pool(pool, cephfs=True)  # the admin's part (`cluster caps` step 3)
    needs = access.Needs(pools={pool.name: pool}, cephfs_pools=[pool.name])
    kr, _ = site.key("xcbt-lp", access.bench_caps(needs, ceph_cluster.fs_name))
    _fs_mkdir_top(ceph_cluster)
    c = Cluster.from_conf(site.conf, "xcbt-lp", kr, fs_name=ceph_cluster.fs_name)
    work = Path(tempfile.mkdtemp(prefix="xcb-safety-"))
    work.chmod(0o755)
    b = BACKEND(c, work, ProcessSet())
    try:
        access.check_access(c, backend_of=backend_class, cells=[Cell(id="lp", label="lp", backend="cephfs",
                                     layout=Layout(1 << 20, 1, 4 << 20), pool=pool)])
        t = b.prepare(Cell(id="lp", label="lp", backend="cephfs", layout=Layout(1 << 20, 1, 4 << 20),
                           pool=pool))
        ev = b.verify(t)
        assert ev["file_layout"]["pool"] == pool.name
        run_root = b.run_root
        b.cleanup(t)
        assert not sysmounts.is_mount_point(b.mountpoint)
        assert _fs_exists(ceph_cluster, run_root) is False
    finally:
        b.close()
        c.close()
        shutil.rmtree(work, ignore_errors=True)


def _admin_fs(cluster):
    import cephfs
    fs = cephfs.LibCephFS(conffile=str(cluster.conf), auth_id=cluster.ceph_id)
    if cluster.keyring:
        fs.conf_set("keyring", str(cluster.keyring))
    fs.conf_set("client_fs", cluster.fs_name)
    fs.mount()
    return fs


def _fs_mkdir_top(cluster) -> None:
    import cephfs
    fs = _admin_fs(cluster)
    try:
        fs.mkdir(b"/xcbench", 0o755)
    except cephfs.ObjectExists:
        pass
    finally:
        fs.shutdown()


def _fs_exists(cluster, path: str) -> bool:
    import cephfs
    fs = _admin_fs(cluster)
    try:
        fs.stat(path.encode())
        return True
    except cephfs.ObjectNotFound:
        return False
    finally:
        fs.shutdown()


def test_issue_bench_key_without_p_names_the_cap(ceph_cluster, site):
    """The issue's bench key (mds 'allow rw': no p) cannot set a layout: prepare says which cap,
    and leaves neither a mount nor its run dir behind."""
    from xcbench.backends.cephfs import BACKEND
    from xcbench.cell import Cell, Layout, PoolSpec
    from xcbench.ceph.cluster import Cluster
    from xcbench.errors import XcbError
    from xcbench.system.proc import ProcessSet
    pool = PoolSpec("replicated", size=1)
    ceph_cluster.ensure_pool(pool, cephfs=True)
    kr, _ = site.key("xcbt-nop", ISSUE_CAPS)
    c = Cluster.from_conf(site.conf, "xcbt-nop", kr, fs_name=ceph_cluster.fs_name)
    work = Path(tempfile.mkdtemp(prefix="xcb-safety-"))
    work.chmod(0o755)
    b = BACKEND(c, work, ProcessSet())
    try:
        with pytest.raises(XcbError, match="missing the p of mds 'allow rwp'"):
            b.prepare(Cell(id="nop", label="nop", backend="cephfs",
                           layout=Layout(1 << 20, 1, 4 << 20), pool=pool))
        assert not sysmounts.is_mount_point(b.mountpoint) and b.run is None
    finally:
        b.close()
        c.close()
        shutil.rmtree(work, ignore_errors=True)
