"""cgroups.detect on laid-out trees: v1 cpu, v2 with and without the cpu controller, neither."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcbench.system.cgroups import CgroupError, CpuGroup, Mechanism, detect


def _lay(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_v1_cpu_controller(tmp_path):
    root = _lay(tmp_path / "cg", {"cpu/cgroup.procs": "", "cpu/cpu.cfs_period_us": "100000"})
    assert detect(root, proc=tmp_path) == Mechanism("v1", root / "cpu")


def test_v2_needs_the_cpu_controller_and_says_so(tmp_path):
    root = _lay(tmp_path / "cg", {"cgroup.controllers": "cpu memory", "cgroup.subtree_control": "memory"})
    with pytest.raises(CgroupError) as e:
        detect(root, proc=tmp_path)
    assert "no cgroup v1 cpu controller mounted" in str(e.value)
    assert "has no cpu controller in cgroup.subtree_control" in str(e.value)
    (root / "cgroup.subtree_control").write_text("cpu memory")
    assert detect(root, proc=tmp_path) == Mechanism("v2", root)


def test_neither(tmp_path):
    with pytest.raises(CgroupError, match="no CPU-quota cgroups on this host: no cgroup v1 .*no cgroup v2"):
        detect(tmp_path / "none", proc=tmp_path)


def test_a_v2_group_writes_cpu_max(tmp_path):
    g = CpuGroup(Mechanism("v2", tmp_path), "xcb-r-osd", cores=1.5).make()
    assert (tmp_path / "xcb-r-osd" / "cpu.max").read_text() == "150000 100000"
    with pytest.raises(CgroupError):
        CpuGroup(Mechanism("v2", tmp_path), "osd", cores=1)
    with pytest.raises(CgroupError):
        CpuGroup(Mechanism("v2", tmp_path), "xcb-x", cores=0)
    assert g.quota_us == 150000


def test_a_weighted_group_writes_its_weight_on_either_mechanism(tmp_path):
    # confirm's host-cpu relief: every role in one group weighing 10x a nice-0 process
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    g = CpuGroup(Mechanism("v1", tmp_path / "v1"), "xcb-r-all", cores=2.0, weight=10240).make()
    assert (g.path / "cpu.shares").read_text() == "10240"
    g = CpuGroup(Mechanism("v2", tmp_path / "v2"), "xcb-r-all", cores=2.0, weight=10240).make()
    assert (g.path / "cpu.weight").read_text() == "1000"
    assert not (CpuGroup(Mechanism("v2", tmp_path / "v2"), "xcb-r-b", cores=1.0).make().path / "cpu.weight").exists()
