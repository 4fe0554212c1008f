"""Writes tests/data/runs/tables-v2: a run as the release before tables' version 3 stored it (its
names with a bare ``bps``), read by tests/unit/store/test_upgrade_units.py.

Run it with that release's code, not this tree's (commit 2db8bb6, tables' version 2):

    git archive 2db8bb6 | tar -x -C REL
    ln -s ../analysis REL/xcbench/analysis; ln -s ../backends REL/xcbench/backends
    PYTHONPATH=REL .venv/bin/python tests/data/runs/make_tables_v2.py tests/data/runs

The run goes through that release's own code: the synthetic run generator and RunDir (records,
finalize), the prometheus device's rows (promqueries.rows, prometheus.live_rows) from answers
shaped as Prometheus gives them, the manifest's hosts (run.hostrun.describe), the verdicts
(analysis.conclude) and confirmations.json (selftest.confirm.write). Three cells, each reading a
renamed name: rep1 with the storage device's writes counted (campaigns' and probes'
device_write_*), ec2+1 whose OSD host's NIC runs at its speed (node.nic_*), tmpfs whose client
link is shaped (the manifest's hosts' link rate).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from tests.support.promserver import OSD_META, UNAME
from tests.support.synthrun import GIB, MIB, SynthCell, make_run
from xcbench.analysis.conclude import conclude
from xcbench.hosts.inventory import Link
from xcbench.hosts.linkspeed import LinkSpeed
from xcbench.run.hostrun import describe
from xcbench.selftest.confirm import arms, write
from xcbench.store import rundir
from xcbench.store.rundir import RunDir
from xcbench.store.upgrade import TABLES_VERSION
from xcbench.telemetry import promqueries as pq
from xcbench.telemetry.base import Sampler
from xcbench.telemetry.prometheus import live_rows

NAME = "tables-v2"
M4 = 4 << 20
CELLS = [
    SynthCell("cephfs", (M4, 1, M4), "rep1", fio_bw=800 * MIB, fio_iops=2200, concurrency=(2, 4),
              files=12, repeats=1, expect="storage-bandwidth"),
    SynthCell("cephfs", (M4, 1, M4), "ec2+1", fio_bw=6 * GIB, fio_iops=20000, concurrency=(2, 4),
              files=12, repeats=1),
    SynthCell("tmpfs", concurrency=(2, 4), files=12, repeats=1, per_stream=100 * MIB),
]
NIC_SPEED = 1.25e9  # the OSD host's NIC: 10 Gb/s
LINK_BPS = 1.6e9  # the client's link, shaped (bits/s: the inventory's unit)


def _cell_span(run: RunDir, cid: str) -> tuple[float, float]:
    tl = pd.read_json(run.path / "records" / "timeline.jsonl", lines=True)
    w = tl[tl["cell_id"] == cid]["wall"]
    return float(w.min()) - 5, float(w.max()) + 5


def _walls(span: tuple[float, float]) -> list[float]:
    return [float(t) for t in range(int(span[0]), int(span[1]) + 1)]


def _storage_host_rows(span: tuple[float, float]) -> list[dict]:
    """The OSDs on host stor1 (10.9.9.9) whose eth0 receives 96 % of its speed: every query of
    the prometheus device answered as Prometheus would, turned into rows by promqueries.rows;
    the host's link as an emulated host's (shaped) and as the inventory states it, each 10 Gb/s
    (promqueries.link_rows)."""
    uname = [{**u, "metric": {**u["metric"], "instance": "10.9.9.9:9100", "nodename": "stor1"}}
             for u in UNAME]
    meta = [{**o, "hostname": "stor1", "front_addr": "[v2:10.9.9.9:6800/1]", "back_addr": "",
             "front_iface": "eth0"} for o in OSD_META]
    inventory = SimpleNamespace(hosts=[SimpleNamespace(name="stor1", address="10.9.9.9", roles=("osd",),
                                                       link_speed=LinkSpeed(host_bps=8 * NIC_SPEED))])
    hosts = pq.HostMap(uname, meta, inventory=inventory, emulated={
        "10.9.9.9": {"name": "stor1", "rate_bps": 8 * NIC_SPEED, "device": "eth0"}})
    inst = {"instance": "10.9.9.9:9100", "job": "node"}
    nic, disk = {**inst, "device": "eth0"}, {**inst, "device": "vda"}
    values = {"node.cpu_busy_cores": (inst, 1.2), "node.cpu_cores": (inst, 16.0),
              "node.nic_rx": (nic, 0.96 * NIC_SPEED), "node.nic_tx": (nic, 0.2 * NIC_SPEED),
              "node.nic_speed": (nic, NIC_SPEED), "node.disk_busy": (disk, 0.3),
              "node.disk_read": (disk, 1e6), "node.disk_write": (disk, 300e6)}
    out = []
    for name in pq.QUERIES:
        stem = name.rsplit("_", 1)[0] if name.startswith(("node.nic", "node.disk_read", "node.disk_write")) \
            else name
        labels, v = values.get(stem, ({"ceph_daemon": "osd.0", "instance": "10.9.9.9:9283",
                                      "pool_id": "1", "name": "xcb-ec2-1"}, 1000.0))
        answer = [{"metric": labels, "values": [[w, str(v)] for w in _walls(span)]}]
        out += pq.rows(name, answer, hosts, 1000.0, range_s=4.0)
    return out + pq.link_rows(hosts, _walls(span), 1000.0)


def _live_rows(span: tuple[float, float]) -> list[dict]:
    s = SimpleNamespace(name="prometheus", row=lambda *a: Sampler.row(s, *a))
    return [r for w in _walls(span)[::5] for r in live_rows(s, w, w - 1000.0, {
        "host": "stor1", "nic": "eth0", "nic_use": None, "nic_bps": 0.96 * NIC_SPEED,
        "disk": "vda", "disk_busy": 0.3, "cpu_use": 0.1})]


def _link_rows(span: tuple[float, float]) -> list[dict]:
    """The client host's link telemetry (the links device): 96 % of its shaped rate sent."""
    lab = {"host": "cl1", "roles": "client"}
    return [{"wall": w, "mono": w - 1000.0, "sampler": "links", "metric": m, "value": v, "labels": lab}
            for w in _walls(span) for m, v in (("link.tx_bytes.rate", 0.96 * LINK_BPS / 8),
                                               ("link.rx_bytes.rate", 0.01 * LINK_BPS / 8))]


