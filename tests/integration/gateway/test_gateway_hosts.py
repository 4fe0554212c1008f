"""Gateways on gateway hosts on emulated hosts: 2 netns gateway hosts with a
CPU quota each, one origin on each behind a cmsd redirector, a second mini cluster listening on
the bridge address; files pushed through the redirector with xrdcp from the root namespace.

Checked: every file's adler32, both origins got files (per-origin evidence), each origin runs
in its host's network namespace and cgroup (whose quota is its CPU limit), and nothing of the
gateways, the hosts or the cluster is left afterwards. tmpfs and rados (XrdCeph).

The machine is shared: names carry this process's id and the network is a free 10.2xx.y.0/24.
"""

from __future__ import annotations

import os
import time
import zlib
from pathlib import Path

import pytest

from tests.support.emulated import emulated_hosts
from xcbench.cell import Cell
from xcbench.hosts.emulate import why_not
from xcbench.system import proc

TAG = f"{os.getpid() % 10000}"
CORES = 0.5
FILES = 8
SIZE = 2 << 20


def _why_not() -> str:
    return why_not("xrootd", "cmsd", "xrdcp", "ceph-mon") or ""


pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "-")]


@pytest.fixture(scope="module")
def inventory(workdir):
    """2 gateway hosts (g<tag>a: also the redirector) up as network namespaces; down after,
    and nothing of them left."""
    from xcbench.hosts.emulate import free_network
    net = list(free_network().hosts())
    a, b = f"ga{TAG}", f"gb{TAG}"
    data = {"bridge": {"name": f"xcbg{TAG}", "address": f"{net[0]}/24"},
            "hosts": {a: {"roles": ["gateway", "redirector"], "transport": "netns",
                          "address": str(net[20]), "cores": CORES},
                      b: {"roles": ["gateway"], "transport": "netns", "address": str(net[21]),
                          "cores": CORES}}}
    with emulated_hosts(workdir, data) as (_, inv):
        yield inv
    from xcbench.system.cgroups import detect
    ns = proc.run(["ip", "netns", "list"]).stdout
    assert not [h for h in inv.hosts if h.netns in ns.split()], ns
    assert not [h for h in inv.hosts if (detect().base / h.cgroup).exists()]


@pytest.fixture(scope="module")
def bridge_site(inventory, workdir):
    return workdir, inventory.bridge.ip


def _adler(data: bytes) -> str:
    return f"{zlib.adler32(data) & 0xffffffff:08x}"


def _push(gw, src: Path, prefix: str) -> tuple[dict[str, str], float]:
    """FILES files of SIZE bytes in parallel through the redirector; {name: adler32}, seconds."""
    import random
    want = {}
    for i in range(FILES):
        data = random.Random(i).randbytes(SIZE)
        (src / f"f{i}.bin").write_bytes(data)
        want[f"{prefix}f{i}.bin"] = _adler(data)
    t0 = time.monotonic()
    ps = [proc.spawn(["xrdcp", "--nopbar", "-f", src / f"f{i}.bin", gw.url(f"{prefix}f{i}.bin")],
                     env=gw.client_env) for i in range(FILES)]
    assert [p.popen.wait(timeout=180) for p in ps] == [0] * FILES
    return want, time.monotonic() - t0


def _checks(gw, want: dict[str, str]) -> None:
    for name, cks in want.items():
        out = proc.run(["xrdfs", gw.root_url, "query", "checksum", name], env=gw.client_env,
                       timeout=60).stdout
        assert out.replace("\0", " ").split()[-1] == cks, (name, out)


