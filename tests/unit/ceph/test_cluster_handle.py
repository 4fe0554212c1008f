"""Cluster handle construction, the command line, and `down` safety (no cluster needed)."""

import json
import os
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from xcbench.ceph import pools as cephpools
from xcbench.ceph.cluster import Cluster, cluster_from_args
from xcbench.ceph.mini import MARKER, MiniCluster
from xcbench.errors import XcbError
from xcbench.system.proc import pid_alive, run

XCBENCH = [sys.executable, "-m", "xcbench.cli"]


def _conf(path: Path, extra: str = "") -> Path:
    path.write_text(f"# {MARKER}\n[global]\nmon host = [v2:127.0.0.1:9,v1:127.0.0.1:10]\n{extra}")
    return path


def test_from_conf_without_cluster_json_is_bring_your_own(tmp_path):
    with pytest.raises(XcbError, match="keyring: cannot read: no such file"):
        Cluster.from_conf(_conf(tmp_path / "ceph.conf"), "alice", tmp_path / "k")
    (tmp_path / "k").write_text("[client.alice]\n\tkey = AQ==\n")
    c = Cluster.from_conf(_conf(tmp_path / "ceph.conf"), "alice", tmp_path / "k")
    assert not c.embedded and c.ceph_id == c.fs_ceph_id == "alice"
    assert c.gateway_id == "xcb-gw" and c.gateway_keyring is None  # its own key, never alice's
    assert c.keyring == tmp_path / "k" and c.fs_name is None
    assert c.pools["replicated"].startswith("xcb-") and c.pools["erasure"].startswith("xcb-")
    assert c.ceph_cli("-s")[:5] == ["ceph", "-c", str(tmp_path / "ceph.conf"), "--id", "alice"]


def test_from_conf_reads_cluster_json(tmp_path):
    conf = _conf(tmp_path / "ceph.conf")
    (tmp_path / "cluster.json").write_text(json.dumps({
        "client_id": "admin", "keyring": str(tmp_path / "a.keyring"), "gateway_id": "xcb-gw",
        "gateway_keyring": str(tmp_path / "gw.keyring"), "fs_name": "xcb-fs", "fs_client_id": "xcb-fs",
        "fs_keyring": str(tmp_path / "fs.keyring"), "pools": {"replicated": "xcb-rep1"},
        "state_dir": str(tmp_path)}))
    c = Cluster.from_conf(conf)
    assert c.embedded and c.state_dir == tmp_path and c.gateway_id == "xcb-gw"
    assert c.keyring == tmp_path / "a.keyring" and c.fs_name == "xcb-fs"
    other = Cluster.from_conf(conf, "xcb-gw")
    assert other.ceph_id == "xcb-gw" and other.keyring is None  # found via the conf's keyring pattern


def test_cluster_from_args_precedence(tmp_path, monkeypatch):
    a, b, c = (_conf(tmp_path / f"{n}.conf") for n in "abc")
    monkeypatch.setenv("CEPH_CONF", str(b))
    monkeypatch.setenv("CEPH_ARGS", f"-c {c} --id envid")
    args = Namespace(ceph_conf=str(a), ceph_id=None, keyring=None, fs=None, state_dir=None)
    got = cluster_from_args(args, connect=False)
    assert got.conf == a and got.ceph_id == "envid"
    args.ceph_conf = None
    assert cluster_from_args(args, connect=False).conf == b
    monkeypatch.delenv("CEPH_CONF")
    assert cluster_from_args(args, connect=False).conf == c
    monkeypatch.delenv("CEPH_ARGS")
    args.state_dir = str(tmp_path / "nothing")
    with pytest.raises(XcbError, match="no embedded cluster"):
        cluster_from_args(args, connect=False)


def test_ensure_pool_refuses_foreign_names():
    with pytest.raises(XcbError, match="only creates or writes pools named xcb-"):
        cephpools.check_name("rbd")
    cephpools.check_name("xcb-ec4-2")


@pytest.mark.parametrize("content", [None, b"\x00\x01garbage", b"just words\n"])
def test_cli_bad_conf_is_one_line(tmp_path, content):
    conf = tmp_path / "ceph.conf"
    if content is not None:
        conf.write_bytes(content)
    r = run(XCBENCH + ["cluster", "status", "--ceph-conf", conf], check=False, timeout=60,
            env={"CEPH_ARGS": "", "CEPH_CONF": ""})
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xcbench: error: ") and str(conf) in lines[0]
    assert "Traceback" not in r.stderr


def test_down_refuses_foreign_dir_and_ignores_stale_pid_files(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious").write_text("x")
    with pytest.raises(XcbError, match="refusing"):
        MiniCluster(foreign).down()
    assert (foreign / "precious").exists()
    assert MiniCluster(tmp_path / "absent").down() == 0
    # a stale pid file naming a live process that is not ours (this very test): not touched
    state = tmp_path / "state"
    (state / "run").mkdir(parents=True)
    _conf(state / "ceph.conf", f"run dir = {state / 'run'}\n")
    (state / "run" / "mon.a.pid").write_text(f"{os.getpid()}\n")
    (state / "run" / "osd.0.pid").write_text("999999999\n")
    MiniCluster(state)._mark()  # what `cluster up` writes first
    assert MiniCluster(state).down() == 0
    assert pid_alive(os.getpid()) and not state.exists()


def test_cluster_down_acts_only_on_a_cluster_it_made_on_this_host(tmp_path, capsys):
    """A dir that merely holds a cluster.json (and an xcbench conf) is not proof; nor is the
    marker of another host (a shared home) or one copied from another dir."""
    import json

    from xcbench import cli
    from xcbench.system import statedir
    d = tmp_path / "dir"
    d.mkdir()
    (d / "cluster.json").write_text(json.dumps({"version": 1, "state_dir": str(d)}))
    _conf(d / "ceph.conf", "")
    (d / "precious").write_text("x")
    assert cli.main(["cluster", "down", "--state-dir", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refusing" in err and "no proof xcbench made" in err
    assert (d / "precious").exists()
    MiniCluster(d)._mark()
    mark = d / ".xcbench-cluster"
    mark.write_text(json.dumps({**json.loads(mark.read_text()), "host": "other-host"}))
    assert cli.main(["cluster", "down", "--state-dir", str(d)]) == 2
    assert "written on host 'other-host'" in capsys.readouterr().err and (d / "precious").exists()
    mark.write_text(json.dumps({**json.loads(mark.read_text()), "host": statedir.HOST,
                                "state_dir": str(tmp_path / "elsewhere")}))
    assert cli.main(["cluster", "down", "--state-dir", str(d)]) == 2 and (d / "precious").exists()
    with pytest.raises(XcbError, match="holds no xcbench cluster of this host"):
        MiniCluster(d).up()
