"""xcb- pools: create replicated / erasure-coded pools, add them to CephFS, grant the gateway.

Functions take a cluster handle (mon_command, pool_names, num_osds ...); this module does not
import xcbench.ceph.cluster, which imports it.

xcbench only ever creates or writes pools whose name starts with ``xcb-`` (on a bring-your-own
cluster too); every mon command is idempotent so two processes may ensure the same pool. A pool
that exists is used as it is. The caps of a key are changed only for the gateway user of the
embedded cluster, by that cluster's admin (:func:`may_grant`): never on a site's cluster.
"""

from __future__ import annotations

from typing import Any

from xcbench.cell.protection import POOL_PREFIX, Protection
from xcbench.ceph.handle import ClusterHandle
from xcbench.errors import XcbError

__all__ = ["POOL_PREFIX", "add_fs_data_pool", "check_name", "create_erasure", "create_replicated",
           "ensure_pool", "grant_gateway", "may_grant"]


def check_name(name: str) -> None:
    if not name.startswith(POOL_PREFIX):
        raise XcbError(f"pool {name}: xcbench only creates or writes pools named {POOL_PREFIX}* "
                       "(refusing to touch a pool it did not create)")


def create_replicated(cluster: ClusterHandle, name: str, size: int, pg_num: int, *, rados: bool = True) -> None:
    """``rados=False`` for pools CephFS takes first (`fs new` refuses pools tagged for another app)."""
    check_name(name)
    cluster.mon_command("osd pool create", pool=name, pg_num=pg_num, pgp_num=pg_num,
                        pool_type="replicated")
    cluster.mon_command("osd pool set", pool=name, var="size", val=str(size),
                        yes_i_really_mean_it=True)
    cluster.mon_command("osd pool set", pool=name, var="min_size", val=str(max(1, size - size // 2)))
    if rados:
        enable_rados(cluster, name)


def create_erasure(cluster: ClusterHandle, name: str, profile: str, k: int, m: int, pg_num: int,
                   failure_domain: str = "osd", *, rados: bool = True) -> None:
    check_name(name)
    check_name(profile)
    cluster.mon_command("osd erasure-code-profile set", name=profile,
                        profile=[f"k={k}", f"m={m}", f"crush-failure-domain={failure_domain}"])
    cluster.mon_command("osd pool create", pool=name, pg_num=pg_num, pgp_num=pg_num,
                        pool_type="erasure", erasure_code_profile=profile)
    # CephFS data and XrdCeph (partial writes) both need overwrites on EC pools.
    cluster.mon_command("osd pool set", pool=name, var="allow_ec_overwrites", val="true")
    if rados:
        enable_rados(cluster, name)


MARK = ("rados", "xcbench", "created")  # application metadata on every pool xcbench made


def enable_rados(cluster: ClusterHandle, name: str) -> None:
    """Tag the pool for librados users (XrdCeph, fio), marked as xcbench's own (so a later run
    may retag it); a CephFS data pool keeps its cephfs tag."""
    cluster.mon_command("osd pool application enable", pool=name, app="rados",
                        yes_i_really_mean_it=True)
    cluster.mon_command("osd pool application set", pool=name, app=MARK[0], key=MARK[1],
                        value=MARK[2])


def _marked(cluster: ClusterHandle, name: str) -> bool:
    apps = cluster.mon_command("osd pool application get", pool=name) or {}
    return isinstance(apps, dict) and (apps.get(MARK[0]) or {}).get(MARK[1]) == MARK[2]


def add_fs_data_pool(cluster: ClusterHandle, fs_name: str, name: str, *, created: bool = True) -> None:
    """Make ``name`` a data pool of ``fs_name``. A pool xcbench did not just create (``created``
    False: the admin's) keeps its application tags: xcbench never retags a pool it did not make."""
    check_name(name)
    fss = {fs["name"]: fs for fs in cluster.mon_command("fs ls")}
    if fs_name not in fss:
        raise XcbError(f"CephFS {fs_name}: no such file system (have: {', '.join(fss) or 'none'})")
    if name in fss[fs_name].get("data_pools", []):
        return
    if created:
        # add_data_pool refuses a pool tagged for another application: untag, add, retag.
        apps = cluster.mon_command("osd pool application get", pool=name) or {}
        for app in apps:
            if app != "cephfs":
                cluster.mon_command("osd pool application disable", pool=name, app=app,
                                    yes_i_really_mean_it=True)
    try:
        cluster.mon_command("fs add_data_pool", fs_name=fs_name, pool=name)
    except XcbError as e:
        if "EACCES" in str(e) or "EPERM" in str(e):
            raise XcbError(f"pool {name}: client.{cluster.ceph_id} may not add it to CephFS "
                           f"{fs_name} (only a key with mon 'allow rw' can): ask the admin to run "
                           f"`ceph fs add_data_pool {fs_name} {name}` (see `xcbench cluster caps`)") from e
        raise
    if created:
        enable_rados(cluster, name)


def may_grant(cluster: ClusterHandle) -> bool:
    """Only the embedded cluster's own admin updates the caps of the gateway user xcbench made
    for it; xcbench never changes the caps of a key on a site's cluster."""
    info = getattr(cluster, "info", None) or {}
    return bool(cluster.embedded and getattr(cluster, "ceph_id", "admin") == info.get("client_id", "admin"))


def grant_gateway(cluster: ClusterHandle) -> None:
    """Give the embedded cluster's gateway user rwx on every xcb- pool except CephFS metadata."""
    if not may_grant(cluster):
        raise XcbError(f"client.{cluster.ceph_id}: xcbench changes the caps of no key but the "
                       "gateway user of its own embedded cluster, as that cluster's admin")
    pools = sorted(p for p in cluster.pool_names()
                   if p.startswith(POOL_PREFIX) and p != cluster.pools.get("fs_metadata"))
    osd = ", ".join(f"allow rwx pool={p}" for p in pools)
    cluster.mon_command("auth caps", entity=f"client.{cluster.gateway_id}",
                        caps=["mon", "allow r", "osd", osd])


def ensure_pool(cluster: ClusterHandle, spec: Protection, *, cephfs: bool = False, pg_num: int = 32) -> str:
    """The pool of ``spec``: created (and tagged) if missing; one that exists is used as it is
    (an admin may have made it for xcbench), only added to the file system if it is not yet."""
    name = spec.name
    check_name(name)
    created = name not in cluster.pool_names()
    if created:
        spec.check_creatable(cluster.num_osds())
        if spec.kind == "erasure":
            domain = "host" if cluster.num_hosts() >= spec.shards else "osd"
            create_erasure(cluster, name, spec.profile or name, spec.k, spec.m, pg_num, domain,
                           rados=not cephfs)
        else:
            create_replicated(cluster, name, spec.size, pg_num, rados=not cephfs)
    if cephfs:
        if not cluster.fs_name:
            raise XcbError(f"pool {name}: no CephFS file system to add it to (give --fs NAME)")
        ours = created or cluster.embedded or _marked(cluster, name)
        add_fs_data_pool(cluster, cluster.fs_name, name, created=ours)
    if may_grant(cluster):
        grant_gateway(cluster)
    return name


def pool_settings(cluster: ClusterHandle, pool: str) -> dict[str, Any]:
    """`ceph osd pool get <pool> all` and, for EC pools, the EC profile, as the cluster says."""
    out: dict[str, Any] = {"name": pool}
    try:
        out["settings"] = cluster.mon_command("osd pool get", pool=pool, var="all")
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        out["error"] = str(e)
        return out
    profile = (out["settings"] or {}).get("erasure_code_profile")
    if profile:
        try:
            out["ec_profile"] = cluster.mon_command("osd erasure-code-profile get", name=profile)
        except Exception as e:  # noqa: BLE001
            out["ec_profile_error"] = str(e)
    return out
