"""Inventory parsing: every mistake is one line naming the file, host and field."""

import pytest

from xcbench.errors import XcbError
from xcbench.hosts import load_inventory, local_inventory, parse_inventory
from xcbench.hosts.inventory import parse_tc_rate

GOOD = {
    "bridge": {"name": "xcb0", "address": "10.77.0.1/24"},
    "hosts": {
        "c1": {"roles": ["client"], "transport": "netns", "address": "10.77.0.11", "cores": 0.5,
               "link": {"rate": "200mbit"}},
        "c2": {"roles": ["client"], "transport": "netns", "address": "10.77.0.12"},
        "g1": {"roles": ["gateway", "redirector"], "transport": "netns", "address": "10.77.0.21"},
        "g2": {"roles": ["gateway"], "transport": "ssh", "ssh": "g2-alias",
               "address": "10.77.0.22", "ssh_options": ["-o", "Port=2222"]},
    },
    "ceph": {"conf": "/etc/ceph/ceph.conf", "id": "bench"},
}


def test_good_inventory():
    inv = parse_inventory(GOOD, "h.yaml")
    assert [h.name for h in inv.clients] == ["c1", "c2"]
    assert [h.name for h in inv.gateways] == ["g1", "g2"]
    assert inv.redirector.name == "g1" and inv.emulated
    c1 = inv.host("c1")
    assert c1.netns == "xcb-c1" and c1.cores == 0.5
    assert c1.link.rate_bits_per_s == 200e6 and c1.link.rate_bytes == 25e6 and c1.link.tc_rate == "200000000bit"
    assert inv.host("g2").ssh_options == ("-o", "Port=2222") and inv.bridge.ip == "10.77.0.1"
    assert inv.ceph == {"conf": "/etc/ceph/ceph.conf", "id": "bench"}


def test_local_inventory_is_every_role():
    inv = local_inventory()
    (h,) = inv.hosts
    assert h.transport == "local" and h.address == "127.0.0.1"
    assert inv.redirector is h and inv.clients == [h] and not inv.emulated


def test_defaults_local_transport_and_bridge():
    inv = parse_inventory({"hosts": {"a": {"roles": "client"}}}, "h.yaml")
    assert inv.hosts[0].transport == "local" and inv.bridge is None
    inv = parse_inventory({"hosts": {"a": {"roles": ["client"], "transport": "netns",
                                           "address": "10.77.0.5"}}}, "h.yaml")
    assert inv.bridge.name == "xcb0"


def _bad(host_patch=None, top_patch=None, host="c1"):
    data = {**GOOD, "hosts": {k: dict(v) for k, v in GOOD["hosts"].items()}}
    if host_patch:
        data["hosts"][host].update(host_patch)
    if top_patch:
        data.update(top_patch)
    with pytest.raises(XcbError) as e:
        parse_inventory(data, "h.yaml")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("h.yaml: ")
    return msg


@pytest.mark.parametrize("patch, says", [
    ({"cores": -1}, "host c1: cores:"),
    ({"cores": "two"}, "host c1: cores:"),
    ({"cores": True}, "host c1: cores:"),
    ({"roles": []}, "host c1: roles:"),
    ({"roles": ["archive"]}, "host c1: roles: 'archive'"),
    ({"transport": "docker"}, "host c1: transport:"),
    ({"address": "10.78.0.1"}, "host c1: address: 10.78.0.1 must be"),
    ({"address": "10.77.0.1"}, "host c1: address:"),
    ({"address": "10.77.0.12"}, "host c2: address: 10.77.0.12 is also host c1"),
    ({"address": "nope"}, "host c1: address: 'nope' is not"),
    ({"link": {"rate": "fast"}}, "host c1: link: rate:"),
    ({"link": {"rate": 100}}, "host c1: link: rate:"),
    ({"link": {"rtt": "soon"}}, "host c1: link: rtt:"),
    ({"link": {"rate": "1gbit", "jitter": "1ms"}}, "host c1: link: jitter: unknown"),
    ({"colour": "red"}, "host c1: colour: unknown key"),
    ({"ssh": "x"}, "host c1: ssh: only for transport ssh"),
])
def test_bad_host_field(patch, says):
    msg = _bad(patch)
    if "also host c1" in says:  # the duplicate is named at the second host
        msg = _bad({"address": "10.77.0.11"}, host="c2")
        says = "host c2: address: 10.77.0.11 is also host c1"
    assert says in msg, msg


@pytest.mark.parametrize("patch, says", [
    ({"ssh": None}, "host g2: ssh: required"),
    ({"ssh": "-oProxyCommand=x"}, "host g2: ssh:"),
    ({"ssh": "a b"}, "host g2: ssh:"),
    ({"ssh_options": "-p 22"}, "host g2: ssh_options:"),
    ({"cores": 1}, "host g2: cores: only for transport netns"),
    ({"link": {"rate": "1gbit"}}, "host g2: link: only for transport netns"),
    ({"address": None}, "host g2: address: required"),
])
def test_bad_ssh_host(patch, says):
    assert says in _bad(patch, host="g2")


@pytest.mark.parametrize("top, says", [
    ({"bridge": {"name": "xcb0", "address": "8.8.8.1/24"}}, "bridge: address:"),
    ({"bridge": {"name": "xcb0", "address": "10.77.0.1"}}, "bridge: address:"),
    ({"bridge": {"name": "a-very-long-bridge-name"}}, "bridge: name:"),
    ({"hosts": {}}, "hosts: must be"),
    ({"hosts": {"this-name-is-too-long": {"roles": ["client"]}}}, "name: must be"),
    ({"hosts": {"a": "client"}}, "host a: must be a mapping"),
    ({"ceph": "ceph.conf"}, "ceph: must be"),
    ({"cluster": 1}, "cluster: unknown key"),
    ({"hosts": {"a": {"roles": ["redirector"]}, "b": {"roles": ["redirector"]}}},
     "host b: roles: a second redirector"),
])
def test_bad_top_level(top, says):
    assert says in _bad(top_patch=top)


def test_not_a_mapping():
    with pytest.raises(XcbError, match="h.yaml: top level"):
        parse_inventory(["x"], "h.yaml")


def test_load_file(tmp_path):
    f = tmp_path / "hosts.yaml"
    f.write_text("hosts:\n  c1: {roles: [client], transport: netns, address: 10.77.0.11, cores: x}\n")
    with pytest.raises(XcbError, match=rf"^{f}: host c1: cores: 'x'"):
        load_inventory(f)
    f.write_text("hosts: [\n")
    with pytest.raises(XcbError, match=rf"^{f}: line"):
        load_inventory(f)


@pytest.mark.parametrize("text, bits", [("200mbit", 200e6), ("1gbit", 1e9), ("1.5Gbit", 1.5e9),
                                        ("25mbps", 200e6), ("1mibit", 2 ** 20), ("8kbit", 8000)])
def test_tc_rate(text, bits):
    assert parse_tc_rate(text) == bits


@pytest.mark.parametrize("text", ["", "mbit", "-1mbit", "1 Gb/s", "1kbit", "1e9bit"])
def test_tc_rate_bad(text):
    with pytest.raises(ValueError):
        parse_tc_rate(text)
