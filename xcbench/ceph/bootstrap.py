"""Bootstrap steps of the embedded mini cluster (xcbench.ceph.mini): its ceph.conf, cephx keys
and keyrings, its pools, CephFS and client users, and the health it must reach.

Each setting's measured reason is beside it (the defaults it changes, and what they cost here).
"""

from __future__ import annotations

import base64
import os
import struct
import time
from pathlib import Path

from xcbench.ceph import pools as cephpools
from xcbench.ceph.cluster import FS_CEPH_ID, FS_NAME, GATEWAY_ID, Cluster
from xcbench.errors import XcbError
from xcbench.system import proc
from xcbench.system.fsutil import write_file
from xcbench.system.ports import LOOPBACK

BINARIES = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "monmaptool", "ceph")
# the measured pools: replicated size 3 (failure domain osd: one host) against EC 2+1 on the
# same 3 OSDs; CephFS's own metadata and default data pools stay size 1 (not measured)
POOLS = {"replicated": "xcb-rep3", "erasure": "xcb-ec2-1",
         "fs_metadata": "xcb-fs-meta", "fs_data": "xcb-fs-data"}
POOL_SIZES = {"xcb-rep3": 3, "xcb-fs-meta": 1, "xcb-fs-data": 1}
PG_NUM = {"xcb-rep3": 32, "xcb-ec2-1": 32, "xcb-fs-meta": 16, "xcb-fs-data": 32}
# Health checks that may remain on a one-host throw-away cluster, and why they are harmless.
EXPECTED_WARNINGS = {
    "POOL_NO_REDUNDANCY": "size-1 pools are deliberate on a one-host test cluster",
    "MON_DISK_LOW": "the mon store is tiny; a nearly full disk does not matter for a throw-away cluster",
    "MGR_MODULE_ERROR": "an optional mgr module (e.g. influx) lacks its Python dependency; xcbench does not use it",
}


def gen_key() -> str:
    """A cephx secret as ceph-authtool --gen-print-key makes it (AES, 16 random bytes)."""
    now = time.time()
    header = struct.pack("<HIIH", 1, int(now), int((now % 1) * 1e9), 16)
    return base64.b64encode(header + os.urandom(16)).decode()


def keyring_text(entity: str, key: str, caps: dict[str, str] | None = None) -> str:
    lines = [f"[{entity}]", f"\tkey = {key}"]
    lines += [f'\tcaps {svc} = "{cap}"' for svc, cap in (caps or {}).items()]
    return "\n".join(lines) + "\n"


def auth_key(c: Cluster, entity: str, caps: dict[str, str]) -> str:
    flat = [x for kv in caps.items() for x in kv]
    return key_of(c.mon_command("auth get-or-create", entity=entity, caps=flat))


def key_of(out) -> str:
    if isinstance(out, list) and out and "key" in out[0]:
        return out[0]["key"]
    raise XcbError(f"unexpected answer from the mon while creating a key: {str(out)[:80]}")


def write_secret(path: Path, text: str) -> None:
    """A keyring or key, 0600, never written through a link (xcbench.system.fsutil.write_file)."""
    write_file(path, text, 0o600)



def mon_host(addr: str, ports: list[int]) -> str:
    return f"[v2:{addr}:{ports[0]},v1:{addr}:{ports[1]}]"


def build_conf(state: Path, run_dir: Path, fsid: str, ports: list[int], objectstore: str,
               addr: str = LOOPBACK) -> dict:
    """The mini cluster's ceph.conf; every daemon listens on ``addr`` only (loopback by
    default; the emulated hosts' bridge address when gateway hosts must reach it)."""
    log = state / "log"
    g = {
        "fsid": fsid,
        "mon host": mon_host(addr, ports),
        "public addr": addr, "cluster addr": addr,
        "auth cluster required": "cephx", "auth service required": "cephx",
        "auth client required": "cephx",
        "keyring": state / "ceph.$name.keyring",
        "run dir": run_dir, "admin socket": run_dir / "$name.asok", "pid file": run_dir / "$name.pid",
        "log file": log / "$name.log", "mon cluster log file": log / "cluster.log",
        "crash dir": state / "crash",
        "osd pool default size": 1, "osd pool default min size": 1,
        "osd pool default pg num": 8, "osd pool default pgp num": 8,
        "osd pool default pg autoscale mode": "off",
        "osd crush chooseleaf type": 0,  # one host: replicate across OSDs
        "mon allow pool delete": True, "mon allow pool size one": True,
        "mon warn on pool no redundancy": False,
        "mon data avail warn": 1, "mon data avail crit": 0,  # small disks here
        "auth allow insecure global id reclaim": False,
        "mon warn on insecure global id reclaim allowed": False,
        "ms bind ipv6": False,
        "osd max object size": 128 << 20,
        # PG states reach `pg stat` through the mgr: the 5 s defaults made waiting for
        # active+clean the slowest part of bring-up
        "osd mon report interval": 1, "mgr stats period": 1, "mgr tick period": 1,
    }
    if objectstore == "memstore":
        g["mon debug no require bluestore for ec overwrites"] = True
    return {
        "global": g,
        "mon": {"mon data": state / "mon.$id", "keyring": "$mon_data/keyring",
                "paxos propose interval": 0.1},  # default 1 s: every osdmap change waits
        "mgr": {"mgr data": state / "mgr.$id", "keyring": "$mgr_data/keyring"},
        "osd": {"osd data": state / "osd.$id", "keyring": "$osd_data/keyring",
                "osd objectstore": objectstore,
                "bluestore block create": True, "bluestore block size": 20 << 30,  # sparse file
                "bluestore fsck on mount": False, "memstore device bytes": 4 << 30,
                "osd memory target": 900 << 20,
                "osd op num shards": 1, "osd op num threads per shard": 2},
        "mds": {"mds data": state / "mds.$id", "keyring": "$mds_data/keyring",
                "mds cache memory limit": 256 << 20},
        # clients (CLI, python, ceph-fuse): no pid file, one admin socket per process
        "client": {"pid file": "", "admin socket": run_dir / "$name.$pid.asok"},
    }


