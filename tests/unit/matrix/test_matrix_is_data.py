"""A matrix is data: nothing in it becomes a config directive, a job-file line or a command.
Control characters and line breaks, unknown or mistyped ceph.* directives and fio settings,
commands in an inventory a matrix carries, duplicate YAML keys and exclude rules that match
nothing are each one line naming the file and the field, exit 2, before anything starts."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from xcbench import cli
from xcbench.errors import XcbError
from xcbench.gateway.config import effective_tunables
from xcbench.hosts import load_inventory
from xcbench.matrix import load_matrix

ROOT = Path(__file__).resolve().parents[3]
BASE = yaml.safe_load((ROOT / "layouts" / "quick.yaml").read_text())


def _write(tmp_path: Path, m: dict | str, name: str = "m.yaml") -> Path:
    f = tmp_path / name
    f.write_text(m if isinstance(m, str) else yaml.safe_dump(m, sort_keys=False))
    return f


def _refused(tmp_path, capsys, m, *fields: str) -> str:
    f = _write(tmp_path, m)
    assert cli.main(["matrix", "check", str(f)]) == 2
    out, err = capsys.readouterr()
    lines = (err or out).strip().splitlines()
    assert lines and str(f) in lines[0], err or out
    for fld in fields:
        assert fld in lines[0], lines[0]
    assert "Traceback" not in err
    return lines[0]


INJECTIONS = [
    (("defaults", "probe", "ss"), "iops_slope:0.3%\nexec_prerun=touch /tmp/xcb-pwned"),
    (("defaults", "probe", "ss"), "iops:1%\rexec_prerun=id"),
    (("defaults", "gateway", "ceph"), {"nbconnections 1\nall.export /etc": 1}),
    (("defaults", "gateway", "ceph"), {"nbconnections": "4\nofs.authlib /tmp/evil.so"}),
    (("backends", "tmpfs", "size", 0), "2G\u2028all.export /"),
    (("name",), "quick\x00"),
    (("defaults", "campaign", "client"), "xrootd\x1b[2J"),
]


@pytest.mark.parametrize("path,value", INJECTIONS)
def test_a_line_break_or_control_character_anywhere_is_refused(tmp_path, capsys, path, value):
    m = copy.deepcopy(BASE)
    node = m
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    line = _refused(tmp_path, capsys, m, path[0])
    assert "control character" in line


def test_a_description_may_hold_newlines(tmp_path):
    m = dict(BASE, description="line one\nline two\n\tindented\n")
    assert len(load_matrix(_write(tmp_path, m)).cells) == 6


@pytest.mark.parametrize("ceph,field", [
    ({"namelib": "/tmp/evil.so"}, "ceph.namelib"),
    ({"nbconnections": 0}, "ceph.nbconnections"),
    ({"nbconnections": True}, "ceph.nbconnections"),
    ({"nbconnections": "8"}, "ceph.nbconnections"),
    ({"bogus": 1}, "ceph.bogus"),
])
def test_gateway_ceph_directives_are_known_names_with_types(tmp_path, capsys, ceph, field):
    m = copy.deepcopy(BASE)
    m["backends"]["rados"]["gateway"] = {"ceph": ceph}
    _refused(tmp_path, capsys, m, "rados.gateway", field)
    with pytest.raises(XcbError, match=field.replace(".", r"\.")):
        effective_tunables("rados", {"ceph": ceph})


def test_a_known_ceph_directive_renders_as_one_line(tmp_path):
    m = copy.deepcopy(BASE)
    m["backends"]["rados"]["gateway"] = {"ceph": {"nbconnections": 8}}
    cells = [c for c in load_matrix(_write(tmp_path, m)).cells if c.backend == "rados"]
    assert cells and all(c.gateway_settings["ceph"] == {"nbconnections": 8} for c in cells)


@pytest.mark.parametrize("probe,field", [
    ({"ss": "iops_slope:0.3% exec_prerun=id"}, "ss"), ({"ss": 5}, "ss"),
    ({"ss": "iops_slope:0.3%", "ss_dur": "10; x"}, "ss_dur"), ({"ss_ramp": -1}, "ss_ramp"),
    ({"patterns": ["write", "trim"]}, "patterns"),
])
def test_fio_settings_are_checked_against_their_types(tmp_path, capsys, probe, field):
    m = copy.deepcopy(BASE)
    m["defaults"]["probe"].update(probe)
    _refused(tmp_path, capsys, m, "defaults.probe", field)


SSH_HOST = {"roles": ["client"], "transport": "ssh", "ssh": "c1-alias", "address": "192.0.2.7"}


@pytest.mark.parametrize("key,value", [("xcbench", ["/bin/sh", "-c", "id"]),
                                       ("ssh_options", ["-o", "ProxyCommand=touch /tmp/pwn"])])
def test_commands_come_only_from_an_inventory_on_the_command_line(tmp_path, capsys, key, value):
    hosts = {"hosts": {"c1": {**SSH_HOST, key: value}}}
    m = dict(copy.deepcopy(BASE), hosts=hosts)
    line = _refused(tmp_path, capsys, m, f"host c1: {key}")
    assert "given on the command line" in line
    inv = _write(tmp_path, hosts, "inv.yaml")  # a file the matrix names: still the matrix's
    f = _write(tmp_path, dict(copy.deepcopy(BASE), hosts=str(inv)))
    assert cli.main(["matrix", "check", str(f)]) == 2
    out, err = capsys.readouterr()
    assert (err or out).startswith(f"xcbench: error: {inv}: host c1: {key}: runs a command"), err or out
    assert getattr(load_inventory(inv).hosts[0], key) == tuple(value)  # --hosts FILE: allowed


def test_an_inventory_string_with_a_line_break_is_refused(tmp_path):
    inv = _write(tmp_path, {"hosts": {"c1": {**SSH_HOST, "ssh": "c1\nProxyCommand x"}}}, "i.yaml")
    with pytest.raises(XcbError, match=r"i\.yaml: hosts\.c1\.ssh: .*control character U\+000A"):
        load_inventory(inv)


def test_a_duplicate_key_is_an_error_not_a_silent_last_wins(tmp_path, capsys):
    text = (ROOT / "layouts" / "quick.yaml").read_text().replace(
        "  files: 24\n", "  files: 24\n  files: 2400\n")
    line = _refused(tmp_path, capsys, text, "duplicate key 'files'")
    assert "line " in line and "first at line" in line


def test_a_merge_may_be_overridden(tmp_path):
    text = (ROOT / "layouts" / "quick.yaml").read_text().replace(
        "  probe: {runtime: 3, iodepth: 4, numjobs: 1, size: 64M}\n",
        "  probe: &p {runtime: 3, iodepth: 4, numjobs: 1, size: 64M}\n").replace(
        "    probe: {direct: false}\n", "    probe: {<<: *p, runtime: 5, direct: false}\n")
    cells = load_matrix(_write(tmp_path, text)).cells
    assert {c.probe.get("runtime") for c in cells if c.backend == "cephfs"} == {5}


def test_an_exclude_rule_that_matches_no_cell_is_an_error(tmp_path, capsys):
    m = copy.deepcopy(BASE)
    m["exclude"].append({"backend": "cephfs", "pool": "ec4+2"})  # no cell has that pool
    _refused(tmp_path, capsys, m, "exclude[1]", "rule", "matches no cell")
    m["exclude"][1] = {"backend": "rados", "pool": "ec2+1"}  # matches: fine
    assert len(load_matrix(_write(tmp_path, m)).cells) == 5