def _in_host(pid: int, host) -> None:
    """``pid`` runs in ``host``'s network namespace and cgroup, whose quota is its limit."""
    from xcbench.system.limits import cpu_limit, proc_cgroups
    assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{host.netns}").st_ino
    assert os.stat(f"/proc/{pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
    assert proc_cgroups(pid)["cpu"].strip("/").endswith(host.cgroup)
    lim = cpu_limit(pid)
    assert lim.cores == pytest.approx(CORES) and host.cgroup in lim.source, lim


def _run_cell(cell: Cell, inventory, workdir: Path, cluster, prefix_of) -> dict:
    from xcbench.run.session import CellSession
    from xcbench.system.proc import ProcessSet
    from xcbench.telemetry.gateway import report_listener
    procs = ProcessSet()
    wd = workdir / cell.id
    wd.mkdir()
    wd.chmod(0o755)
    src = workdir / f"src-{cell.id}"
    src.mkdir()
    # as the runner makes it: on the bridge, taking datagrams only from the inventory's gateways
    listener = report_listener(inventory).start()
    try:
        assert listener.host == inventory.bridge.ip
        with CellSession(cell, cluster=cluster, workdir=wd, procs=procs, hosts=inventory,
                         report_addr=listener.addr) as s:
            gw = s.gateway
            assert gw.addr == inventory.gateways[0].address  # the redirector host
            origins = gw.origins
            assert [o.host for o in origins] == [h.name for h in inventory.gateways]
            assert [o.addr for o in origins] == [h.address for h in inventory.gateways]
            for o, h in zip(origins, inventory.gateways, strict=True):
                _in_host(o.pid, h)
            pids = list(gw.pids)
            # the roles device: the gateway role's limit is the two hosts' quotas together
            from xcbench.telemetry.role_processes import make_sampler
            rows = make_sampler(gateway=gw, target=s.target, cluster=None).sample(
                time.time(), time.monotonic())
            (lim,) = [r for r in rows if r["metric"] == "role_cpu_limit_cores"
                      and r["labels"]["role"] == "gateway"]
            assert lim["value"] == pytest.approx(2 * CORES), lim
            want, seconds = _push(gw, src, prefix_of(s.target))
            _checks(gw, want)
            load = s.origin_check()
            assert len(load) == 2 and all(r["files"] > 0 for r in load), load
            assert not [f for f in s.findings if "origin got no files" in f["what"]]
            # xrd.report reached the listener on the bridge from both origins' hosts
            assert listener.wait(4, timeout=10)
            senders = {p.sender[0] for p in listener.drain()}
            assert {h.address for h in inventory.gateways} <= senders, senders
            # the gateway device samples each origin's own process (a pid of this machine)
            from xcbench.telemetry.gateway import GatewaySampler
            rows = GatewaySampler(listener, gw).sample(time.time(), time.monotonic())
            rss = {r["labels"]["name"]: r["value"] for r in rows if r["metric"] == "proc.rss_bytes"}
            for o in origins:
                assert rss[f"xrootd:{o.name}@{o.host}"] > 1 << 20, rss
        assert not [p for p in pids if proc.pid_alive(p)]
        with open("/proc/mounts") as fh:  # the tmpfs / ceph-fuse mount of the cell is gone
            assert not [ln for ln in fh if str(wd) in ln]
        procs.stop_all()
        mib = FILES * SIZE / seconds / 2**20
        print(f"\n{cell.id}: {FILES} x {SIZE >> 20} MiB through 2 netns origins in {seconds:.2f} s "
              f"({mib:.0f} MiB/s); per origin: "
              + ", ".join(f"{r['origin']}@{r['host']} {r['files']} files {r['bytes']} B "
                          f"({r['source']})" for r in load))
        return {"load": load, "seconds": seconds}
    finally:
        listener.stop()
        procs.stop_all()


def test_tmpfs_origins_on_two_netns_hosts(inventory, workdir):
    cell = Cell(id=f"gwh-tmpfs-{TAG}", label="gateway hosts tmpfs", backend="tmpfs",
                tmpfs_size=64 << 20, origins=2)
    out = _run_cell(cell, inventory, workdir, None, lambda t: "/")
    assert sum(r["files"] for r in out["load"]) == FILES  # files counted in each origin's dir
    assert sum(r["bytes"] for r in out["load"]) == FILES * SIZE


# slow (make slow): a second mini cluster bound to the bridge; test_run_hosts.py runs a rados
# cell through a bridge-bound cluster in the default suite, and tmpfs origins stay here
@pytest.mark.slow
def test_rados_origins_on_two_netns_hosts(inventory, workdir, bridge_cluster):
    from xcbench.cell import Layout, PoolSpec
    cell = Cell(id=f"gwh-rados-{TAG}", label="gateway hosts rados", backend="rados",
                layout=Layout(4 << 20, 1, 4 << 20), pool=PoolSpec("replicated", size=1),
                origins=2)
    out = _run_cell(cell, inventory, workdir, bridge_cluster,
                    lambda t: t.info["name_prefix"])
    # a shared store: per-origin evidence from each origin's own counters (opens, bytes in)
    assert all(r["bytes"] > SIZE for r in out["load"]), out["load"]


def test_loopback_cluster_refused_for_netns_rados(inventory, workdir):
    """A rados gateway on a netns host cannot reach a loopback-only cluster: one line, before
    anything starts."""
    from xcbench.backends.base import Target
    from xcbench.errors import XcbError
    from xcbench.gateway import start_gateway

    class Loopback:
        info = {"mon_host": "[v2:127.0.0.1:3300,v1:127.0.0.1:6789]"}

    t = Target(cell_id="lo", backend="rados", pool="p",
               oss={"ceph_user": "u", "pool": "p", "nb_stripes": 1, "stripe_unit": 1 << 22,
                    "object_size": 1 << 22})
    with pytest.raises(XcbError, match=r"host ga\d+: the Ceph cluster listens on loopback"):
        start_gateway(t, workdir=workdir / "lo", cluster=Loopback(), hosts=inventory)
    assert not (workdir / "lo").exists()


# slow (make slow): a second mini cluster bound to the bridge; test_run_hosts.py runs a rados
# cell through a bridge-bound cluster in the default suite, and tmpfs origins stay here
@pytest.mark.slow
def test_cephfs_origins_on_two_netns_hosts(inventory, workdir, bridge_cluster):
    """ceph-fuse mounts in the root namespace; the origins in the hosts' namespaces see it (the
    netns transport enters the network namespace only)."""
    from xcbench.cell import Layout, PoolSpec
    cell = Cell(id=f"gwh-cephfs-{TAG}", label="gateway hosts cephfs", backend="cephfs",
                layout=Layout(4 << 20, 1, 4 << 20), pool=PoolSpec("replicated", size=1),
                origins=2)
    out = _run_cell(cell, inventory, workdir, bridge_cluster, lambda t: "/")
    assert sum(r["files"] for r in out["load"]) == FILES
    assert sum(r["bytes"] for r in out["load"]) == FILES * SIZE
