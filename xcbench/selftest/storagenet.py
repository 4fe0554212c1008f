"""The storage-network known-answer scenario: the mini cluster's OSDs on an
emulated storage host whose link is shaped well below what the gateway and the disks do; the
verdict must be ``storage-network`` naming that host, from Prometheus's figures, at every level.
Its control: the same host unshaped must never give ``storage-network``.

What it makes (unique names, bridge and free /24 per run, so it coexists with others' hosts):

- an emulated host ``st<tag>`` (role storage: a network namespace on a bridge, xcbench.hosts)
  and a mini cluster of its own whose mon/mgr/MDS listen on the bridge address while its OSDs
  run inside the host on its address (``cluster up --bind --osd-host``): every byte the gateway
  (on this machine, outside the host) writes crosses the host's link. A node_exporter runs
  inside the host and the cluster's Prometheus scrapes it over the bridge;
- first the **unshaped** run: a rados EC 2+1 cell at every level. Its slowest level's steady
  rate U is what the chain does here at least; the check: no level says storage-network;
- then the host's link is shaped (tc tbf, both ways) to ``FRACTION`` x U, a fraction stated
  here and derived from U measured now (as the network scenario does, for the same reason: a
  fast link leaves per-file pauses idle), and the **shaped** run: every level must say
  storage-network, naming the host and its NIC, with the link's use from Prometheus.

The campaign writes without checksums: an XrdCeph gateway's adler32 reads every file back
through the same link, which splits the link's use between its two directions (measured here:
49 % each way at 2 transfers), so no direction binds; the scenario is about the write direction.
The emulated host's NIC is a veth (it reports 10 Gb/s): its limit is the rate its link is shaped
to, from the hosts' record (the prometheus device's node.nic_limit_bytes_per_s).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from xcbench.analysis.verdicts.attribution import VERDICTS
from xcbench.ceph.cluster import Cluster
from xcbench.ceph.mini import MiniCluster
from xcbench.errors import XcbError
from xcbench.hosts.emulate import free_network
from xcbench.hosts.emulate import why_not as hosts_why_not
from xcbench.matrix import load_matrix
from xcbench.run.runner import RunOptions
from xcbench.selftest import registry
from xcbench.selftest.capping import run_concluded
from xcbench.selftest.judging import roles_short
from xcbench.selftest.network import emulated, hosts_doc, level_verdicts, record
from xcbench.selftest.scenarios import FULL, QUICK, Check

NAME = "storage-network"
WHAT = "the OSDs' host's link shaped (tc tbf) to a fraction of the unshaped chain's rate"
FRACTION = 0.1  # as xcbench.selftest.network (measured here: 93-95 % of an 80 Mb/s link)
TELEMETRY = "host:0.5,roles:0.5,gateway,prometheus"
Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def why_not() -> str | None:
    return hosts_why_not("xrootd", "prometheus", "prometheus-node-exporter", "ceph-osd")


def inventory_doc(tag: str, rate: str | None, net: Any) -> dict[str, Any]:
    """The storage host, emulated; ``rate``: its link's tc rate (None: unshaped)."""
    return hosts_doc(f"xcbv{tag}", net, {f"st{tag}": (["storage"], 29, rate)})


def matrix_doc(name: str, quick: bool) -> dict[str, Any]:
    s = QUICK if quick else FULL
    return {"name": name, "description": "xcbench selftest: storage-network",
            "defaults": {"origins": [1], "modes": ["push"], "concurrency": list(s.levels),
                         "file_size": s.file_size, "files": s.files, "repeats": 1,
                         "gateway": {"async": False, "buffers_maxbsz": "16M"},
                         "campaign": {**s.campaign(), "checksum": "none"}},
            "backends": {"rados": {"layouts": [{"stripe_unit": "4M", "stripe_count": 1,
                                                "object_size": "4M"}], "pools": ["ec2+1"]}}}


@contextlib.contextmanager
def storage_host(doc: dict[str, Any], workdir: Path, name: str, log: Log) -> Iterator[Any]:
    """The emulated storage host up, a mini cluster with its OSDs inside it; both removed after
    (the cluster first: its OSDs run in the host's namespace)."""
    with emulated(doc, workdir, name) as inv:
        h = inv.hosts[0]
        assert inv.bridge is not None
        mc = MiniCluster(workdir / f"{name}-cluster")
        try:
            cluster, _ = mc.up(addr=inv.bridge.ip, osd_host=(h.netns, h.address), log=log)
            yield cluster, h
        finally:
            with contextlib.suppress(Exception):
                cluster.close()
            mc.down()


def _run(doc: dict[str, Any], name: str, cluster: Cluster | None, out: Path, workdir: Path) -> Any:
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    opts = RunOptions(store=out, name=name, baseline=False, probes=False, report=False,
                      progress=False, telemetry=TELEMETRY)
    return run_concluded(load_matrix(path, cluster), cluster, opts)


