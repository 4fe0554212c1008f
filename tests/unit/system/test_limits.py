"""limits.cpu_limit on laid-out cgroup trees (v1, v2, cpuset) and on this process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xcbench.system.limits import cpu_limit, parse_cpu_list, proc_cgroups


def _tree(tmp: Path, cgroup_lines: str, files: dict[str, str], pid: int = 4242) -> tuple[Path, Path]:
    root, proc = tmp / "cg", tmp / "proc"
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "cgroup").write_text(cgroup_lines)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root, proc


V1_ROOT = {"cpu/cgroup.procs": "", "cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}


def test_parse_cpu_list():
    assert parse_cpu_list("0-2,5\n") == {0, 1, 2, 5}
    assert parse_cpu_list("") == set()


def test_v1_the_tightest_ancestor_wins(tmp_path):
    files = dict(V1_ROOT)
    files.update({"cpu/a/cpu.cfs_quota_us": "50000", "cpu/a/cpu.cfs_period_us": "100000",
                  "cpu/a/b/cpu.cfs_quota_us": "150000", "cpu/a/b/cpu.cfs_period_us": "100000"})
    root, proc = _tree(tmp_path, "1:cpu,cpuacct:/a/b\n0::/\n", files)
    lim = cpu_limit(4242, root=root, proc=proc, host=8)
    assert lim.cores == 0.5
    assert lim.source == f"cgroup v1 cpu.cfs_quota_us=50000/100000 at {root}/cpu/a"
    assert lim.group == f"{root}/cpu/a"


def test_v1_unlimited_is_the_host_and_says_so(tmp_path):
    files = dict(V1_ROOT)
    files.update({"cpu/a/cpu.cfs_quota_us": "-1", "cpu/a/cpu.cfs_period_us": "100000"})
    root, proc = _tree(tmp_path, "1:cpu:/a\n", files)
    lim = cpu_limit(4242, root=root, proc=proc, host=8)
    assert lim.cores == 8 and lim.source.startswith("host cores (8")


def test_v2_cpu_max(tmp_path):
    files = {"cgroup.controllers": "cpu cpuset", "k/cpu.max": "max 100000",
             "k/pod/cpu.max": "200000 100000", "k/pod/c/cpu.max": "max 100000"}
    root, proc = _tree(tmp_path, "0::/k/pod/c\n", files)
    lim = cpu_limit(4242, root=root, proc=proc, host=16)
    assert lim.cores == 2.0 and lim.source == f"cgroup v2 cpu.max=200000/100000 at {root}/k/pod"


def test_cpuset_below_the_quota_wins(tmp_path):
    files = {"cgroup.controllers": "cpu cpuset", "k/cpu.max": "300000 100000",
             "k/cpuset.cpus.effective": "1"}
    root, proc = _tree(tmp_path, "0::/k\n", files)
    lim = cpu_limit(4242, root=root, proc=proc, host=16)
    assert lim.cores == 1.0 and lim.source == f"cpuset 1 at {root}/k" and lim.quota_cores == 3.0


def test_an_unreadable_quota_is_unknown_never_the_host(tmp_path):
    files = dict(V1_ROOT)
    files["cpu/a/cpu.cfs_period_us"] = "100000"  # the quota file is missing
    root, proc = _tree(tmp_path, "1:cpu:/a\n", files)
    lim = cpu_limit(4242, root=root, proc=proc, host=8)
    assert lim.cores is None and lim.source.startswith("unknown (cannot read") and not lim.known
    root2, proc2 = _tree(tmp_path / "x", "1:cpu:/elsewhere\n", dict(V1_ROOT))
    lim = cpu_limit(4242, root=root2, proc=proc2, host=8)
    assert lim.cores is None and "not visible" in lim.source


def test_an_affinity_mask_bounds_the_limit(tmp_path):
    root, proc = _tree(tmp_path, "1:cpu:/\n", dict(V1_ROOT))
    (proc / "4242" / "status").write_text("Name:\tx\nCpus_allowed_list:\t0,2\n")
    lim = cpu_limit(4242, root=root, proc=proc, host=8)
    assert lim.cores == 2.0 and lim.source == "affinity 0,2"
    # pinned within a wider cpuset (Slurm's task/affinity, taskset): the mask is the limit
    files = {**V1_ROOT, "cpuset/cgroup.procs": "", "cpuset/cpuset.effective_cpus": "0-7"}
    root, proc = _tree(tmp_path / "pinned", "1:cpu:/\n2:cpuset:/\n", files)
    (proc / "4242" / "status").write_text("Name:\tx\nCpus_allowed_list:\t3\n")
    lim = cpu_limit(4242, root=root, proc=proc, host=8)
    assert (lim.cores, lim.source, lim.cpuset_cores) == (1.0, "affinity 3", 1)
    (proc / "4242" / "status").write_text("Name:\tx\nCpus_allowed_list:\t0-7\n")
    files["cpuset/cpuset.effective_cpus"] = "2-3"
    root, proc = _tree(tmp_path / "set", "1:cpu:/\n2:cpuset:/\n", files)
    (proc / "4242" / "status").write_text("Name:\tx\nCpus_allowed_list:\t2-3\n")
    lim = cpu_limit(4242, root=root, proc=proc, host=8)
    assert lim.cores == 2.0 and lim.source == f"cpuset 2-3 at {root}/cpuset"  # a tie: the cpuset


def test_a_gone_process_raises(tmp_path):
    with pytest.raises(ProcessLookupError):
        cpu_limit(999_999_999, proc=tmp_path)


def test_this_process_has_a_stated_limit():
    lim = cpu_limit(os.getpid())
    assert "" in proc_cgroups(os.getpid()) or proc_cgroups(os.getpid())
    assert (lim.cores is None) == lim.source.startswith("unknown")
    assert lim.cores is None or 0 < lim.cores <= (os.cpu_count() or 1)
