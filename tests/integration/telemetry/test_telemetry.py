"""Telemetry against the real parts: xrootd gateways (tmpfs and XrdCeph), a Ceph cluster, /proc.

Bytes written through a gateway show up in its xrd.report link.in and in the pool's client
write counter (``df detail`` wr_bytes); raw/stored of an EC 2+1 pool is ~1.5 and of a size-1
replicated pool ~1.0; samplers that fail leave gaps while the others keep sampling.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.waits import until
from xcbench.backends import get_backend
from xcbench.backends.rados.backend import selector
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.ceph import pools as cephpools
from xcbench.gateway import start_gateway
from xcbench.system import proc
from xcbench.system.ports import free_port
from xcbench.telemetry import (
    CephSampler,
    GatewaySampler,
    HostSampler,
    ReportListener,
    TelemetryRunner,
)

pytestmark = pytest.mark.integration
M = 1 << 20
EC = PoolSpec("erasure", k=2, m=1)
REP = PoolSpec("replicated", size=1)
SETTLE = 45.0  # s: PG stats reach `df` through the OSDs' reports and the mgr digest (~2-10 s)


class Rows:
    """A sink that a test can read while the runner writes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tables: dict[str, list[dict]] = {}

    def __call__(self, table: str, rows: list[dict]) -> None:
        with self.lock:
            self.tables.setdefault(table, []).extend(rows)

    def get(self, table: str, sampler: str | None = None, metric: str | None = None,
            **labels) -> list[dict]:
        with self.lock:
            rows = list(self.tables.get(table, []))
        return [r for r in rows if (sampler is None or r["sampler"] == sampler)
                and (metric is None or r["metric"] == metric)
                and all(r["labels"].get(k) == v for k, v in labels.items())]

    def last(self, metric: str, **labels) -> float | None:
        rows = self.get("samples", metric=metric, **labels)
        return rows[-1]["value"] if rows else None


@pytest.fixture
def workdir():
    d = Path(tempfile.mkdtemp(prefix="xcb-test-telemetry-"))
    d.chmod(0o755)  # the xrootd user must reach the gateway dirs
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def own_pools(ceph_cluster):
    """EC 2+1 and size-1 replicated pools only this module writes to, one set per test.

    The shared pools (xcb-rep1, xcb-ec2-1) carry other users' traffic on a dev cluster, and
    one test's deletes reach `df` seconds later: either would blur the byte deltas compared
    here. Deleted at the end (with the EC rules and profile); the embedded cluster's gateway
    user is granted them while they exist.
    """
    c = ceph_cluster
    pools = {"erasure": "xcb-telemetry-ec2-1", "replicated": "xcb-telemetry-rep1",
             "gateway": "xcb-telemetry-gw-ec2-1"}
    profile = "xcb-telemetry-ec2-1"
    try:
        cephpools.create_erasure(c, pools["erasure"], profile, 2, 1, 8, "osd")
        cephpools.create_erasure(c, pools["gateway"], profile, 2, 1, 8, "osd")
        cephpools.create_replicated(c, pools["replicated"], 1, 8)
        if c.embedded:
            cephpools.grant_gateway(c)
        yield pools
    finally:
        for pool in pools.values():
            if pool in c.pool_names():
                c.mon_command("osd pool delete", pool=pool, pool2=pool, yes_i_really_really_mean_it=True)
        rules = c.mon_command("osd crush rule ls")
        for pool in (pools["erasure"], pools["gateway"]):
            if pool in rules:
                c.mon_command("osd crush rule rm", name=pool)
        c.mon_command("osd erasure-code-profile rm", name=profile)
        if c.embedded:
            cephpools.grant_gateway(c)


@pytest.fixture
def procs():
    ps = proc.ProcessSet()
    yield ps
    ps.stop_all()


def tmpfs_gateway(workdir: Path, procs, listener: ReportListener, ident: str):
    cell = Cell(id=f"telemetry-{ident}", label="telemetry test", backend="tmpfs", tmpfs_size=256 * M)
    backend = get_backend("tmpfs")(None, workdir, procs)
    target = backend.prepare(cell)
    try:
        gw = start_gateway(target, workdir=workdir, report_addr=listener.addr, procs=procs,
                           name=f"tel-{ident}")
    except BaseException:
        backend.cleanup(target)
        raise
    return backend, target, gw


def push(gw, name: str, src: Path) -> None:
    proc.run(["xrdcp", "-s", "-f", src, gw.url(name)], env=gw.client_env, timeout=120)


def link_in(rows: Rows) -> float:
    return rows.last("xrd.link.in") or 0