def nic_note(ev: dict[str, Any]) -> str:
    nic = ev.get("storage_nic")
    if not nic:
        return "no storage host NIC figures (no prometheus rows in the steady window)"
    use = nic.get("use")
    return (f"{nic['host']} {nic['device']}: rx {nic['rx'] * 8 / 1e6:.1f} Mb/s, tx "
            f"{nic['tx'] * 8 / 1e6:.1f} Mb/s of "
            + (f"{nic['speed'] * 8 / 1e6:.0f} Mb/s ({nic.get('speed_source')})" if nic.get("speed") else "?")
            + (f", {use * 100:.0f} %" if isinstance(use, (int, float)) else ""))


def run_storage_network(cluster: Cluster | None = None, *, quick: bool = False, out: Path = Path("results"),
                        workdir: Path | None = None, stamp: str | None = None,
                        fraction: float = FRACTION, log: Log = _stderr) -> dict[str, Any]:
    """Both runs and their checks: {"checks", "runs", "seconds", "figures"} (``cluster``: not
    used, the scenario makes its own with the OSDs in the storage host)."""
    why = why_not()
    if why:
        raise XcbError(f"selftest: {NAME}: {why}")
    stamp = stamp or time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    workdir = (workdir or out / f"selftest-{stamp}").absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid() % 100000}"
    result: dict[str, Any] = {"checks": [], "runs": {}, "seconds": {}, "figures": {}}
    not_storage = tuple(v for v in VERDICTS if v != NAME)
    # 1. unshaped: never storage-network; its slowest level is what the link must be below
    name = f"selftest-{stamp}-storage-unshaped"
    t0 = time.monotonic()
    with storage_host(inventory_doc(tag, None, free_network()), workdir, name, lambda s: None) as (c, h):
        log(f"selftest: {NAME}: unshaped run, OSDs in host {h.name} ({h.address})")
        run = _run(matrix_doc(name, quick), name, c, out, workdir)
    record(result, "storage-unshaped", run, t0)
    got = level_verdicts(run)
    cell_id = next(iter(run.cells), "-")
    rates = {}
    for lv, v in sorted(got.items()):
        ev = v["evidence"]
        if isinstance(ev.get("rate"), (int, float)) and ev["rate"] > 0:
            rates[lv] = float(ev["rate"])
        result["checks"].append(Check(NAME, "rados-ec", cell_id, lv, not_storage, v["verdict"],
                                      v["reason"], v["verdict"] != NAME,
                                      note="unshaped: " + nic_note(ev), roles=roles_short(ev),
                                      evidence=ev))
    if not rates:
        result["checks"].append(Check(NAME, "rados-ec", cell_id, 0, not_storage, "missing",
                                      "the unshaped run measured no steady rate", False))
        return result
    unshaped = min(rates.values())
    mbit = max(1, int(unshaped * 8 * fraction / 1e6))
    rate = f"{mbit}mbit"
    result["figures"].update(unshaped_bytes_per_s=unshaped, fraction=fraction, shaped_rate=rate)
    # 2. shaped: every level storage-network, naming the host
    name = f"selftest-{stamp}-storage-network"
    t0 = time.monotonic()
    with storage_host(inventory_doc(tag, rate, free_network()), workdir, name, lambda s: None) as (c, h):
        log(f"selftest: {NAME}: the chain did >= {unshaped * 8 / 1e6:.0f} Mb/s unshaped; host "
            f"{h.name}'s link shaped to {rate} ({fraction} x)")
        run = _run(matrix_doc(name, quick), name, c, out, workdir)
        host = h.name
    record(result, "storage-network", run, t0)
    got = level_verdicts(run)
    cell_id = next(iter(run.cells), "-")
    for lv in (QUICK if quick else FULL).levels:
        found = got.get(lv)
        if found is None:
            result["checks"].append(Check(NAME, "rados-ec", cell_id, lv, (NAME,), "missing",
                                          "no verdict at this level", False))
            continue
        v = found
        ev = v["evidence"]
        nic = ev.get("storage_nic") or {}
        # the cause too: shaped to 0.1 x, the chain must run well below its unshaped rate
        slower = isinstance(ev.get("rate"), (int, float)) and ev["rate"] < 0.5 * unshaped
        ok = v["verdict"] == NAME and nic.get("host") == host and host in v["reason"] and slower
        result["checks"].append(Check(NAME, "rados-ec", cell_id, lv, (NAME,), v["verdict"],
                                      v["reason"], ok, note=f"shaped to {rate}: " + nic_note(ev),
                                      roles=roles_short(ev), evidence=ev))
    return result


def register_scenario() -> None:
    """Register as a scenario with runs of its own (as xcbench.selftest.network)."""
    registry.register(registry.Scenario(NAME, WHAT, (NAME,), (), own_run=run_storage_network,
                                        needs=why_not()), replace=True)


register_scenario()
