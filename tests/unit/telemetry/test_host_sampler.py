"""The host sampler and xcbench.system.proc's per-pid helpers on this real host (psutil underneath)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from xcbench.system import proc
from xcbench.telemetry import HostSampler


def _burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_host_sampler_figures_are_present_and_sane():
    s = HostSampler()
    first = s.sample(1.0, 10.0)
    _burn(0.3)  # some CPU ticks pass, so busy > 0 somewhere
    with open(os.devnull, "wb") as fh:  # and some bytes over loopback would be nice, not needed
        fh.write(b"x")
    second = s.sample(2.0, 11.0)
    metrics = {r["metric"] for r in second}
    assert {"cpu.busy", "cpu.iowait", "mem.total", "mem.available", "mem.cached", "mem.dirty",
            "net.rx_bytes", "net.rx_bytes.rate", "net.tx_bytes"} <= metrics
    assert not any(r["metric"].startswith("cpu.") for r in first)  # busy needs two readings
    busy = {r["labels"]["cpu"]: r["value"] for r in second if r["metric"] == "cpu.busy"}
    assert set(busy) == {"all"} | {f"cpu{i}" for i in range(psutil.cpu_count())}
    assert all(0.0 <= v <= 1.0 for v in busy.values())
    assert busy["all"] > 0  # this test itself burnt 0.3 s of one core
    for r in second:
        assert r["sampler"] == "host" and r["wall"] == 2.0 and r["mono"] == 11.0
    mem = {r["metric"]: r["value"] for r in second if r["metric"].startswith("mem.")}
    assert mem["mem.total"] == psutil.virtual_memory().total
    assert 0 < mem["mem.available"] <= mem["mem.total"]


def test_network_counters_are_monotonic_and_rates_are_not_negative():
    s = HostSampler(interfaces=["lo"])
    rows = []
    for k in range(3):
        rows += s.sample(float(k), float(k))
        subprocess.run([sys.executable, "-c", "import socket; s=socket.create_server(('127.0.0.1', 0));"
                        "c=socket.create_connection(s.getsockname()); c.sendall(b'x'*65536)"],
                       check=True)
    for metric in ("net.rx_bytes", "net.tx_packets"):
        values = [r["value"] for r in rows if r["metric"] == metric]
        assert len(values) == 3 and values == sorted(values)
    rx = [r["value"] for r in rows if r["metric"] == "net.rx_bytes"]
    assert rx[-1] - rx[0] >= 2 * 65536  # the loopback bytes we sent were counted
    assert all(r["value"] >= 0 for r in rows if r["metric"].endswith(".rate"))
    assert {r["labels"]["iface"] for r in rows if r["metric"].startswith("net.")} == {"lo"}


def test_per_cpu_off_gives_only_the_total():
    s = HostSampler(per_cpu=False)
    s.sample(0.0, 0.0)
    time.sleep(0.05)
    rows = s.sample(1.0, 1.0)
    assert {r["labels"]["cpu"] for r in rows if r["metric"] == "cpu.busy"} == {"all"}


def test_usage_of_a_live_process_then_a_gone_one():
    child = subprocess.Popen([sys.executable, "-c", "import time\n"
                              "while time.process_time() < 0.3: pass\nprint('ok', flush=True)\n"
                              "time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ok"
        u = proc.usage(child.pid)
        assert u["cpu_seconds"] >= 0.25  # it burnt 0.3 s of CPU (in 10 ms ticks)
        assert u["rss_bytes"] > 1 << 20 and u["threads"] >= 1 and u["children_cpu_seconds"] >= 0
        assert proc.rss(child.pid) > 1 << 20
        assert proc.cmdline(child.pid)[0] == sys.executable
        later = proc.usage(child.pid)["cpu_seconds"]
        assert later >= u["cpu_seconds"]  # a counter: never goes back
    finally:
        child.kill()
    time.sleep(0.1)  # killed, not yet reaped: a zombie
    with pytest.raises(ProcessLookupError):
        proc.usage(child.pid)
    assert proc.cmdline(child.pid) is None
    child.wait()
    child.stdout.close()
    with pytest.raises(OSError):
        proc.usage(child.pid)
    assert proc.rss(child.pid) == 0 and proc.cmdline(child.pid) is None


def test_own_process():
    me = proc.usage(os.getpid())
    assert me["rss_bytes"] == pytest.approx(psutil.Process().memory_info().rss, rel=0.5)
    assert proc.cmdline(os.getpid()) == psutil.Process().cmdline()
