"""xcbench.ceph.pools as logic: which mon commands it sends for which pool, against a recorded
stand-in for the cluster handle (the real cluster is in tests/integration/ceph/test_cluster.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from xcbench.cell.protection import Protection
from xcbench.ceph import pools
from xcbench.errors import XcbError


@dataclass
class Recorded:
    """Answers the handle calls pools makes, from constructed cluster state; records commands."""
    existing: list[str] = field(default_factory=lambda: ["xcb-rep1", "xcb-fs-meta", "xcb-fs-data", "rbd"])
    osds: int = 3
    hosts: int = 1
    fs_name: str | None = "xcb-fs"
    fs_data_pools: list[str] = field(default_factory=lambda: ["xcb-fs-data"])
    apps: dict[str, dict] = field(default_factory=dict)
    embedded: bool = True
    gateway_id: str = "xcb-gw"
    pools: dict[str, str] = field(default_factory=lambda: {"fs_metadata": "xcb-fs-meta"})
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def mon_command(self, prefix: str, **args) -> Any:
        self.sent.append((prefix, args))
        if prefix == "osd pool create":
            self.existing.append(args["pool"])
        if prefix == "fs ls":
            return [{"name": self.fs_name, "data_pools": list(self.fs_data_pools)}] if self.fs_name else []
        if prefix == "osd pool application get":
            return self.apps.get(args["pool"], {})
        if prefix == "fs add_data_pool":
            self.fs_data_pools.append(args["pool"])
        return ""

    def pool_names(self) -> list[str]:
        return list(self.existing)

    def num_osds(self) -> int:
        return self.osds

    def num_hosts(self) -> int:
        return self.hosts

    def prefixes(self) -> list[str]:
        return [p for p, _ in self.sent]

    def args_of(self, prefix: str) -> list[dict]:
        return [a for p, a in self.sent if p == prefix]


@pytest.mark.parametrize("name", ["rbd", "cephfs_data", "xcb", "XCB-rep1", ".mgr"])
def test_check_name_refuses_foreign_pools(name):
    with pytest.raises(XcbError, match=f"pool {name}: xcbench only creates or writes pools named xcb-"):
        pools.check_name(name)


def test_existing_pool_is_used_not_created():
    c = Recorded()
    assert pools.ensure_pool(c, Protection("replicated", size=1)) == "xcb-rep1"
    assert "osd pool create" not in c.prefixes()
    assert c.prefixes() == ["auth caps"]  # only the gateway's caps are refreshed


def test_replicated_pool_created_with_size_min_size_and_rados_tag():
    c = Recorded(osds=3)
    assert pools.ensure_pool(c, Protection("replicated", size=3), pg_num=8) == "xcb-rep3"
    create, = c.args_of("osd pool create")
    assert (create["pool"], create["pg_num"], create["pool_type"]) == ("xcb-rep3", 8, "replicated")
    sets = {a["var"]: a["val"] for a in c.args_of("osd pool set")}
    assert sets == {"size": "3", "min_size": "2"}
    assert c.args_of("osd pool application enable") == [
        {"pool": "xcb-rep3", "app": "rados", "yes_i_really_mean_it": True}]


@pytest.mark.parametrize("hosts,domain", [(1, "osd"), (3, "host")])
def test_ec_pool_profile_overwrites_and_failure_domain(hosts, domain):
    c = Recorded(osds=3, hosts=hosts)
    assert pools.ensure_pool(c, Protection("erasure", k=2, m=1)) == "xcb-ec2-1"
    profile, = c.args_of("osd erasure-code-profile set")
    assert profile == {"name": "xcb-ec2-1", "profile": ["k=2", "m=1", f"crush-failure-domain={domain}"]}
    create, = c.args_of("osd pool create")
    assert create["pool_type"] == "erasure" and create["erasure_code_profile"] == "xcb-ec2-1"
    assert {"pool": "xcb-ec2-1", "var": "allow_ec_overwrites", "val": "true"} in c.args_of("osd pool set")
    # the profile exists before the pool that names it
    assert c.prefixes().index("osd erasure-code-profile set") < c.prefixes().index("osd pool create")


@pytest.mark.parametrize("prot,why", [
    (Protection("erasure", k=6, m=3), "k\\+m = 9 needs 9 OSDs"),
    (Protection("replicated", size=5), "size 5 needs 5 OSDs"),
    (Protection("erasure", k=1, m=1), "k >= 2"),
])
def test_impossible_pool_refused_before_any_command(prot, why):
    c = Recorded(osds=3)
    with pytest.raises(XcbError, match=why):
        pools.ensure_pool(c, prot)
    assert c.sent == []


def test_cephfs_pool_is_untagged_added_and_retagged():
    c = Recorded(existing=["xcb-ec2-1"], apps={"xcb-ec2-1": {"rados": {}}})
    assert pools.ensure_pool(c, Protection("erasure", k=2, m=1), cephfs=True) == "xcb-ec2-1"
    order = c.prefixes()
    disable = order.index("osd pool application disable")
    assert disable < order.index("fs add_data_pool") < order.index("osd pool application enable")
    assert "xcb-ec2-1" in c.fs_data_pools


def test_cephfs_pool_created_without_rados_tag_first():
    """`fs add_data_pool` refuses a pool tagged for another application: no rados tag at creation."""
    c = Recorded()
    pools.ensure_pool(c, Protection("replicated", size=2), cephfs=True)
    order = c.prefixes()
    assert order.index("fs add_data_pool") < order.index("osd pool application enable")


def test_cephfs_pool_needs_a_file_system():
    c = Recorded(fs_name=None)
    with pytest.raises(XcbError, match="no CephFS file system"):
        pools.ensure_pool(c, Protection("replicated", size=1), cephfs=True)
    with pytest.raises(XcbError, match="CephFS other: no such file system"):
        pools.add_fs_data_pool(Recorded(), "other", "xcb-rep1")


def test_gateway_granted_xcb_pools_except_fs_metadata():
    c = Recorded(existing=["xcb-rep1", "xcb-fs-meta", "xcb-fs-data", "rbd", "xcb-ec2-1"])
    pools.grant_gateway(c)
    caps, = c.args_of("auth caps")
    assert caps["entity"] == "client.xcb-gw"
    assert caps["caps"] == ["mon", "allow r", "osd",
                            "allow rwx pool=xcb-ec2-1, allow rwx pool=xcb-fs-data, allow rwx pool=xcb-rep1"]


def test_bring_your_own_cluster_caps_untouched():
    c = Recorded(embedded=False)
    pools.ensure_pool(c, Protection("replicated", size=1))
    assert "auth caps" not in c.prefixes()


def test_create_refuses_foreign_profile_names():
    with pytest.raises(XcbError, match="pool default"):
        pools.create_erasure(Recorded(), "xcb-ec2-1", "default", 2, 1, 8)


def test_embedded_cluster_with_another_key_changes_no_caps():
    """`--ceph-id bench` on the embedded cluster's conf: bench is not the cluster's admin."""
    c = Recorded()
    c.ceph_id, c.info = "bench", {"client_id": "admin"}
    pools.ensure_pool(c, Protection("erasure", k=2, m=1))
    assert "auth caps" not in c.prefixes()
    with pytest.raises(XcbError, match="changes the caps of no key"):
        pools.grant_gateway(c)


def test_existing_pool_used_as_it_is():
    """A pool the admin made: no create, no set, no retag; only added to the fs if it is not."""
    c = Recorded(embedded=False, existing=["xcb-rep1"], apps={"xcb-rep1": {"rbd": {}}})
    pools.ensure_pool(c, Protection("replicated", size=1), cephfs=True)
    reads = ("fs ls", "osd pool application get")
    assert [p for p in c.prefixes() if p not in reads] == ["fs add_data_pool"]
    c2 = Recorded(embedded=False, existing=["xcb-rep1"], fs_data_pools=["xcb-rep1"])
    pools.ensure_pool(c2, Protection("replicated", size=1), cephfs=True)
    assert [p for p in c2.prefixes() if p not in reads] == []


def test_add_data_pool_denied_names_the_admin_command():
    c = Recorded(embedded=False, existing=["xcb-rep1"])
    c.ceph_id = "bench"
    real = c.mon_command

    def deny(prefix, **args):
        if prefix == "fs add_data_pool":
            raise XcbError("ceph fs add_data_pool: Permission denied: 'xcb-fs' (EPERM)")
        return real(prefix, **args)
    c.mon_command = deny
    with pytest.raises(XcbError, match="ceph fs add_data_pool xcb-fs xcb-rep1"):
        pools.ensure_pool(c, Protection("replicated", size=1), cephfs=True)
