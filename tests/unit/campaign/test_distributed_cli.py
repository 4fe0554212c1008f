"""`xcbench run --hosts FILE` and a matrix's ``hosts:``: the inventory is read and checked before
anything starts (one line, exit 2), the versions first; without one nothing changes."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
import yaml

from xcbench.commands.run import hosts
from xcbench.errors import XcbError
from xcbench.matrix import load_matrix
from xcbench.run.runner import RunOptions

LOCAL = {"hosts": {"here": {"roles": ["client", "gateway"], "transport": "local"}},
         "ceph": {"conf": "/etc/ceph/site.conf", "id": "xcb-bench"}}


def _matrix(tmp_path, hosts=None):
    m = {"name": "t", "backends": {"tmpfs": {"size": ["64M"]}}}
    if hosts is not None:
        m["hosts"] = hosts
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(m))
    return p


def _args(**kw):
    return argparse.Namespace(**{"hosts": None, "ceph_conf": None, "ceph_id": None, **kw})


def test_no_inventory_leaves_the_run_as_it_was(tmp_path):
    opts = RunOptions()
    hosts(_args(), load_matrix(_matrix(tmp_path)), opts)
    assert opts.hosts is None


def test_matrix_hosts_file_relative_to_the_matrix_versions_checked(tmp_path):
    (tmp_path / "site.yaml").write_text(yaml.safe_dump({"hosts": LOCAL["hosts"]}))
    opts, args = RunOptions(), _args()
    hosts(args, load_matrix(_matrix(tmp_path, "site.yaml")), opts)
    assert [h.name for h in opts.hosts.clients] == ["here"]
    # which cluster's keyring root copies is the operator's: refused from a matrix's file ...
    (tmp_path / "site.yaml").write_text(yaml.safe_dump(LOCAL))
    with pytest.raises(XcbError, match=r"site\.yaml: ceph: .*never from a matrix"):
        load_matrix(_matrix(tmp_path, "site.yaml"))
    # ... taken from --hosts FILE, unless the command line names one
    opts, args = RunOptions(), _args(hosts=str(tmp_path / "site.yaml"))
    hosts(args, load_matrix(_matrix(tmp_path)), opts)
    assert (args.ceph_conf, args.ceph_id) == ("/etc/ceph/site.conf", "xcb-bench")


def test_hosts_flag_wins_over_the_matrix(tmp_path):
    other = {"hosts": {"there": {"roles": ["client"], "transport": "local"}}}
    (tmp_path / "flag.yaml").write_text(yaml.safe_dump(other))
    opts, args = RunOptions(), _args(hosts=str(tmp_path / "flag.yaml"), ceph_conf="/x.conf")
    hosts(args, load_matrix(_matrix(tmp_path, {"hosts": LOCAL["hosts"]})), opts)
    assert [h.name for h in opts.hosts.hosts] == ["there"] and args.ceph_conf == "/x.conf"


@pytest.mark.parametrize("where", ["flag", "matrix"])
def test_a_bad_inventory_is_one_line_exit_2_before_anything(tmp_path, where):
    bad = {"hosts": {"c1": {"roles": ["client"], "transport": "carrier-pigeon"}}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    m = _matrix(tmp_path, "bad.yaml" if where == "matrix" else None)
    argv = [sys.executable, "-m", "xcbench", "run", str(m), "--store", str(tmp_path / "out"),
            "--state-dir", str(tmp_path / "no-cluster")]
    if where == "flag":
        argv += ["--hosts", str(tmp_path / "bad.yaml")]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.yaml" in lines[0] and "c1" in lines[0], out.stderr
    assert "transport" in lines[0] and not (tmp_path / "out").exists()


def test_a_host_with_another_version_is_named_before_anything(tmp_path):
    inv = {"hosts": {"here": {"roles": ["client"], "transport": "local",
                              "xcbench": ["/bin/echo", "xcbench", "0.0.1"]}}}
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(inv))
    with pytest.raises(XcbError, match="host here: xcbench 0.0.1 there"):
        hosts(_args(hosts=str(tmp_path / "h.yaml")), load_matrix(_matrix(tmp_path)), RunOptions())
