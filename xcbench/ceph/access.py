"""What a key must be allowed to do for a matrix, the caps that allow it, and a check of both.

A site gives xcbench a key of its own, never client.admin, and xcbench never changes the caps of
any key there. :func:`caps_lines` are the exact `ceph ...` lines a site's admin runs
(`xcbench cluster caps`): a least-privilege bench key (creates and sets only ``xcb-`` pools and
``xcb-`` EC profiles, reads the cluster and the pools' stats, rwx on the matrix's pools, rwp
under ``/xcbench`` of the file system), the gateway's own key (rwx on the pools of XrdCeph
cells, nothing else) and, for CephFS cells, the steps only an admin can do (`fs add_data_pool`
needs mon write on the whole cluster, and ``/xcbench`` must exist).

:func:`check_access` runs before anything touches the cluster: it asks only harmless questions
(lists, stats, and commands the monitor answers EINVAL/ENOENT when allowed and EACCES when not,
never with a change) and stops at the first missing cap with one line naming it and the line
that grants it.
"""

from __future__ import annotations

import errno
import json
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcbench.cell.protection import POOL_PREFIX, Protection
from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError

BENCH_ID = "xcb-bench"
GATEWAY_ID = "xcb-gw"
TOP = "/xcbench"  # the one directory xcbench writes in a site's file system
PROBE = "xcb-dry-run-"  # names of pools that never exist: asking about them changes nothing
MON_WRITES = ("osd pool create", "osd pool set", "osd pool application enable",
              "osd pool application disable", "osd pool application set")


@dataclass
class Needs:
    """What the cells of a matrix need of a cluster."""
    pools: dict[str, Protection] = field(default_factory=dict)
    cephfs_pools: list[str] = field(default_factory=list)
    rados_pools: list[str] = field(default_factory=list)

    @property
    def cephfs(self) -> bool:
        return bool(self.cephfs_pools)


def needs_of(cells: Iterable[Any], backend_of: Callable[[str], Any]) -> Needs:
    """``backend_of``: the backend (class) of a cell's backend name (xcbench.backends.base.
    backend_class): the backends stand above the cluster handle, so it is handed in."""
    n = Needs()
    for c in cells:
        cls = backend_of(c.backend)
        if c.pool is None or not cls.needs_cluster:
            continue
        spec = c.pool if isinstance(c.pool, Protection) else Protection.parse(c.pool)
        n.pools.setdefault(spec.name, spec)
        # a backend on a file system (cephfs) vs one whose gateway talks to RADOS (its own key)
        group = n.cephfs_pools if getattr(cls, "uses_fs", False) else n.rados_pools
        if spec.name not in group:
            group.append(spec.name)
    return n


# ---- the caps -----------------------------------------------------------------------------------
def bench_caps(needs: Needs, fs_name: str | None) -> dict[str, str]:
    mon = ["allow r"] + [f'allow command "{c}" with pool prefix {POOL_PREFIX}' for c in MON_WRITES]
    mon.append(f'allow command "osd erasure-code-profile set" with name prefix {POOL_PREFIX}')
    caps = {"mon": ", ".join(mon), "mgr": "allow r",
            "osd": ", ".join(f"allow rwx pool={p}" for p in sorted(needs.pools)) or "allow r"}
    if needs.cephfs and fs_name:
        caps["mds"] = f"allow rwp fsname={fs_name} path={TOP}"
    return caps


def gateway_caps(needs: Needs) -> dict[str, str]:
    return {"mon": "allow r",
            "osd": ", ".join(f"allow rwx pool={p}" for p in sorted(needs.rados_pools)) or "allow r"}


def get_or_create(entity: str, caps: dict[str, str]) -> str:
    quoted = " ".join(f"{svc} '{cap}'" for svc, cap in caps.items())
    return f"ceph auth get-or-create client.{entity} {quoted} -o /etc/ceph/ceph.client.{entity}.keyring"


