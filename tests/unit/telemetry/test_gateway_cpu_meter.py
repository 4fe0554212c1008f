"""GatewayCpuMeter on real processes: a level's CPU seconds (reaped children included) per GB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

from xcbench.telemetry.gateway_cpu_meter import COLUMNS, GatewayCpuMeter
from xcbench.telemetry.roles import tree_cpu_seconds

# /proc gives a reaped child's user and system seconds each truncated to a clock tick, while
# the child reports its own seconds to the nanosecond: the reading may fall short by two ticks
TICKS = 2 / os.sysconf("SC_CLK_TCK")

# a "server" that, when told, runs a busy child (as xrootd runs an xrdcp for a root TPC), reaps
# it and prints the CPU seconds the child reported for itself
SERVER = """
import subprocess, sys
child = "import time\\nt=time.process_time()\\nwhile time.process_time()-t<0.6: pass\\nprint(time.process_time())"
for line in sys.stdin:
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True).stdout
    print(out.strip(), flush=True)
"""


def _server(name: str = "xcb", role: str = "standalone", daemon: str = "xrootd", pid: int = 0, slot=None):
    return SimpleNamespace(name=name, role=role, daemon=daemon, pid=pid, slot=slot, host=None)


def _run_child(p: subprocess.Popen) -> float:
    p.stdin.write("go\n")
    p.stdin.flush()
    return float(p.stdout.readline())


def test_a_level_counts_the_reaped_child_and_divides_by_the_bytes():
    p = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        links = iter([1000, 1000 + 2 * 10**9])  # bytes the origin wrote, at start and at end
        gw = SimpleNamespace(servers=[_server(pid=p.pid)], addr="127.0.0.1")
        meter = GatewayCpuMeter(gw, security="tls", link_bytes=lambda s: next(links))
        meter.start()
        child = _run_child(p)
        out = meter.finish(4 * 10**9)
    finally:
        p.kill()
        p.wait()
    assert set(out) == set(COLUMNS)
    assert out["security"] == "tls"
    # the child's own seconds are all there (it exited and was reaped before the second reading),
    # to the clock tick; the parent adds only its loop's few milliseconds
    assert child - TICKS <= out["gateway_cpu_s"] < child + 0.3
    assert out["gateway_cpu_s_per_gb"] == out["gateway_cpu_s"] / 4
    (origin,) = json.loads(out["gateway_cpu_origins"])
    assert origin["origin"] == "xcb" and origin["bytes"] == 2 * 10**9
    assert origin["s_per_gb"] == origin["cpu_s"] / 2


def test_origins_and_redirector_are_kept_apart_and_summed():
    procs = [subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    try:
        servers = [_server("mgr", "manager", pid=procs[0].pid), _server("o1", "server", pid=procs[1].pid),
                   _server("o1", "server", daemon="cmsd", pid=0)]
        meter = GatewayCpuMeter(SimpleNamespace(servers=servers, addr="127.0.0.1"), link_bytes=lambda s: None)
        meter.start()
        busy = _run_child(procs[1])
        out = meter.finish(10**9)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    per = {o["origin"]: o for o in json.loads(out["gateway_cpu_origins"])}
    assert set(per) == {"redirector", "o1"}
    assert per["o1"]["cpu_s"] >= busy - TICKS and per["redirector"]["cpu_s"] < 0.2
    assert per["o1"]["bytes"] is None and per["o1"]["s_per_gb"] is None  # no counters: not guessed
    assert out["gateway_cpu_s"] == per["o1"]["cpu_s"] + per["redirector"]["cpu_s"]
    assert out["security"] == "none"


def test_a_gateway_on_an_ssh_host_is_not_measured_here():
    ssh = SimpleNamespace(host=SimpleNamespace(transport="ssh", name="gw1"))
    gw = SimpleNamespace(servers=[_server(pid=1, slot=ssh)], addr="10.0.0.1")
    meter = GatewayCpuMeter(gw, link_bytes=lambda s: 0)
    meter.start()
    out = meter.finish(10**9)
    assert out["gateway_cpu_s"] is None and out["gateway_cpu_s_per_gb"] is None
    assert out["gateway_cpu_origins"] is None


def test_a_vanished_server_gives_no_total():
    p = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    gw = SimpleNamespace(servers=[_server(pid=p.pid)], addr="127.0.0.1")
    meter = GatewayCpuMeter(gw, link_bytes=lambda s: None)
    meter.start()
    p.kill()
    p.wait()
    out = meter.finish(10**9)
    assert out["gateway_cpu_s"] is None  # its seconds are unknown, not zero
    assert json.loads(out["gateway_cpu_origins"])[0]["cpu_s"] is None
    assert tree_cpu_seconds([p.pid]) is None


def test_a_read_level_has_no_per_origin_bytes():
    gw = SimpleNamespace(servers=[_server(pid=os.getpid())], addr="127.0.0.1")
    meter = GatewayCpuMeter(gw, link_bytes=lambda s: 5)
    meter.start()
    out = meter.finish(10**9, "read")
    (origin,) = json.loads(out["gateway_cpu_origins"])
    assert origin["bytes"] is None and origin["cpu_s"] >= 0 and out["gateway_cpu_s_per_gb"] is not None