def test_bytes_into_a_tmpfs_gateway_show_in_its_report_and_on_loopback(workdir, procs):
    n = 96 * M
    src = workdir / "src"
    src.write_bytes(os.urandom(n))
    rows = Rows()
    with ReportListener() as listener:
        backend, target, gw = tmpfs_gateway(workdir, procs, listener, "tmpfs")
        try:
            runner = TelemetryRunner([HostSampler(interfaces=["lo"]), GatewaySampler(listener, gw)],
                                     interval=0.5, sink=rows, cell_id="cell-tmpfs")
            with runner:
                assert until(lambda: rows.get("samples", metric="xrd.link.in"), 10)
                before_in = link_in(rows)
                before_lo = rows.last("net.rx_bytes", iface="lo")
                push(gw, "f1", src)
                assert until(lambda: link_in(rows) - before_in >= n, 10)
                time.sleep(1.2)  # one more report: nothing else arrives
                after_in, after_lo = link_in(rows), rows.last("net.rx_bytes", iface="lo")
        finally:
            gw.stop()
            backend.cleanup(target)
    assert n <= after_in - before_in <= 1.05 * n
    assert after_lo - before_lo >= n  # loopback carried at least the file
    assert not rows.get("gaps"), rows.get("gaps")
    samples = rows.get("samples")
    assert all(r["cell_id"] == "cell-tmpfs" for r in samples)
    pid = gw.servers[0].pid
    assert rows.get("samples", metric="proc.rss_bytes", pid=pid)[-1]["value"] > 1 * M
    assert rows.get("samples", metric="proc.cpu_seconds.rate", pid=pid)
    rates = [r["value"] for r in rows.get("samples", metric="xrd.link.in.rate")]
    assert max(rates) > 0 and min(rates) >= 0
    assert rows.get("samples", metric="xrd.sched.threads")


def test_bytes_through_an_xrdceph_gateway_show_in_report_and_pool_counters(ceph_cluster, own_pools,
                                                                           workdir, procs):
    n = 64 * M
    src = workdir / "src"
    src.write_bytes(os.urandom(n))
    cell = Cell(id="telemetry-xrdceph", label="telemetry test", backend="rados",
                layout=Layout(4 * M, 1, 4 * M), pool=EC)
    backend = get_backend("rados")(ceph_cluster, workdir, procs)
    target = backend.prepare(cell)
    if ceph_cluster.embedded:  # a pool nobody else writes to (the gateway user was granted it)
        pool = own_pools["gateway"]
        # the name prefix begins with XrdCeph's selector of the gateway's pool (backends.rados)
        prefix = selector(ceph_cluster.gateway_id, pool, cell.layout) + target.info["object_prefix"]
        target = replace(target, pool=pool, oss={**target.oss, "pool": pool},
                         info={**target.info, "name_prefix": prefix})
    pool = target.pool
    rows = Rows()
    try:
        with ReportListener() as listener:
            gw = start_gateway(target, workdir=workdir, cluster=ceph_cluster, report_addr=listener.addr,
                               procs=procs, name="tel-xrdceph")
            samplers = [HostSampler(), GatewaySampler(listener, gw), CephSampler(ceph_cluster, [pool])]
            try:
                with TelemetryRunner(samplers, interval=1.0, sink=rows, cell_id="cell-rados"):
                    assert until(lambda: rows.last("xrd.link.in") is not None
                                 and rows.last("pool.wr_bytes", pool=pool) is not None, SETTLE)
                    before_in = link_in(rows)
                    before_wr = rows.last("pool.wr_bytes", pool=pool)
                    push(gw, target.info["name_prefix"] + "f1", src)
                    assert until(lambda: rows.last("pool.wr_bytes", pool=pool) - before_wr >= n, SETTLE)
                    time.sleep(1.2)
                    after_in, after_wr = link_in(rows), rows.last("pool.wr_bytes", pool=pool)
                    # mgr's own rate (`osd pool stats`) is sampled too, but it is a smoothed delta of
                    # PG stat reports that drops a fresh pool's first delta: a 1 s burst into a new
                    # pool never shows there (measured). Totals come from wr_bytes, not from it.
                    assert rows.get("samples", metric="pool.client_write_bytes_per_s", pool=pool)
            finally:
                gw.stop()
    finally:
        backend.cleanup(target)
    print(f"link.in delta {after_in - before_in}, pool wr_bytes delta {after_wr - before_wr}, n {n}")
    assert n <= after_in - before_in <= 1.05 * n
    assert 0.95 * n <= after_wr - before_wr <= 1.05 * n
    assert not rows.get("gaps"), rows.get("gaps")


def write_objects(ioctx, prefix: str, count: int, size: int) -> list[str]:
    data = os.urandom(size)
    names = [f"{prefix}{i}" for i in range(count)]
    for name in names:
        ioctx.write_full(name, data)
    return names