def pool_lines(spec: Protection, pg_num: int = 32) -> list[str]:
    """The admin's lines that make the pool xcbench would make."""
    if spec.kind == "erasure":
        return [f"ceph osd erasure-code-profile set {spec.profile} k={spec.k} m={spec.m} "
                "crush-failure-domain=host",
                f"ceph osd pool create {spec.name} {pg_num} {pg_num} erasure {spec.profile}",
                f"ceph osd pool set {spec.name} allow_ec_overwrites true"]
    return [f"ceph osd pool create {spec.name} {pg_num} {pg_num} replicated",
            f"ceph osd pool set {spec.name} size {spec.size} --yes-i-really-mean-it"]


def caps_lines(needs: Needs, fs_name: str | None, *, bench_id: str = BENCH_ID,
               gateway_id: str = GATEWAY_ID) -> list[str]:
    out = ["# Run as the cluster's admin. xcbench changes no key's caps and creates no key itself.",
           f"# 1. The key xcbench runs with (--id {bench_id} -k ...): creates and sets"
           f" only {POOL_PREFIX}* pools and EC profiles, rwx on the matrix's pools"
           + (f", rwp under {TOP} of {fs_name}" if needs.cephfs and fs_name else "") + ".",
           get_or_create(bench_id, bench_caps(needs, fs_name))]
    if needs.rados_pools:
        out += [f"# 2. The XrdCeph gateway's own key (--gateway-id {gateway_id} --gateway-keyring ...):"
                f" rwx on the {POOL_PREFIX} pools of rados cells, nothing else.",
                get_or_create(gateway_id, gateway_caps(needs))]
    if needs.cephfs:
        fs = fs_name or "<fs>"
        out += [f"# 3. CephFS cells: adding a data pool needs mon write on the whole cluster, so the"
                f" admin makes the pools, adds them to {fs} and makes {TOP} (mount {fs} once:"
                f" mkdir -m 0755 <mount>{TOP})."]
        for name in needs.cephfs_pools:
            out += pool_lines(needs.pools[name]) + [f"ceph fs add_data_pool {fs} {name}"]
    return out


# ---- the check -----------------------------------------------------------------------------------
def _ask(cluster: Cluster, prefix: str, *, mgr: bool = False, **args: Any) -> tuple[int, str]:
    cmd = json.dumps({"prefix": prefix, "format": "json", **args})
    r = cluster.rados()
    ret, _out, outs = (r.mgr_command if mgr else r.mon_command)(cmd, b"")
    return ret, outs


def _denied(ret: int) -> bool:
    return ret in (-errno.EACCES, -errno.EPERM)


def check_access(cluster: Cluster, cells: Iterable[Any], backend_of: Callable[[str], Any]) -> None:
    """Stop with one line if the cluster's key cannot do what ``cells`` need (see module doc).
    The embedded cluster's own admin is not asked: it can do everything."""
    cells = list(cells)
    needs = needs_of(cells, backend_of)
    if not needs.pools:
        return
    if cluster.embedded and cluster.ceph_id == (cluster.info or {}).get("client_id", "admin"):
        return
    who = f"client.{cluster.ceph_id}"
    fs = cluster.fs_name
    grant = get_or_create(BENCH_ID, bench_caps(needs, fs))

    def stop(cap: str, what: str) -> None:
        raise XcbError(f"{who} may not {what} (missing {cap}); the admin grants it with: {grant}"
                       " (`xcbench cluster caps` prints every line)")

    ret, _ = _ask(cluster, "osd pool ls")
    if _denied(ret):
        stop("mon 'allow r'", "list pools")
    existing = set(cluster.pool_names())
    probe = PROBE + secrets.token_hex(4)
    missing = [p for p in needs.pools if p not in existing]
    if missing:
        # EINVAL (a pool type that does not exist) when allowed, EACCES when not: nothing made
        ret, _ = _ask(cluster, "osd pool create", pool=probe, pool_type="xcb-dry-run", pg_num=1)
        if _denied(ret):
            stop(f"mon 'allow command \"osd pool create\" with pool prefix {POOL_PREFIX}'",
                 f"create pool {missing[0]} (or have the admin create it: {'; '.join(pool_lines(needs.pools[missing[0]]))})")
        for prefix in ("osd pool set", "osd pool application enable"):
            kw: dict[str, Any] = {"var": "size", "val": "1"} if prefix == "osd pool set" else {"app": "rados"}
            ret, _ = _ask(cluster, prefix, pool=probe, **kw)
            if _denied(ret):
                stop(f"mon 'allow command \"{prefix}\" with pool prefix {POOL_PREFIX}'",
                     f"set up the new pool {missing[0]}")
        if any(needs.pools[p].kind == "erasure" for p in missing):
            ret, _ = _ask(cluster, "osd erasure-code-profile set", name=probe, profile=["k=0"])
            if _denied(ret):
                stop(f"mon 'allow command \"osd erasure-code-profile set\" with name prefix {POOL_PREFIX}'",
                     "create the EC profile of a new pool")
    ret, _ = _ask(cluster, "osd pool stats", mgr=True)
    if _denied(ret):
        stop("mgr 'allow r'", "read pool stats")
    if needs.cephfs:
        _check_cephfs(cluster, needs, who, stop)
    if needs.rados_pools:
        check_gateway_key(cluster, needs)


