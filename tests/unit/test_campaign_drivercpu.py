"""The driver's CPU limit reader (cgroup v2/v1 walked up the hierarchy, cpuset, host cores) on
a fake /proc and cgroup tree, and the driver's CPU figure."""

from __future__ import annotations

import os
import time

import psutil

from xcbench.campaign.dataset import Dataset
from xcbench.campaign.drivercpu import DriverCpu, private_cpu_limit
from xcbench.campaign.staging import local_source


def fake(tmp_path, cgroup: str, mounts: list[tuple[str, str, str]]):
    """/proc/<pid>/cgroup and /proc/self/mountinfo; mounts: (fstype, mount dir, options)."""
    pid = os.getpid()
    proc = tmp_path / "proc"
    (proc / str(pid)).mkdir(parents=True)
    (proc / "self").mkdir()
    (proc / str(pid) / "cgroup").write_text(cgroup)
    lines = [f"{30 + k} 25 0:{k} / {tmp_path / d} rw,relatime shared:{k} - {fs} {fs} {opts}"
             for k, (fs, d, opts) in enumerate(mounts)]
    (proc / "self" / "mountinfo").write_text("\n".join(lines) + "\n")
    return pid, proc


def host_cores() -> float:
    return float(min(psutil.cpu_count(), len(psutil.Process().cpu_affinity())))


def test_cgroup_v2_cpu_max_is_the_tightest_of_the_hierarchy(tmp_path):
    pid, proc = fake(tmp_path, "0::/a/b\n", [("cgroup2", "cg2", "rw")])
    (tmp_path / "cg2" / "a" / "b").mkdir(parents=True)
    (tmp_path / "cg2" / "a" / "cpu.max").write_text("50000 100000\n")
    (tmp_path / "cg2" / "a" / "b" / "cpu.max").write_text("max 100000\n")
    got = private_cpu_limit(pid, proc)
    assert got == {"cores": 0.5, "source": "cgroup v2 cpu.max (/a/b)"}


def test_cgroup_v1_cfs_quota_walked_up(tmp_path):
    pid, proc = fake(tmp_path, "4:memory:/m\n3:cpu,cpuacct:/x/y\n",
                     [("cgroup", "cpu", "rw,cpu,cpuacct"), ("cgroup", "mem", "rw,memory")])
    leaf = tmp_path / "cpu" / "x" / "y"
    leaf.mkdir(parents=True)
    (leaf / "cpu.cfs_quota_us").write_text("-1\n")  # unlimited here, limited by the parent
    (leaf / "cpu.cfs_period_us").write_text("100000\n")
    (leaf.parent / "cpu.cfs_quota_us").write_text("25000\n")
    (leaf.parent / "cpu.cfs_period_us").write_text("100000\n")
    assert private_cpu_limit(pid, proc) == {"cores": 0.25,
                                            "source": "cgroup v1 cpu.cfs_quota_us (/x/y)"}


def test_no_quota_means_the_cores_it_may_run_on(tmp_path):
    pid, proc = fake(tmp_path, "0::/\n3:cpu:/\n", [("cgroup2", "cg2", "rw"), ("cgroup", "cpu", "rw,cpu")])
    (tmp_path / "cg2").mkdir()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    got = private_cpu_limit(pid, proc)
    assert got["cores"] == host_cores()
    assert got["source"] in ("host cores", "cpuset/affinity")
    # a quota larger than the host does not hide the host's cores
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(str(int(host_cores() * 4 * 100000)))
    assert private_cpu_limit(pid, proc)["cores"] == host_cores()


def test_driver_cpu_counts_this_process_in_cores():
    d = DriverCpu()
    t0 = time.process_time()
    while time.process_time() - t0 < 0.2:  # burn 0.2 s of CPU
        sum(range(1000))
    s, total = d.sample(), d.total()
    assert set(s) == {"driver_cpu_cores", "driver_cpu_limit_cores", "driver_cpu_limit_source"}
    assert 0 < s["driver_cpu_cores"] and 0 < total["driver_cpu_cores"]
    assert s["driver_cpu_limit_cores"] > 0 and s["driver_cpu_limit_source"]


def test_only_gfal2_http_pushes_stage_local_files(tmp_path):
    ds = Dataset.generate(2, 4096, block_size=4096)
    assert local_source(ds, "cx", "push", "gfal2", "root") is None  # streamed
    assert local_source(ds, "cx", "push", "xrootd", "root") is None
    assert local_source(ds, "cx", "tpc-http", "gfal2", "http") is None
    src = local_source(ds, "cx", "push", "gfal2", "http")
    try:
        info = src.stage_all()
        assert info["before_clock"] and all(os.path.getsize(src.path(i)) == 4096 for i in range(2))
    finally:
        src.cleanup()
    assert not src.dir.exists()
