"""xcbench.ceph.access: the caps a site's admin grants (`xcbench cluster caps`), as text."""

from __future__ import annotations

import subprocess
import sys

from xcbench.backends.base import backend_class
from xcbench.ceph import access
from xcbench.matrix import load_matrix

XCBENCH = [sys.executable, "-m", "xcbench.cli"]


def _quick_needs():
    from importlib.resources import files
    return access.needs_of(load_matrix(str(files("xcbench.layouts") / "quick.yaml")).cells,
                            backend_class)


def test_needs_of_quick_matrix():
    n = _quick_needs()
    # the quick matrix compares EC 2+1 with replicated = size 3
    assert set(n.pools) == {"xcb-rep3", "xcb-ec2-1"}
    assert set(n.cephfs_pools) == set(n.rados_pools) == {"xcb-rep3", "xcb-ec2-1"}


def test_bench_caps_are_limited_to_xcb():
    caps = access.bench_caps(_quick_needs(), "cephfs")
    assert "*" not in "".join(caps.values()) and "allow rw," not in caps["mon"]
    assert caps["mon"].startswith("allow r, ") and caps["mgr"] == "allow r"
    for part in caps["mon"].split(", ")[1:]:
        assert part.endswith("prefix xcb-")
    assert caps["osd"] == "allow rwx pool=xcb-ec2-1, allow rwx pool=xcb-rep3"
    assert caps["mds"] == "allow rwp fsname=cephfs path=/xcbench"


def test_gateway_caps_only_rados_pools():
    n = access.Needs(pools={}, cephfs_pools=["xcb-rep1"], rados_pools=["xcb-ec2-1"])
    assert access.gateway_caps(n) == {"mon": "allow r", "osd": "allow rwx pool=xcb-ec2-1"}


def test_cluster_caps_command_prints_runnable_lines():
    r = subprocess.run(XCBENCH + ["cluster", "caps", "--fs", "cephfs"], capture_output=True,
                       text=True, timeout=60, check=True)
    lines = [ln for ln in r.stdout.splitlines() if not ln.startswith("#")]
    assert all(ln.startswith("ceph ") for ln in lines)
    assert lines[0].startswith("ceph auth get-or-create client.xcb-bench mon 'allow r, ")
    assert lines[1].startswith("ceph auth get-or-create client.xcb-gw mon 'allow r' osd 'allow rwx pool=")
    assert "ceph fs add_data_pool cephfs xcb-ec2-1" in lines and "auth caps" not in r.stdout
    bad = subprocess.run(XCBENCH + ["cluster", "caps"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "give --fs NAME" in bad.stderr
