"""The streams and cores dimensions against real tmpfs gateways: the stream count is the number
of TCP connections the gateway's own ``xrd.report`` counts, and the cores quota binds the
origin's CPU (measured with the kernel's per-process accounting)."""

from __future__ import annotations

import os
import threading
import time

import psutil
import pytest

from tests.support.gwcheck import tmpfs_gateways, xrootd_workdir
from tests.support.quota import MECH, needs_quota
from xcbench.campaign import CampaignSpec, run_campaign
from xcbench.system.cgroups import PERIOD_US
from xcbench.telemetry.xrdreport import ReportListener, parse_report

pytestmark = pytest.mark.integration


def _links_total(listener: ReportListener, pid: int, timeout: float = 10.0) -> int:
    """The gateway's ``link.tot`` (connections accepted so far) from the first report made after
    now: its ``tod`` (xrootd's time(0), whole seconds) past this second; one comes every second."""
    after = int(time.time()) + 1
    listener.drain()
    deadline = time.monotonic() + timeout
    while True:
        for p in listener.drain():
            r = parse_report(p.data)
            tot = r.values.get("link.tot")
            if r.header.get("pid") == pid and int(r.header.get("tod") or 0) >= after and tot is not None:
                return int(tot)
        assert time.monotonic() < deadline, f"no xrd.report of pid {pid} made after {after}"
        time.sleep(0.05)


def test_streams_dimension_sets_the_tcp_connections_per_channel():
    with ReportListener() as listener, xrootd_workdir("xcb-test-dims-") as wd, \
            tmpfs_gateways(wd, ("dims-streams",), size=256 << 20,
                           report_addr=listener.addr) as gws:
        gw = gws[0]
        pid = gw.origins[0].pid
        seen = {}
        for streams in (1, 4):
            before = _links_total(listener, pid)
            spec = CampaignSpec(files=6, file_size="2M", mode="push", client="xrootd",
                                concurrency=3, connections=3, streams=streams, timeout=60,
                                delete_after_verify=True, chunk_size="1M")
            summary = run_campaign(spec, dest=gw, sink=lambda *a: None, cell_id="dims")
            assert (summary["finished"], summary["failed"]) == (6, 0)
            seen[streams] = _links_total(listener, pid) - before
        # every channel the campaign opened (one per URL user) has `streams` connections
        assert seen[1] >= 3
        assert seen[4] == 4 * seen[1], seen


def _cpu_seconds(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def _rate(pid: int, seconds: float) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``pid`` over the next ``seconds``."""
    c0, w0 = _cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return _cpu_seconds(pid) - c0, time.monotonic() - w0


@needs_quota
def test_cores_dimension_holds_the_origin_at_its_quota():
    from xcbench.gateway.cores import limit_origins
    with xrootd_workdir("xcb-test-dims-") as wd, \
            tmpfs_gateways(wd, ("dims-cores",), size=512 << 20) as gws:
        gw = gws[0]
        pid = gw.origins[0].pid
        spec = CampaignSpec(files=2000, file_size="8M", mode="push", client="xrootd",
                            concurrency=4, streams=1, timeout=120, checksum="none",
                            delete_after_verify=True)
        stop = threading.Event()
        t = threading.Thread(target=run_campaign, kwargs=dict(
            spec=spec, dest=gw, sink=lambda *a: None, cell_id="dims", stop_event=stop))
        t.start()
        try:
            time.sleep(1.0)  # past connection setup: the origin is writing
            free, free_wall = _rate(pid, 2.0)
            # a quota well below what the origin takes unlimited on this (shared) machine, so
            # that the quota, not the load, is what holds it
            cores = max(0.01, round(free / free_wall / 4, 3))
            groups = limit_origins(gw, cores)
            group = next(iter(groups.groups.values()))
            try:
                assert pid in group.pids()
                used, elapsed = _rate(pid, 4.0)
                stat = dict(ln.split() for ln in (group.path / "cpu.stat").read_text().splitlines())
            finally:
                assert groups.close() == []
        finally:
            stop.set()
            t.join(120)
        assert not group.path.exists()
    # CFS grants `quota` per period: a window of W seconds overlaps at most W/P + 2 periods;
    # the two cpu_times readings are each exact to one clock tick
    period = PERIOD_US / 1e6
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    bound = cores * (elapsed + 2 * period) + 2 * tick
    assert used <= bound, f"origin used {used:.3f} CPU s in {elapsed:.2f} s, quota {cores} cores"
    # and the quota was what held it (otherwise the bound above proves nothing)
    assert int(stat.get("nr_throttled", 0)) > 0, stat


@needs_quota
def test_a_cell_with_cores_runs_its_origins_in_quota_groups_removed_on_exit():
    from xcbench.cell import Cell
    from xcbench.run.session import CellSession
    from xcbench.system.proc import ProcessSet
    cell = Cell(id="dims-sess", label="dims", backend="tmpfs", tmpfs_size=64 << 20, origins=2,
                cores=0.3)
    procs = ProcessSet()
    with xrootd_workdir("xcb-test-dims-") as wd:
        try:
            with CellSession(cell, cluster=None, workdir=wd, procs=procs) as s:
                groups = []
                for server in s.gateway.origins:
                    line = next(ln for ln in open(f"/proc/{server.pid}/cgroup")
                                if ln.split(":")[1] in ("cpu,cpuacct", "cpu", ""))
                    path = line.strip().split(":", 2)[2]
                    assert path.rsplit("/", 1)[-1].startswith("xcb-"), line
                    groups.append(path)
                assert len(set(groups)) == 2  # one group per origin
                from xcbench.system.limits import cpu_limit
                assert cpu_limit(s.gateway.origins[0].pid).quota_cores == pytest.approx(0.3)
        finally:
            procs.stop_all()
    mount = MECH.base
    assert not any((mount / g.lstrip("/").rsplit("/", 1)[-1]).exists() for g in groups)
