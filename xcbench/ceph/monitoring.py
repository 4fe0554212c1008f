"""The embedded cluster's monitoring: what a site runs, started with the mini cluster.

`cluster up` enables the ceph-mgr ``prometheus`` module, starts ``prometheus-node-exporter``
and a ``prometheus`` server scraping both every second, so that a run reads the cluster's hosts
through the same path as on a site (xcbench.telemetry.prometheus). Everything listens on one
address (the mgr module where the mgr listens; the exporter and the server on loopback) on free
ports; the server's TSDB lives under ``<state>/prometheus/`` with a short retention.

The two processes are daemons of the cluster like the mon and the OSDs: they run in their own
sessions, write pid files into the run dir, and carry ``<state>/prometheus/`` in their command
lines, so `cluster down` (or the next `cluster up` after a kill -9) finds them by command line
even when a pid file is stale.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xcbench.ceph.handle import ClusterHandle
from xcbench.errors import XcbError
from xcbench.system import bounded_http, proc
from xcbench.system.ports import LOOPBACK, free_ports, late_bind_port

SUBDIR = "prometheus"
PROGS = ("prometheus", "prometheus-node-exporter")
SCRAPE_INTERVAL = 1.0  # seconds: levels of a few seconds still get several points
RETENTION = "1d"  # the cluster is a throw-away; a day covers any run on it
# node_exporter collectors the prometheus device reads (a site's exporter has them by default);
# the others cost CPU at a 1 s scrape for nothing
COLLECTORS = ("cpu", "diskstats", "netdev", "netclass", "meminfo", "uname", "stat", "loadavg",
              "textfile")
Log = Callable[[str], None]


def needle(state: Path) -> str:
    """What every monitoring process's command line contains (with a trailing separator: a
    state dir /x/c never matches the processes of /x/c2)."""
    return str(Path(state) / SUBDIR) + os.sep


def is_ours(argv: list[str], state: Path) -> bool:
    """Is ``argv`` a monitoring process of the cluster in ``state``?"""
    if not argv or os.path.basename(argv[0]) not in PROGS:
        return False
    n = needle(state)
    return any(n in a for a in argv[1:])


def exporter_cmd(state: Path, listen: str, netns: str | None = None) -> list[str]:
    """The node_exporter command line (``listen``: addr:port); ``netns``: inside that namespace
    (an emulated storage host)."""
    textfile = Path(state) / SUBDIR / "textfile"
    cmd = ["prometheus-node-exporter", f"--web.listen-address={listen}",
           "--collector.disable-defaults", *(f"--collector.{c}" for c in COLLECTORS),
           f"--collector.textfile.directory={textfile}{os.sep}"]
    return ["ip", "netns", "exec", netns, *cmd] if netns else cmd


def server_config(node_targets: list[str], mgr_target: str, interval: float = SCRAPE_INTERVAL) -> str:
    """prometheus.yml: node_exporter targets and the mgr module (honor_labels, as Ceph's docs
    say: its ``instance`` labels name the daemons' hosts)."""
    def yl(items: list[str]) -> str:
        return "[" + ", ".join(f"'{t}'" for t in items) + "]"
    return (f"# written by xcbench for the embedded cluster\n"
            f"global:\n  scrape_interval: {interval:g}s\n  scrape_timeout: {interval:g}s\n"
            f"  evaluation_interval: 15s\n"
            f"scrape_configs:\n"
            f"  - job_name: node\n    static_configs:\n      - targets: {yl(node_targets)}\n"
            f"  - job_name: ceph\n    honor_labels: true\n    static_configs:\n"
            f"      - targets: {yl([mgr_target])}\n")


MGR_MODULE_DIR = Path("/usr/share/ceph/mgr/prometheus")


def check_prerequisites() -> None:
    """The two programs and the mgr module are installed (one line naming what is not)."""
    for prog in PROGS:
        proc.which(prog)
    if not MGR_MODULE_DIR.is_dir():
        raise XcbError(f"{MGR_MODULE_DIR}: the ceph-mgr prometheus module is missing "
                       "(install ceph-mgr-modules-core, or `make setup`)")


def enable_mgr_module(cluster: ClusterHandle, addr: str) -> str:
    """Turn the mgr's prometheus module on, listening on ``addr`` and a free port (early in
    bring-up: the mgr loads it while the OSDs start). Returns its addr:port."""
    mgr_port = late_bind_port(addr)  # bound once the mgr loads the module, seconds from now
    for key, value in (("server_addr", addr), ("server_port", str(mgr_port)),
                       ("scrape_interval", f"{SCRAPE_INTERVAL:g}")):
        cluster.mon_command("config set", who="mgr", name=f"mgr/prometheus/{key}", value=value,
                            force=True)  # the mgr has not declared its options yet
    # forced: the mgr has not told the mon its modules yet (check_prerequisites saw it installed)
    cluster.mon_command("mgr module enable", module="prometheus", force="--force")
    return f"{addr}:{mgr_port}"


def mgr_module_said(log: Path) -> str:
    """The mgr log's last line about its prometheus module (a failed start says why there)."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines()
                 if "prometheus" in ln.lower()]
    except OSError as e:
        return f"no mgr log ({e.strerror})"
    return f"the mgr's last word on it: {lines[-1][-300:]}" if lines else "the mgr log names no prometheus module"


def start(state: Path, run_dir: Path, mgr: str, procs: proc.ProcessSet,
          osd_host: tuple[str, str] | None = None) -> dict[str, Any]:
    """Start the exporter and the server (scraping it and the mgr module at ``mgr``) without
    waiting (see :func:`wait_scraped`); return what cluster.json records ({"url",
    "scrape_interval", "node", "mgr", "pids", "dir"}). ``osd_host`` (netns, address): a second
    node_exporter inside that emulated storage host, on its address, scraped over the bridge."""
    check_prerequisites()
    base = Path(state) / SUBDIR
    for sub in ("data", "textfile"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    node_port, server_port = free_ports(2, LOOPBACK)
    node = f"{LOOPBACK}:{node_port}"
    pids = {}
    p = proc.spawn(exporter_cmd(state, node), name="node-exporter",
                   log=Path(state) / "log" / "node-exporter.out", procs=procs)
    pids["node-exporter"] = p.pid
    nodes = [node]
    if osd_host:
        ns, a = osd_host
        far = f"{a}:{free_ports(1, LOOPBACK)[0]}"  # its own namespace: any port is free there
        p = proc.spawn(exporter_cmd(state, far, netns=ns), name="node-exporter-storage",
                       log=Path(state) / "log" / "node-exporter-storage.out", procs=procs)
        pids["node-exporter-storage"] = p.pid
        nodes.append(far)
    conf = base / "prometheus.yml"
    conf.write_text(server_config(nodes, mgr))
    url_addr = f"{LOOPBACK}:{server_port}"
    p = proc.spawn(["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={base / 'data'}",
                    f"--storage.tsdb.retention.time={RETENTION}",
                    f"--web.listen-address={url_addr}"],
                   name="prometheus", log=Path(state) / "log" / "prometheus.out", procs=procs)
    pids["prometheus"] = p.pid
    for name, pid in pids.items():  # found by `down` also when the command line scan misses
        (Path(run_dir) / f"{name}.pid").write_text(f"{pid}\n")
    url = f"http://{url_addr}"
    return {"url": url, "scrape_interval": SCRAPE_INTERVAL, "node": node, "nodes": nodes, "mgr": mgr,
            "pids": pids, "dir": str(base)}


def wait_scraped(url: str, jobs: tuple[str, ...], deadline: float,
                 procs: proc.ProcessSet | None = None) -> None:
    """Until every target of ``jobs`` is up in ``url`` (one scrape of each has succeeded). Each
    answer within 2 s and 4 MiB, asked of ``url`` itself (no proxy variable is honoured: the
    Prometheus xcbench started is on this host)."""
    import requests
    session = requests.Session()
    session.trust_env = False  # no HTTP(S)_PROXY, no .netrc
    last = "no answer"
    while True:
        dead = [p.name for p in procs or [] if p.name.startswith(("prometheus", "node-exporter"))
                and not p.alive()]
        if dead:
            raise XcbError(f"{dead[0]} exited during start-up; see its log in the cluster's log dir")
        try:
            r = bounded_http.get(session, f"{url}/api/v1/targets", deadline=2, max_bytes=4 << 20)
            active = json.loads(r.body)["data"]["activeTargets"]
            health = {j: [t["health"] for t in active if t["labels"]["job"] == j] for j in jobs}
            if all(h and all(x == "up" for x in h) for h in health.values()):
                return
            last = ", ".join(f"{j}: {'/'.join(h) or 'no target'}" for j, h in health.items())
        except (requests.RequestException, bounded_http.HttpLimit, ValueError, KeyError,
                TypeError) as e:
            last = type(e).__name__
        if time.monotonic() > deadline:
            raise XcbError(f"{url}: prometheus does not scrape its targets in time ({last})")
        time.sleep(0.2)
