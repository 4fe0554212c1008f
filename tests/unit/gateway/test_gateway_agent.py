"""The gateway agent's request checks and the coordinator side's use of what agents measure
(no ssh here: tests/integration/gateway/test_gateway_agent.py runs the agents on an emulated host)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from xcbench import __version__
from xcbench.backends.base import Target
from xcbench.errors import XcbError
from xcbench.gateway.agent import parse_request
from xcbench.gateway.remote import RemoteGateway, _target_request
from xcbench.telemetry.gateway_cpu_meter import GatewayCpuMeter
from xcbench.telemetry.role_processes import make_sampler

GOOD = {"version": __version__, "name": "gw", "role": "origin", "index": 1, "origins": 2,
        "addr": "10.77.0.21", "manager": "10.77.0.20:1094", "allow": ["localhost"],
        "tunables": {}, "target": {"cell_id": "c1", "backend": "tmpfs", "info": {"size": 1 << 20}}}


def _req(**kw) -> str:
    return json.dumps({**GOOD, **kw})


def test_a_good_request_parses():
    assert parse_request(_req())["role"] == "origin"


@pytest.mark.parametrize(("line", "says"), [
    ("", "none came on stdin"),
    ("[1]", "not a JSON object"),
    ("{", "not JSON"),
    (_req(version="0.0.0"), f"xcbench {__version__} here, 0.0.0 on the coordinator"),
    (_req(role="boss"), "role: 'boss' is not one of standalone, manager, origin"),
    (_req(manager=None), "manager: an origin needs"),
    (_req(addr="0.0.0.0"), "never a wildcard"),
    (_req(addr="::"), "never a wildcard"),
    (_req(index="1"), "index: '1' is not a int"),
    (_req(origins=True), "origins: True is not a int"),
    (_req(target={"cell_id": "c1", "backend": "cephfs"}), "target.backend: 'cephfs'"),
    (_req(target={"cell_id": "c1", "backend": "tmpfs", "created": ["dir:/etc"]}),
     "target: unknown fields ['created']"),
    (_req(target={"cell_id": "c1", "backend": "rados", "ceph_conf_env": True}),
     "ceph: a rados gateway needs ceph.global and ceph.keyring"),
    (_req(gateway_user="root; rm -rf /"), "gateway_user: 'root; rm -rf /' is not a user name"),
    (_req(gateway_user=["xrootd"]), "gateway_user: ['xrootd'] is not a user name"),
])
def test_a_bad_request_is_one_line_naming_the_field(line, says):
    with pytest.raises(XcbError) as e:
        parse_request(line)
    assert says in str(e.value) and "\n" not in str(e.value)
    assert e.value.exit_code == 2


def test_the_target_sent_carries_no_local_path_and_only_the_size():
    t = Target(cell_id="c1", backend="tmpfs", path="/var/tmp/xcb-tmpfs-x", created=["mount:/x"],
               info={"size": 1 << 20, "mountpoint": "/var/tmp/xcb-tmpfs-x"})
    sent = _target_request(t)
    assert "path" not in sent and "created" not in sent and sent["info"] == {"size": 1 << 20}
    assert parse_request(_req(target=json.loads(json.dumps(sent))))["target"]["backend"] == "tmpfs"
    # an XrdCeph target's namespace goes too: the agent's gateway serves that prefix only
    r = Target(cell_id="c2", backend="rados", info={"name_prefix": "/xcb-rados/c2-abc/"})
    assert _target_request(r)["info"] == {"size": None, "name_prefix": "/xcb-rados/c2-abc/"}


class _Part:
    """A stand-in for an agent (what it last sent), with a counter for fresh samples."""

    def __init__(self, host, cpu, wchar, cores, limit):
        self.host, self.asked = host, 0
        self.msgs = {"sample": {"seq": 1, "servers": {"o1-xrootd": {"cpu_s": cpu, "wchar": wchar},
                                                       "o1-cmsd": {"cpu_s": 0.5, "wchar": 0}},
                                "cores": cores, "rss": 1000, "limit": limit}}

    def fresh_sample(self):
        self.asked += 1
        s = self.msgs["sample"]
        s["servers"]["o1-xrootd"]["cpu_s"] += 2.0  # two seconds of work between two samples
        s["servers"]["o1-xrootd"]["wchar"] += 10**9
        return s


def _remote(parts) -> RemoteGateway:
    gw = RemoteGateway("gw", Target(cell_id="c1", backend="tmpfs"), Path("/nonexistent"), [], None)
    for p in parts:
        for daemon in ("xrootd", "cmsd"):
            s = SimpleNamespace(name="o1", daemon=daemon, role="server", pid=42, host=p.host,
                                slot=SimpleNamespace(host=SimpleNamespace(transport="ssh")))
            gw.servers.append(s)
            gw._part_of[f"o1-{daemon}"] = p
        gw.parts.append(p)
    return gw


def test_the_cpu_meter_takes_a_remote_gateways_counters_from_its_agents():
    part = _Part("g1", 1.0, 100, 0.5, {"cores": 1.0, "source": "cgroup v1 quota"})
    gw = _remote([part])
    meter = GatewayCpuMeter(gw)
    assert meter.measurable()
    meter.start()
    row = meter.finish(2 * 10**9)
    # each fresh sample adds 2 s and 1 GB; each end asks twice (CPU, then bytes written): the
    # level saw two samples' worth of both, read from the agent, none from this machine
    assert row["gateway_cpu_s"] == pytest.approx(4.0)
    assert row["gateway_cpu_s_per_gb"] == pytest.approx(2.0)
    per = json.loads(row["gateway_cpu_origins"])
    assert per[0]["origin"] == "o1" and per[0]["host"] == "g1" and per[0]["bytes"] == 2 * 10**9
    assert part.asked >= 2


def test_the_roles_device_gets_the_gateway_from_its_agents():
    gw = _remote([_Part("g1", 1.0, 0, 0.25, {"cores": 1.0, "source": "cgroup v1 quota 1 core"})])
    sampler = make_sampler(gateway=gw, target=None, cluster=None)
    assert "gateway" not in sampler.roles  # never its pids: they are the host's
    rows = [r for r in sampler.sample(1.0, 1.0) if r["labels"].get("role") == "gateway"]
    got = {r["metric"]: r for r in rows}
    assert got["role_cpu_cores"]["value"] == 0.25 and got["role_rss_bytes"]["value"] == 1000
    assert got["role_cpu_limit_cores"]["value"] == 1.0
    assert got["role_cpu_limit_cores"]["labels"]["source"] == "gateway agent: g1: cgroup v1 quota 1 core"


def test_an_unknown_limit_on_one_host_is_unknown_not_a_partial_sum():
    gw = _remote([_Part("g1", 1.0, 0, 0.2, {"cores": 1.0, "source": "a"})])
    gw.parts.append(_Part("g2", 1.0, 0, 0.2, None))
    s = gw.agent_role_sample()
    assert s["limit_cores"] is None and s["cores"] == pytest.approx(0.4)


def test_the_gateway_user_travels_to_the_agent_and_an_unknown_one_is_refused_there(monkeypatch):
    """--gateway-user on the coordinator: the agent on a gateway host runs its daemons as the
    same user, or says in one line that the host has no such user."""
    from xcbench.system import xrootd_user
    monkeypatch.delenv(xrootd_user.USER_ENV, raising=False)
    assert parse_request(_req(gateway_user="xcb-nosuchuser"))["gateway_user"] == "xcb-nosuchuser"
    with pytest.raises(XcbError, match="--gateway-user xcb-nosuchuser: no such user"):
        xrootd_user.set_user("xcb-nosuchuser")
    xrootd_user.set_user("nobody")
    assert xrootd_user.user_name() == "nobody"