def make_pools(c: Cluster, state: Path) -> None:
    """The pools, the CephFS and the client keys of a new mini cluster (keyrings into ``state``)."""
    p = POOLS
    cephpools.create_replicated(c, p["replicated"], POOL_SIZES[p["replicated"]],
                                PG_NUM[p["replicated"]], rados=False)
    cephpools.create_erasure(c, p["erasure"], p["erasure"], 2, 1, PG_NUM[p["erasure"]],
                             "osd", rados=False)
    for role in ("fs_metadata", "fs_data"):
        cephpools.create_replicated(c, p[role], POOL_SIZES[p[role]], PG_NUM[p[role]], rados=False)
    c.mon_command("fs new", fs_name=FS_NAME, metadata=p["fs_metadata"], data=p["fs_data"])
    for role in ("replicated", "erasure"):
        cephpools.add_fs_data_pool(c, FS_NAME, p[role])  # also tags them rados
    c.mon_command("fs set", fs_name=FS_NAME, var="standby_count_wanted", val="0")
    gw = auth_key(c, f"client.{GATEWAY_ID}", {"mon": "allow r"})
    write_secret(state / f"ceph.client.{GATEWAY_ID}.keyring",
                 keyring_text(f"client.{GATEWAY_ID}", gw))
    cephpools.grant_gateway(c)
    out = c.mon_command("fs authorize", filesystem=FS_NAME, entity=f"client.{FS_CEPH_ID}",
                        caps=["/", "rwp"])  # p: layouts and quotas through xattrs
    write_secret(state / f"ceph.client.{FS_CEPH_ID}.keyring",
                 keyring_text(f"client.{FS_CEPH_ID}", key_of(out)))


def check_addr(addr: str | None) -> str:
    """The address a mini cluster may listen on: one IPv4 address of this host (the daemons run
    with ``ms bind ipv6 = false``), never a wildcard. XcbError (one line) otherwise."""
    import ipaddress
    import socket
    a = (addr or LOOPBACK).strip()
    try:
        ip = ipaddress.ip_address(a)
    except ValueError:
        raise XcbError(f"cluster --bind {addr!r}: not an IPv4 address") from None
    if ip.version != 4 or ip.is_unspecified:
        raise XcbError(f"cluster --bind {a}: give one IPv4 address of this host "
                       "(not a wildcard, not IPv6: the daemons bind IPv4 only)")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((a, 0))
        except OSError as e:
            raise XcbError(f"cluster --bind {a}: not an address of this host ({e.strerror}); "
                           "for emulated hosts run `xcbench hosts up` first") from None
    return a


def check_prerequisites() -> None:
    for b in BINARIES:
        proc.which(b)


def mds_active(c: Cluster) -> bool:
    dump = c.mon_command("fs dump")
    for fs in dump.get("filesystems", []):
        if fs["mdsmap"]["fs_name"] == FS_NAME:
            return any(i.get("state") == "up:active" for i in fs["mdsmap"].get("info", {}).values())
    return False


def pgs_clean(c: Cluster) -> bool:
    """Every PG of every pool exists and is active+clean."""
    expected = sum(p["pg_num"] for p in c.mon_command("osd pool ls", detail="detail"))
    summary = c.mon_command("pg stat").get("pg_summary", {})
    states = {s["name"]: s["num"] for s in summary.get("num_pg_by_state", [])}
    return summary.get("num_pgs") == expected and states.get("active+clean") == expected


def unexpected_checks(health: dict) -> list[str]:
    if health.get("status") == "HEALTH_OK":
        return []
    return [code for code in health.get("checks", {}) if code not in EXPECTED_WARNINGS] or \
        ([] if health.get("checks") else ["(no checks)"])