def _check_cephfs(cluster: Cluster, needs: Needs, who: str, stop: Any) -> None:
    fs = cluster.fs_name
    if not fs:
        raise XcbError("the matrix has cephfs cells and the cluster no single file system: give --fs NAME")
    data: list[str] = next((f.get("data_pools", []) for f in cluster.mon_command("fs ls")
                            if f.get("name") == fs), [])
    todo = [p for p in needs.cephfs_pools if p not in data]
    if todo:
        ret, _ = _ask(cluster, "fs add_data_pool", fs_name=fs, pool=PROBE + secrets.token_hex(4))
        if _denied(ret):
            spec = needs.pools[todo[0]]
            exists = todo[0] in set(cluster.pool_names())
            lines = ([] if exists else pool_lines(spec)) + [f"ceph fs add_data_pool {fs} {todo[0]}"]
            raise XcbError(f"{who} may not add pool {todo[0]} to CephFS {fs} (that needs mon "
                           f"'allow rw' on the whole cluster): the admin runs: {'; '.join(lines)}"
                           " (`xcbench cluster caps` prints every line)")
    caps = own_caps(cluster)
    if caps is not None and "mds" in caps:
        perms = re.findall(r"allow\s+([rwpsx*]+)", caps["mds"])
        if not any("p" in g or "*" in g for g in perms):
            stop("mds 'allow rwp' (the p sets layouts)", f"set file layouts in {fs}")


def own_caps(cluster: Cluster) -> dict[str, str] | None:
    """The key's own caps when it may read them (`auth get` needs mon 'allow *'), else None."""
    ret, _ = _ask(cluster, "auth get", entity=f"client.{cluster.ceph_id}")
    if ret != 0:
        return None
    try:
        got = cluster.mon_command("auth get", entity=f"client.{cluster.ceph_id}")
        return dict((got[0] if isinstance(got, list) else got).get("caps", {}))
    except (XcbError, KeyError, IndexError, TypeError, AttributeError):
        return None


def check_gateway_key(cluster: Cluster, needs: Needs | None = None) -> None:
    """A rados (XrdCeph) gateway of a site's cluster runs with its own limited key, never admin."""
    if cluster.embedded:
        return
    hint = ("create it with the line `xcbench cluster caps` prints, and give --gateway-id "
            f"{GATEWAY_ID} --gateway-keyring PATH")
    if not cluster.gateway_id or cluster.gateway_id in ("admin", cluster.ceph_id):
        raise XcbError(f"rados cells: the gateway needs its own key limited to the {POOL_PREFIX} pools, "
                       f"not client.{cluster.gateway_id or cluster.ceph_id}: {hint}")
    kr = cluster.gateway_keyring or cluster._default_keyring(cluster.gateway_id)
    if kr is None or not Path(kr).is_file():
        raise XcbError(f"rados cells: no keyring for the gateway's key client.{cluster.gateway_id} "
                       f"(give --gateway-keyring PATH): {hint}")
