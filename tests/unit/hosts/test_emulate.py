"""Emulated hosts without the kernel: tbf sizing, the record, what down deletes, preflight."""

import json
import os

import pytest

from xcbench.errors import XcbError
from xcbench.hosts import emulate, parse_inventory
from xcbench.hosts.emulate import Record, down, records, tbf_args, teardown


def test_tbf_burst_holds_a_gso_packet_and_scales_with_rate():
    args = tbf_args(100e6)
    assert args[:3] == ["tbf", "rate", "100000000bit"]
    assert int(args[args.index("burst") + 1]) == 64 * 1024  # 4 ms at 100 Mbit/s is less
    assert int(tbf_args(10e9)[4]) == int(10e9 / 8 * 0.004)


def test_record_is_written_before_and_read_back(tmp_path):
    r = Record(tmp_path / "hosts-xcb0.json", "h.yaml")
    r.add(kind="netns", name="xcb-a")
    data = json.loads((tmp_path / "hosts-xcb0.json").read_text())
    assert data["items"] == [{"kind": "netns", "name": "xcb-a"}] and data["complete"] is False
    assert Record.load(r.path).items == r.items
    assert records(tmp_path) == [r.path]
    (tmp_path / "hosts-bad.json").write_text("[1]")
    with pytest.raises(XcbError, match="not a record"):
        Record.load(tmp_path / "hosts-bad.json")


def test_teardown_only_touches_xcbench_names(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(emulate.proc, "run", lambda cmd, **kw: ran.append(cmd))
    monkeypatch.setattr(emulate, "remove_group", lambda p: ran.append(["rmdir", str(p)]) or True)
    r = Record(tmp_path / "hosts-x.json")
    r.data["bridge"] = {"name": "br-mine"}  # not an xcb* name: never deleted
    for item in ({"kind": "netns", "name": "eth0"}, {"kind": "link", "name": "lo"},
                 {"kind": "cgroup", "path": "/sys/fs/cgroup/cpu/user.slice"},
                 {"kind": "cgroup", "path": "/sys/fs/cgroup/cpu/xcb-xcbench-host-a"}):
        r.add(**item)
    assert teardown(r) == []
    assert ran == [["rmdir", "/sys/fs/cgroup/cpu/xcb-xcbench-host-a"]]
    assert not r.path.exists()


def test_down_with_nothing_recorded(tmp_path):
    assert down(tmp_path) == ([], [])


def test_preflight_refuses_without_netns_hosts_or_root(monkeypatch):
    inv = parse_inventory({"hosts": {"a": {"roles": ["client"]}}}, "h.yaml")
    with pytest.raises(XcbError, match="^h.yaml: no host with transport netns"):
        emulate.preflight(inv)
    inv = parse_inventory({"hosts": {"a": {"roles": ["client"], "transport": "netns",
                                           "address": "10.77.0.5"}}}, "h.yaml")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(XcbError, match="need root"):
        emulate.preflight(inv)


def test_preflight_refuses_rtt_without_netem(monkeypatch):
    inv = parse_inventory({"hosts": {"a": {"roles": ["client"], "transport": "netns",
                                           "address": "10.77.0.5", "link": {"rtt": "20ms"}}}},
                          "h.yaml")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(emulate.proc, "which", lambda t: t)
    monkeypatch.setattr(emulate, "netem_missing",
                        lambda: "Error: Specified qdisc kind is unknown.")
    with pytest.raises(XcbError, match=r"^h.yaml: host a: link: rtt: 20ms cannot be emulated "
                                       r"here: this kernel has no netem"):
        emulate.preflight(inv)


def test_cli_hosts_status_and_down_when_nothing_is_up(tmp_path, capsys):
    from xcbench.cli import main
    assert main(["hosts", "--state", str(tmp_path), "status"]) == 0
    assert "no emulated hosts recorded" in capsys.readouterr().out
    assert main(["hosts", "--state", str(tmp_path), "down"]) == 0
    assert "nothing recorded" in capsys.readouterr().out
    assert main(["hosts", "up", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: cannot read: no such file" in capsys.readouterr().err
