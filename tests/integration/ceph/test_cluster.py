"""The cluster against real Ceph: pools, CephFS, keys, CLI, and one full up/down/up cycle."""

import json
import os
import pwd
import shutil
import signal
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from xcbench.cell import PoolSpec
from xcbench.ceph import conf as cephconf
from xcbench.ceph import pools as cephpools
from xcbench.ceph.cluster import Cluster
from xcbench.ceph.mini import MiniCluster
from xcbench.errors import XcbError
from xcbench.system import mounts as sysmounts
from xcbench.system.proc import run

pytestmark = pytest.mark.integration
XCBENCH = [sys.executable, "-m", "xcbench.cli"]
NO_ENV = {"CEPH_CONF": "", "CEPH_ARGS": "", "XCBENCH_HOME": ""}


def _name(what: str) -> str:
    return f"cluster-test-{what}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("role", ["replicated", "erasure"])
def test_object_write_read(ceph_cluster, role):
    obj, data = _name(role), os.urandom(3 << 20)
    with ceph_cluster.ioctx(ceph_cluster.pools[role]) as io:
        io.write_full(obj, data)
        try:
            assert io.read(obj, len(data) + 1) == data
        finally:
            io.remove_object(obj)


def test_cephfs_mkdir_through_binding(ceph_cluster):
    import cephfs
    fs = cephfs.LibCephFS(conffile=str(ceph_cluster.conf), auth_id=ceph_cluster.fs_ceph_id)
    if ceph_cluster.fs_keyring:
        fs.conf_set("keyring", str(ceph_cluster.fs_keyring))
    fs.mount(filesystem_name=ceph_cluster.fs_name)
    d = f"/{_name('dir')}"
    try:
        fs.mkdir(d, 0o755)
        fs.setxattr(d, "ceph.dir.layout.pool", ceph_cluster.pools["erasure"].encode(), 0)
        assert fs.getxattr(d, "ceph.dir.layout.pool").decode() == ceph_cluster.pools["erasure"]
        fs.rmdir(d)
    finally:
        fs.unmount()
        fs.shutdown()


def test_status_json_and_env(ceph_cluster):
    r = run(XCBENCH + ["cluster", "status", "--json", "--ceph-conf", ceph_cluster.conf], env=NO_ENV)
    s = json.loads(r.stdout)
    assert s["health"] in ("HEALTH_OK", "HEALTH_WARN") and s["osds"]["up"] == s["osds"]["num"] >= 3
    names = {p["name"]: p for p in s["pools"]}
    assert names["xcb-ec2-1"]["type"] == "erasure" and "rados" in names["xcb-ec2-1"]["applications"]
    fs = {f["name"]: f for f in s["fs"]}[ceph_cluster.fs_name]
    assert any(m["state"] == "up:active" for m in fs["mds"])
    assert {"xcb-rep3", "xcb-ec2-1"} <= set(fs["data_pools"])  # replicated = size 3
    assert names["xcb-rep3"]["size"] == 3 and names["xcb-rep3"]["type"] == "replicated"
    env = run(XCBENCH + ["cluster", "env", "--ceph-conf", ceph_cluster.conf], env=NO_ENV).stdout
    assert f"export CEPH_CONF={ceph_cluster.conf}" in env and "CEPH_ARGS" in env


def test_gateway_key_for_xrootd_user(ceph_cluster):
    """The gateway conf works for the xrootd user, and its key reaches only the xcb- data pools."""
    gwdir = Path(tempfile.mkdtemp(prefix="xcb-cluster-test-"))  # pytest's tmp is 0700: xrootd can't enter
    try:
        gwdir.chmod(0o755)
        conf = ceph_cluster.gateway_conf(gwdir / "gw")
        keyring = Path(cephconf.parse_conf(conf.read_text())[f"client.{ceph_cluster.gateway_id}"]["keyring"])
        st = keyring.stat()
        assert not keyring.is_relative_to(gwdir) and st.st_mode & 0o777 == 0o400
        assert st.st_uid == pwd.getpwnam("xrootd").pw_uid
        # a fresh private dir: nobody may list it, only the xrootd group may pass through it
        kdir = keyring.parent.stat()
        assert keyring.parent.name.startswith("xcbench-keys-") and kdir.st_mode & 0o777 == 0o710
        assert kdir.st_gid == pwd.getpwnam("xrootd").pw_gid
        obj = _name("gw")
        as_xrootd = ["runuser", "-u", "xrootd", "--", "rados", "--id", ceph_cluster.gateway_id]
        env = {"CEPH_CONF": str(conf), "CEPH_ARGS": ""}
        run(as_xrootd + ["-p", ceph_cluster.pools["erasure"], "put", obj, "/etc/hostname"], env=env, timeout=60)
        run(as_xrootd + ["-p", ceph_cluster.pools["erasure"], "rm", obj], env=env, timeout=60)
        if ceph_cluster.embedded:
            denied = run(as_xrootd + ["-p", ceph_cluster.pools["fs_metadata"], "put", obj, "/etc/hostname"],
                         env=env, timeout=60, check=False)
            assert denied.returncode != 0
    finally:
        shutil.rmtree(gwdir)


