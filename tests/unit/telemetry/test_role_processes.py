"""Which processes play which role in a cell: providers of the roles device (real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from xcbench.ceph.mini import MiniCluster
from xcbench.telemetry import role_processes
from xcbench.telemetry.devices import build


@pytest.fixture
def sleeper_with(tmp_path):
    """Start a process whose command line names a path (as a ceph daemon names its conf)."""
    started = []

    def start(*args: str) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])
        started.append(p)
        deadline = time.monotonic() + 10  # its command line is readable once exec is done
        while args and args[-1].encode() not in Path(f"/proc/{p.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        return p
    yield start
    for p in started:
        p.kill()
        p.wait()


def _mini(tmp_path):
    state = tmp_path / "cluster"
    (state / "run").mkdir(parents=True)
    (state / "ceph.conf").write_text(f"[global]\nrun dir = {state / 'run'}\n")
    return MiniCluster(state)


def test_mini_cluster_roles_come_from_pid_files_that_name_its_conf(tmp_path, sleeper_with):
    mini = _mini(tmp_path)
    osd = sleeper_with("-c", str(mini.conf), "-i", "0")
    mds = sleeper_with("-c", str(mini.conf), "-i", "a")
    other = sleeper_with("-c", str(tmp_path / "another.conf"))  # a reused or foreign pid
    run = mini.run_dir()
    (run / "osd.0.pid").write_text(f"{osd.pid}\n")
    (run / "osd.1.pid").write_text(f"{other.pid}\n")
    (run / "mds.a.pid").write_text(f"{mds.pid}\n")
    (run / "mon.a.pid").write_text("not a pid\n")
    (run / "client.admin.pid").write_text(f"{osd.pid}\n")
    assert mini.role_pids() == {"osd": [osd.pid], "mds": [mds.pid], "mon": [], "mgr": []}


def test_cell_roles_of_an_embedded_cluster(tmp_path, sleeper_with):
    mini = _mini(tmp_path)
    osd = sleeper_with("-c", str(mini.conf))
    (mini.run_dir() / "osd.0.pid").write_text(f"{osd.pid}\n")
    mnt = tmp_path / "mnt"
    cluster = SimpleNamespace(embedded=True, state_dir=mini.state, conf=mini.conf)
    gw = SimpleNamespace(pids=[os.getpid() + 100000])
    target = SimpleNamespace(pool="xcb-rep1", info={"mount": "fuse", "mountpoint": str(mnt)})
    roles, note = role_processes.providers(gateway=gw, target=target, cluster=cluster)
    assert note is None
    assert set(roles) == {"client", "gateway", "mount", "osd", "mds", "mon", "mgr", "probe"}
    assert roles["client"]() == [os.getpid()]
    assert roles["gateway"]() == gw.pids
    assert roles["osd"]() == [osd.pid] and roles["mds"]() == []
    assert roles["mount"]() == []  # no ceph-fuse serves that mount point
    assert roles["probe"]() == []  # no fio running
    # tmpfs: no mount role; no cluster: no cluster roles
    roles, note = role_processes.providers(gateway=gw, target=SimpleNamespace(pool=None, info={}), cluster=None)
    assert set(roles) == {"client", "gateway", "probe"} and note is None


def test_fio_children_are_the_probe(tmp_path):
    import shutil
    fio = tmp_path / "fio"  # a child process named fio (a copy of sleep)
    shutil.copy(shutil.which("sleep"), fio)
    assert role_processes.fio_pids() == []
    p = subprocess.Popen([str(fio), "30"])
    try:
        assert role_processes.fio_pids() == [p.pid]
    finally:
        p.kill()
        p.wait()


def test_byo_cluster_daemons_elsewhere_are_unknown_and_said_so(tmp_path):
    cluster = SimpleNamespace(embedded=False, state_dir=None, conf=tmp_path / "ceph.conf")
    target = SimpleNamespace(pool="p", info={})
    s = role_processes.make_sampler(gateway=None, target=target, cluster=cluster)
    assert s.remote == role_processes.CLUSTER_ROLES
    s.sample(1.0, 1.0)
    rows = s.sample(2.0, 2.0)
    osd = [r for r in rows if r["labels"].get("role") == "osd"]
    assert [r["metric"] for r in osd] == ["role_cpu_limit_cores"]  # no CPU row: not measured
    assert osd[0]["value"] is None and "do not run on this host" in osd[0]["labels"]["source"]
    client = {r["metric"]: r for r in rows if r["labels"].get("role") == "client"}
    assert client["role_cpu_cores"]["value"] >= 0 and client["role_cpu_limit_cores"]["value"] > 0
    # no fio running: the probe is no role of this tick (not "a role with an unknown limit")
    assert not [r for r in rows if r["labels"].get("role") == "probe"]


def test_byo_cluster_on_this_host_is_found_by_its_conf(tmp_path, sleeper_with, monkeypatch):
    conf = tmp_path / "ceph.conf"
    p = sleeper_with("-c", str(conf))
    monkeypatch.setattr(role_processes, "DAEMONS", {"python3": "osd", os.path.basename(sys.executable): "osd"})
    roles, note = role_processes.cluster_providers(SimpleNamespace(embedded=False, conf=conf))
    assert note is None and roles["osd"]() == [p.pid] and roles["mon"]() == []


def test_roles_device_is_on_by_default():
    class Sink:
        def __call__(self, table, rows):
            pass
    r = build(None, cell=SimpleNamespace(id="c"), target=SimpleNamespace(pool=None, info={}),
              gateway=None, listener=None, cluster=None, sink=Sink())
    assert "roles" in [s.name for s in r.samplers]
    assert build("host", cell=SimpleNamespace(id="c"), target=None, gateway=None, listener=None,
                 cluster=None, sink=Sink()).samplers[0].name == "host"