def _with_device_writes(run: RunDir, cid: str) -> None:
    """The storage device's writes the runner counts (campaigns) and the probes' (probes)."""
    for table, of in (("campaigns", lambda r: r["rate"]), ("probes", lambda r: r["bw"])):
        path = run.path / "records" / f"{table}.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for r in rows:
            if r["cell_id"] == cid and (table == "campaigns" or r["rw"] in ("write", "randwrite")):
                r.update(device_write_iops=of(r) / M4 * 1.1, device_write_Bps=of(r) * 1.02)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def main(out: Path) -> None:
    assert TABLES_VERSION == 2, "run this with the release of tables' version 2 (see the docstring)"
    store = out / "_making"
    shutil.rmtree(store, ignore_errors=True)
    finalize = rundir.RunDir.finalize
    rundir.RunDir.finalize = lambda self, *a, **k: None  # the rows below go in before it
    try:
        path, _ = make_run(store, CELLS, name=NAME)
    finally:
        rundir.RunDir.finalize = finalize
    run = RunDir.open(path)
    rep, ec, tmp = (c.cell().id for c in CELLS)
    _with_device_writes(run, rep)
    for cid, rows in ((ec, _storage_host_rows(_cell_span(run, ec)) + _live_rows(_cell_span(run, ec))),
                      (tmp, _link_rows(_cell_span(run, tmp)))):
        run.append("samples", [{**r, "cell_id": cid} for r in rows])
    host = SimpleNamespace(name="cl1", roles=("client",), transport="netns", address="10.9.8.2",
                           ssh=None, cores=None, link=Link("1600mbit", LINK_BPS, None))
    gw = SimpleNamespace(name="gw1", roles=("gateway",), transport="netns", address="10.9.8.3",
                         ssh=None, cores=None, link=None)
    run.state.extra["hosts"] = describe(SimpleNamespace(hosts=[host, gw], source="hosts.yaml",
                                                        bridge=None))
    run.finalize("complete")
    conclude(run)
    runs = [{"pair": 0, "arm": arm, "Bps": b, "rel_se": 0.02, "run": f"confirm-{arm}", "role": None}
            for arm, b in (("control", 0.5 * GIB), ("changed", 0.9 * GIB))]
    write(run.path, {"run": run.run_id, "ok": True, "confirmations": [
        {"cell_id": rep, "concurrency": 4, "direction": "write", "verdict": "storage-bandwidth",
         "experiment": "relieve", "what": "the storage taken out (a tmpfs target)",
         "outcome": "confirmed", "why": "", **arms(runs), "runs": runs}]})
    dest = out / NAME
    shutil.rmtree(dest, ignore_errors=True)
    shutil.move(str(run.path), dest)
    shutil.rmtree(store)
    shutil.rmtree(dest / "records")  # the Parquet tables hold the same rows


if __name__ == "__main__":
    main(Path(sys.argv[1]))