def test_raw_versus_stored_bytes_of_ec_and_replicated_pools(ceph_cluster, own_pools):
    pools = {own_pools["erasure"]: 1.5, own_pools["replicated"]: 1.0}
    sampler = CephSampler(ceph_cluster, list(pools), osd_perf=False)
    n = 48 * M

    def snap() -> dict:
        rows = sampler.sample(time.time(), time.monotonic())
        return {(r["metric"], r["labels"].get("pool")): r["value"] for r in rows}

    prefix = f"telemetry-{uuid.uuid4().hex[:8]}-"
    written: dict[str, list[str]] = {}
    try:
        before: dict = {}
        # a new pool shows in `df` once the mgr has the new osdmap and its PG stats
        assert until(lambda: before.update(snap()) or all(("pool.stored", p) in before for p in pools),
                     SETTLE)
        for pool in pools:
            written[pool] = write_objects(ceph_cluster.ioctx(pool), prefix, 12, 4 * M)

        def delta(after, metric, pool):
            return after[(metric, pool)] - before[(metric, pool)]

        after = {}

        def settled() -> bool:
            after.update(snap())
            return all(delta(after, m, p) >= n for p in pools for m in ("pool.stored", "pool.wr_bytes"))

        assert until(settled, SETTLE), {(m, p): delta(after, m, p) for p in pools
                                        for m in ("pool.stored", "pool.wr_bytes", "pool.bytes_used")}
    finally:
        for pool, names in written.items():
            io = ceph_cluster.ioctx(pool)
            for name in names:
                io.remove_object(name)
        sampler.stop()
    for pool, ratio in pools.items():
        stored, used = delta(after, "pool.stored", pool), delta(after, "pool.bytes_used", pool)
        print(f"{pool}: stored +{stored}, raw +{used}, raw/stored {used / stored:.3f}, "
              f"pool total raw/stored {after[('pool.raw_per_stored', pool)]:.3f}")
        assert n <= delta(after, "pool.wr_bytes", pool) <= 1.05 * n
        assert abs(used / stored - ratio) <= 0.05 * ratio
        assert abs(after[("pool.raw_per_stored", pool)] - ratio) <= 0.1 * ratio


def test_failing_samplers_leave_gaps_and_the_others_go_on(workdir, procs):
    # a cluster nobody answers for: a real librados client against a port with no monitor
    conf = workdir / "dead.conf"
    conf.write_text(f"[global]\nmon host = 127.0.0.1:{free_port()}\nauth client required = none\n")
    dead = SimpleNamespace(conf=conf, ceph_id="admin", keyring=None)
    rows = Rows()
    with ReportListener() as listener:
        backend, target, gw = tmpfs_gateway(workdir, procs, listener, "gone")
        try:
            gws = GatewaySampler(listener, gw, stale_after=2.5)
            samplers = [CephSampler(dead, ["xcb-rep1"], timeout=1), gws, HostSampler()]
            with TelemetryRunner(samplers, interval=0.5, sink=rows, cell_id="cell-gaps") as runner:
                assert until(lambda: rows.get("samples", metric="xrd.link.in"), 10)
                gw.stop()  # the gateway goes away in the middle of the run
                stopped = time.time()
                assert until(lambda: any("gone" in g["error"] for g in rows.get("gaps", "gateway")), 10)
                assert until(lambda: any("no xrd.report" in g["error"]
                                         for g in rows.get("gaps", "gateway")), 10)
                ticks = runner.ticks
                assert until(lambda: runner.ticks >= ticks + 3, 10)
        finally:
            gw.stop()
            backend.cleanup(target)
    ceph_gaps = rows.get("gaps", "ceph")
    assert ceph_gaps and all(g["cell_id"] == "cell-gaps" for g in ceph_gaps)
    assert not rows.get("samples", "ceph")
    host_after = [r for r in rows.get("samples", "host") if r["wall"] > stopped]
    assert len({r["wall"] for r in host_after}) >= 3  # the host sampler kept sampling
    assert rows.get("samples", "gateway")  # what it had before the gateway went


def test_chosen_devices_run_at_their_own_intervals_on_a_real_cluster(ceph_cluster, own_pools):
    """`--telemetry host:0.25,ceph:1` as the runner builds it: only those two, each at its pace
    (ceph at its sampler's shortest interval, host four times as often)."""
    from xcbench.telemetry import build
    pool = own_pools["replicated"]
    rows = Rows()
    runner = build("host:0.25,ceph:1", cell=SimpleNamespace(id="cell-devices"),
                   target=SimpleNamespace(pool=pool), gateway=None, listener=None,
                   cluster=ceph_cluster, sink=rows)
    assert [s.name for s in runner.samplers] == ["host", "ceph"]
    with runner:
        assert until(lambda: len({r["mono"] for r in rows.get("samples", "ceph")}) >= 4, SETTLE)
    ceph = sorted({r["mono"] for r in rows.get("samples", "ceph")})
    host = sorted({r["mono"] for r in rows.get("samples", "host")})
    assert not rows.get("gaps"), rows.get("gaps")
    assert rows.get("samples", "ceph", metric="pool.stored", pool=pool)
    # the final sample at stop() may come early; between the others: the device's own interval
    ceph_steps = [b - a for a, b in zip(ceph[:-1], ceph[1:-1], strict=False)]
    assert ceph_steps and all(s >= 0.95 for s in ceph_steps), ceph_steps
    assert len(host) >= 3 * len(ceph) - 3  # ~4 host samples per ceph sample
    assert {r["sampler"] for r in rows.get("samples")} == {"host", "ceph"}
