"""xcbench cluster: embedded mini Ceph cluster: up | status | down | env; caps for a site's."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from xcbench.backends.base import backend_class
from xcbench.ceph.access import caps_lines, needs_of
from xcbench.ceph.cluster import Cluster, cluster_from_args, default_state_dir
from xcbench.ceph.mini import MiniCluster
from xcbench.commands import argcheck
from xcbench.commands.options import add_ceph_args
from xcbench.errors import XcbError
from xcbench.hosts.emulate import Record, records
from xcbench.matrix import load_matrix


def add_parser(sub):
    p = sub.add_parser("cluster", help="embedded mini Ceph cluster: up | status | down | env",
                       description="Start, inspect and stop the embedded mini Ceph cluster "
                                   "(state in --state-dir, else the state home's cluster/).")
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = acts.add_parser("up", help="start the mini cluster (does nothing if it runs)")
    up.add_argument("--state-dir", metavar="DIR", help="where the cluster lives")
    up.add_argument("--objectstore", choices=("bluestore", "memstore"), default="bluestore",
                    help="bluestore on sparse files (default) or memstore (RAM, never given back)")
    up.add_argument("--osds", type=int, default=3, metavar="N", help="number of OSDs (default 3)")
    up.add_argument("--timeout", type=float, default=180, metavar="SECONDS",
                    help="how long to wait for health (default 180 s)")
    up.add_argument("--bind", metavar="ADDR", default="127.0.0.1",
                    help="the IPv4 address every daemon listens on (default 127.0.0.1; the "
                         "emulated hosts' bridge address, e.g. 10.77.0.1, so gateway hosts reach it)")
    up.add_argument("--osd-host", metavar="HOST",
                    help="run the OSDs (and a node_exporter) inside this emulated host (`xcbench "
                         "hosts up`, role storage): every byte to them crosses its link; with --bind "
                         "the bridge address")
    up.add_argument("-q", "--quiet", action="store_true", help="print only the ceph.conf path")
    st = acts.add_parser("status", help="health, OSDs, pools, file systems (of any cluster)")
    add_ceph_args(st)
    st.add_argument("--json", action="store_true", help="machine-readable output")
    down = acts.add_parser("down", help="stop every daemon and remove the state")
    down.add_argument("--state-dir", metavar="DIR", help="where the cluster lives")
    env = acts.add_parser("env", help="print the exports for the ceph CLI (eval \"$(xcbench cluster env)\")")
    add_ceph_args(env)
    caps = acts.add_parser("caps", help="print the `ceph auth` lines a site's admin runs for xcbench",
                           description="Print the exact lines a site's admin runs: a least-privilege "
                                       "key for xcbench, the gateway's own key limited to the xcb- "
                                       "pools, and the CephFS steps only an admin can do. Asks no cluster.")
    caps.add_argument("--matrix", metavar="FILE", help="the matrix to run (default: layouts/quick.yaml)")
    caps.add_argument("--fs", metavar="NAME", help="the CephFS file system cephfs cells use")
    caps.add_argument("--bench-id", dest="bench_id", default="xcb-bench", metavar="NAME",
                      help="name of the key xcbench will run with, as --id of `xcbench run` "
                           "(default xcb-bench)")
    # the older spelling keeps working, unlisted: --id is the key a command connects as elsewhere
    caps.add_argument("--id", dest="bench_id", metavar="NAME", help=argparse.SUPPRESS)
    caps.add_argument("--gateway-id", default="xcb-gw", metavar="NAME",
                      help="name of the gateways' key (default xcb-gw)")
    return p


def main(args) -> int:
    return {"up": _up, "status": _status, "down": _down, "env": _env,
            "caps": _caps}[args.action](args)


def _caps(args) -> int:
    path = args.matrix
    if path is None:
        from importlib.resources import files
        path = str(files("xcbench.layouts") / "quick.yaml")
    needs = needs_of(load_matrix(path).cells, backend_class)
    if needs.cephfs and not args.fs:
        raise XcbError(f"{path}: the matrix has cephfs cells: give --fs NAME (the file system they use)")
    for line in caps_lines(needs, args.fs, bench_id=args.bench_id, gateway_id=args.gateway_id):
        print(line)
    return 0


def _up(args) -> int:
    argcheck.ours("--state-dir", args.state_dir)
    mc = MiniCluster(default_state_dir(args.state_dir))
    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))
    osd_host = _emulated_host(args.osd_host) if getattr(args, "osd_host", None) else None
    cluster, started = mc.up(objectstore=args.objectstore, osds=args.osds, timeout=args.timeout,
                             addr=args.bind, log=log, osd_host=osd_host)
    if not started and not args.quiet:
        print(f"cluster already running in {mc.state}; nothing done")
    if not args.quiet:
        print(f"ceph.conf: {cluster.conf}")
        print(f"use it: eval \"$(xcbench cluster env --state-dir {mc.state})\"")
    else:
        print(cluster.conf)
    return 0


def _emulated_host(name: str) -> tuple[str, str]:
    """(netns, address) of an emulated host recorded as up; one line naming it otherwise."""
    for path in records():
        try:
            h = (Record.load(path).data.get("hosts") or {}).get(name)
        except XcbError:
            continue
        if h:
            return h["netns"], h["address"]
    raise XcbError(f"cluster up --osd-host {name}: no emulated host {name} is up "
                   "(`xcbench hosts up FILE` first)")


def _down(args) -> int:
    argcheck.ours("--state-dir", args.state_dir)
    MiniCluster(default_state_dir(args.state_dir)).down(log=print)
    return 0


def _env(args) -> int:
    c = cluster_from_args(args, connect=False)
    # the embedded conf finds each client's keyring by name: a --keyring here would break
    # `ceph-fuse --id xcb-fs` and friends
    ceph_args = ["--id", c.ceph_id] + (["--keyring", str(c.keyring)] if c.keyring and not c.embedded else [])
    print(f"export CEPH_CONF={shlex.quote(str(c.conf))}")
    print(f"export CEPH_ARGS={shlex.quote(' '.join(shlex.quote(a) for a in ceph_args))}")
    return 0


def _status(args) -> int:
    c = cluster_from_args(args, connect=False)
    if c.embedded and c.state_dir is not None:
        if not MiniCluster(c.state_dir).running():
            raise XcbError(f"{c.state_dir}: the mini cluster is not running (crashed or stopped); "
                           "`xcbench cluster down` cleans up, `xcbench cluster up` starts it")
    c.rados()
    c.discover_fs()
    s = collect_status(c)
    if args.json:
        json.dump(s, sys.stdout, indent=2)
        print()
    else:
        _print_status(s)
    return 0


def collect_status(c: Cluster) -> dict:
    st = c.mon_command("status")
    osdmap = st.get("osdmap", {})
    osdmap = osdmap.get("osdmap", osdmap)  # older releases nest it
    pools = c.mon_command("osd pool ls", detail="detail")
    pool_names = {p["pool_id"]: p["pool_name"] for p in pools}
    fss = []
    for fs in c.mon_command("fs dump").get("filesystems", []):
        m = fs["mdsmap"]
        fss.append({"name": m["fs_name"],
                    "metadata_pool": pool_names.get(m.get("metadata_pool"), m.get("metadata_pool")),
                    "data_pools": [pool_names.get(p, p) for p in m.get("data_pools", [])],
                    "mds": [{"name": i["name"], "state": i["state"]} for i in m.get("info", {}).values()]})
    out = {
        "conf": str(c.conf), "embedded": c.embedded, "state_dir": str(c.state_dir or ""),
        "fsid": st.get("fsid"), "client_id": c.ceph_id, "gateway_id": c.gateway_id,
        "fs_name": c.fs_name, "fs_client_id": c.fs_ceph_id,
        "health": st["health"]["status"],
        "checks": {k: v.get("summary", {}).get("message", "") for k, v in st["health"].get("checks", {}).items()},
        "osds": {"num": osdmap.get("num_osds"), "up": osdmap.get("num_up_osds"), "in": osdmap.get("num_in_osds")},
        "pgs": {s["state_name"]: s["count"] for s in st.get("pgmap", {}).get("pgs_by_state", [])},
        "pools": [{"name": p["pool_name"], "type": "erasure" if p.get("type") == 3 else "replicated",
                   "size": p["size"], "min_size": p["min_size"], "pg_num": p["pg_num"],
                   "erasure_code_profile": p.get("erasure_code_profile") or None,
                   "applications": sorted(p.get("application_metadata", {}))} for p in pools],
        "fs": fss, "roles": {"pools": c.pools},
    }
    if c.embedded and c.state_dir is not None:
        mc = MiniCluster(c.state_dir)
        daemons = mc.daemons()
        rss = mc.rss()
        out["daemons"] = {n: {"pid": pid, "rss": rss.get(n, 0)} for n, pid in sorted(daemons.items())}
        out["rss_total"] = sum(rss.values())
        out["objectstore"] = c.info.get("objectstore")
        out["ports"] = c.info.get("ports")
        # the embedded cluster's own Prometheus: what `run` reads without --prometheus, and
        # where a site's Grafana or a user's PromQL can look at a run
        out["prometheus"] = c.info.get("prometheus")
    return out


def _print_status(s: dict) -> None:
    print(f"cluster  {s['conf']}  ({'embedded' if s['embedded'] else 'existing'})")
    print(f"health   {s['health']}")
    for code, msg in s["checks"].items():
        print(f"         {code}: {msg}")
    o = s["osds"]
    print(f"osds     {o['num']} total, {o['up']} up, {o['in']} in")
    print("pgs      " + ", ".join(f"{n} {k}" for k, n in s["pgs"].items()))
    for p in s["pools"]:
        kind = f"erasure {p['erasure_code_profile']}" if p["type"] == "erasure" else f"replicated size {p['size']}"
        print(f"pool     {p['name']:<22} {kind:<26} pg {p['pg_num']:<4} {','.join(p['applications'])}")
    for fs in s["fs"]:
        mds = ", ".join(f"{m['name']} {m['state']}" for m in fs["mds"]) or "no MDS"
        print(f"fs       {fs['name']}: {mds}; data pools {', '.join(map(str, fs['data_pools']))}")
    prom = s.get("prometheus")
    if isinstance(prom, dict) and prom.get("url"):
        print(f"prom     {prom['url']} (scrapes node_exporter {prom.get('node')} and the mgr "
              f"module {prom.get('mgr')}; what `xcbench run` reads without --prometheus)")
    elif s.get("embedded"):
        print("prom     none (started without its Prometheus); `xcbench run --prometheus URL` "
              "for a site's")
    if "daemons" in s:
        print("daemons  " + ", ".join(f"{n} ({d['pid']}, {_mib(d['rss'])})" for n, d in s["daemons"].items()))
        print(f"rss      {_mib(s['rss_total'])} in total")


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"