def test_ensure_pool(ceph_cluster):
    with pytest.raises(XcbError, match="needs 9 OSDs"):
        ceph_cluster.ensure_pool(PoolSpec("erasure", k=6, m=3))
    assert ceph_cluster.ensure_pool(PoolSpec("erasure", k=2, m=1), cephfs=True) == "xcb-ec2-1"
    if not ceph_cluster.embedded:
        pytest.skip("creates and deletes a pool: only on a cluster xcbench made")
    name = ceph_cluster.ensure_pool(PoolSpec("replicated", size=2), cephfs=True)
    try:
        pools = {p["pool_name"]: p for p in ceph_cluster.mon_command("osd pool ls", detail="detail")}
        assert pools[name]["size"] == 2 and {"rados", "cephfs"} <= set(pools[name]["application_metadata"])
        assert name in {f["name"]: f for f in ceph_cluster.mon_command("fs ls")}[ceph_cluster.fs_name]["data_pools"]
        caps = ceph_cluster.mon_command("auth get", entity=f"client.{ceph_cluster.gateway_id}")[0]["caps"]
        assert f"pool={name}" in caps["osd"]
    finally:
        ceph_cluster.mon_command("fs rm_data_pool", fs_name=ceph_cluster.fs_name, pool=name)
        ceph_cluster.mon_command("osd pool rm", pool=name, pool2=name, yes_i_really_really_mean_it=True)
    assert ceph_cluster.osd_max_object_size() >= 4 << 20


def test_fuse_mount(ceph_fuse_mount):
    f = ceph_fuse_mount / _name("file")
    f.write_bytes(b"x" * 65536)
    try:
        assert f.read_bytes() == b"x" * 65536
        layout = os.getxattr(f, "ceph.file.layout").decode()
        assert "stripe_unit=" in layout and "pool=" in layout
    finally:
        f.unlink()
    assert sysmounts.is_mount_point(ceph_fuse_mount) and sysmounts.is_mounted(ceph_fuse_mount)
    assert ceph_fuse_mount in sysmounts.ceph_fuse_mounts()
    assert ceph_fuse_mount in sysmounts.mounts_under(ceph_fuse_mount.parent)


def _drop_pool(cluster: Cluster, name: str) -> None:
    cluster.mon_command("osd pool rm", pool=name, pool2=name, yes_i_really_really_mean_it=True)


def test_pools_create_exists_use(ceph_cluster):
    """create twice (idempotent, as two processes may), then it exists and takes writes."""
    if not ceph_cluster.embedded:
        pytest.skip("creates and deletes pools: only on a cluster xcbench made")
    tag = uuid.uuid4().hex[:6]
    rep, ec, profile = f"xcb-t{tag}-rep", f"xcb-t{tag}-ec", f"xcb-t{tag}-prof"
    try:
        for _ in range(2):
            cephpools.create_replicated(ceph_cluster, rep, 2, 8)
            cephpools.create_erasure(ceph_cluster, ec, profile, 2, 1, 8, "osd")
        detail = {p["pool_name"]: p for p in ceph_cluster.mon_command("osd pool ls", detail="detail")}
        assert {rep, ec} <= set(ceph_cluster.pool_names())
        assert detail[rep]["size"] == 2 and detail[rep]["min_size"] == 1
        assert "rados" in detail[rep]["application_metadata"]
        assert detail[ec]["erasure_code_profile"] == profile and detail[ec]["size"] == 3
        assert detail[ec]["flags_names"].find("ec_overwrites") >= 0
        prof = ceph_cluster.mon_command("osd erasure-code-profile get", name=profile)
        assert (prof["k"], prof["m"], prof["crush-failure-domain"]) == ("2", "1", "osd")
        for name in (rep, ec):
            with ceph_cluster.ioctx(name) as io:
                io.write_full("probe", b"y" * 100000)
                io.write("probe", b"z", 5)  # a partial overwrite: EC pools need ec_overwrites
                assert io.read("probe", 10) == b"yyyyyzyyyy"
                io.remove_object("probe")
    finally:
        for name in (rep, ec):
            if name in ceph_cluster.pool_names():
                _drop_pool(ceph_cluster, name)
        ceph_cluster.mon_command("osd erasure-code-profile rm", name=profile)


def test_pools_refused_on_the_real_cluster(ceph_cluster):
    before = set(ceph_cluster.pool_names())
    with pytest.raises(XcbError, match="only creates or writes pools named xcb-"):
        cephpools.create_replicated(ceph_cluster, f"t{uuid.uuid4().hex[:6]}", 1, 8)
    too_wide = ceph_cluster.num_osds() + 1
    with pytest.raises(XcbError, match=f"needs {too_wide} OSDs"):
        cephpools.ensure_pool(ceph_cluster, PoolSpec("replicated", size=too_wide))
    with pytest.raises(XcbError, match="no such file system"):
        cephpools.add_fs_data_pool(ceph_cluster, "no-such-fs", ceph_cluster.pools["replicated"])
    assert set(ceph_cluster.pool_names()) == before


def _running_with(conf: Path) -> list[int]:
    """Pids whose command line names ``conf``, found independently of MiniCluster's own scan."""
    import psutil
    return [p.pid for p in psutil.process_iter(["cmdline"]) if str(conf) in (p.info["cmdline"] or [])]


def test_up_down_cycle(tmp_path, monkeypatch):
    """Own state dir: up (no key on a command line while it is made), up again (no-op),
    crash + stale pid file, down, up (memstore), down. One bring-up serves both checks (the
    first `cluster up` from the CLI is test_cluster_prometheus's)."""
    import xcbench.ceph.mini as mini
    state = tmp_path / "c"
    # ceph-osd --mkfs gets the OSD's key from a 0600 file (--keyfile), not --key on its command
    # line (readable by every user with ps); the key reaches the OSD all the same
    seen: list[list[str]] = []
    real_run, real_spawn = mini.proc.run, mini.proc.spawn
    with monkeypatch.context() as mp:
        mp.setattr(mini.proc, "run", lambda cmd, **kw: seen.append([str(a) for a in cmd])
                   or real_run(cmd, **kw))
        mp.setattr(mini.proc, "spawn", lambda cmd, **kw: seen.append([str(a) for a in cmd])
                   or real_spawn(cmd, **kw))
        mc = MiniCluster(state)
        mc.up(objectstore="bluestore", osds=3)
    try:
        keys = [ln.split("=", 1)[1].strip() for f in state.glob("*/keyring")
                for ln in f.read_text().splitlines() if ln.strip().startswith("key")]
        assert len(keys) >= 3 and any(a[0] == "ceph-osd" and "--mkfs" in a for a in seen)
        assert not [a for a in seen for k in keys if any(k in w for w in a)]
        for i in range(3):
            osd = state / f"osd.{i}"
            assert (osd / "osd_key").read_text().strip() in keys and not (osd / "mkfs.key").exists()
        up = XCBENCH + ["cluster", "up", "--state-dir", state]
        daemons = mc.daemons()
        assert {"mon.a", "mgr.x", "mds.a", "osd.0", "osd.1", "osd.2"} <= set(daemons)
        again = run(up, env=NO_ENV, timeout=60)
        assert "already running" in again.stdout and mc.daemons() == daemons
        assert f"ceph.conf: {state / 'ceph.conf'}" in again.stdout
        cluster = Cluster.from_conf(state / "ceph.conf")
        assert cluster.embedded and cluster.fs_name == "xcb-fs"
        # crash: the mon dies, a pid file goes stale; down must still clean up everything
        os.kill(daemons["mon.a"], signal.SIGKILL)
        (state / "run" / "osd.0.pid").write_text("999999999\n")
        r = run(XCBENCH + ["cluster", "down", "--state-dir", state], env=NO_ENV, timeout=120)
        assert not state.exists() and mc.processes() == {} and not _running_with(state / "ceph.conf")
        r = run(up + ["--objectstore", "memstore", "-q"], env=NO_ENV, timeout=300)
        assert r.stdout.strip() == str(state / "ceph.conf")
        assert json.loads((state / "cluster.json").read_text())["objectstore"] == "memstore"
        with Cluster.from_conf(state / "ceph.conf") as c, c.ioctx("xcb-ec2-1") as io:
            io.write_full("o", b"memstore")
            assert io.read("o") == b"memstore"
        run(XCBENCH + ["cluster", "down", "--state-dir", state], env=NO_ENV, timeout=120)
        assert not state.exists() and mc.processes() == {}
    finally:  # a failed check leaves no cluster behind
        if state.exists():
            mc.down()
