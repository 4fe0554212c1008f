"""RoleSampler on real processes: CPU of a busy role, children counted, vanished processes."""

from __future__ import annotations

import subprocess
import sys
import time

from xcbench.system.limits import CpuLimit
from xcbench.telemetry.roles import RoleSampler, combine_limits

BUSY = "import time\nt=time.time()\nwhile time.time()-t<20: pass"


def _wait_busy_child(pid: int, timeout: float = 30.0) -> None:
    """Until the parent's busy child runs and the parent itself is done starting."""
    import psutil
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = psutil.Process(pid).children()
        if kids and sum(kids[0].cpu_times()[:2]) > 0.2:
            return
        time.sleep(0.05)
    raise AssertionError(f"the busy child of {pid} did not start in {timeout:g} s")


def _kill_tree(p: subprocess.Popen) -> None:
    import psutil
    try:
        kids = psutil.Process(p.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        kids = []
    for c in kids:
        c.kill()
    p.kill()
    p.wait()


def _by(rows, metric):
    return {r["labels"]["role"]: r for r in rows if r["metric"] == metric}


def test_a_busy_role_its_children_and_an_idle_role():
    parent = subprocess.Popen([sys.executable, "-c",
                               f"import subprocess,sys,time\np=subprocess.Popen([sys.executable,'-c',{BUSY!r}])\ntime.sleep(20)"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
    try:
        _wait_busy_child(parent.pid)  # on a loaded box Python's start-up alone can take seconds
        lim2 = lambda pid: CpuLimit(2.0, "host cores (2; test)", host_cores=2)  # noqa: E731
        s = RoleSampler({"probe": lambda: [parent.pid], "gateway": lambda: [idle.pid], "mds": lambda: []},
                        limit=lim2)
        alone = RoleSampler({"probe": lambda: [parent.pid]}, children=(), limit=lim2)
        t0 = time.monotonic()
        first = s.sample(time.time(), t0)
        alone.sample(time.time(), t0)
        assert "role_cpu_cores" not in {r["metric"] for r in first}  # no rate before 2 ticks
        time.sleep(1.0)
        rows = s.sample(time.time(), time.monotonic())
        cpu = _by(rows, "role_cpu_cores")
        without = _by(alone.sample(time.time(), time.monotonic()), "role_cpu_cores")["probe"]["value"]
        # the busy loop is the parent's child: counted with children, not without
        assert cpu["probe"]["value"] > 10 * max(without, cpu["gateway"]["value"], 0.001)
        assert cpu["mds"]["value"] == 0.0
        assert _by(rows, "role_rss_bytes")["gateway"]["value"] > 1 << 20
        lim = _by(rows, "role_cpu_limit_cores")
        assert lim["probe"]["value"] == 2.0 and lim["probe"]["labels"]["source"] == "host cores (2; test)"
        assert lim["mds"]["value"] is None and lim["mds"]["labels"]["source"] == "unknown (no process)"
        idle.kill()
        idle.wait()
        rows = s.sample(time.time(), time.monotonic() + 0.01)  # a vanished process is no error
        assert _by(rows, "role_cpu_cores")["gateway"]["value"] == 0.0
    finally:
        _kill_tree(parent)
        idle.kill()
        idle.wait()


def test_combine_limits():
    a = CpuLimit(0.25, "cgroup v1 cpu.cfs_quota_us=25000/100000 at /cg/a", host_cores=8)
    b = CpuLimit(0.5, "cgroup v1 cpu.cfs_quota_us=50000/100000 at /cg/b", host_cores=8)
    h = CpuLimit(8.0, "host cores (8; ...)", host_cores=8)
    u = CpuLimit(None, "unknown (cannot read x)", host_cores=8)
    assert combine_limits({1: a, 2: a}) == (0.25, a.source)  # one group: one shared quota
    cores, src = combine_limits({1: a, 2: b})
    assert cores == 0.75 and src.startswith("sum of 2: 0.25 (cgroup v1") and "/cg/b" in src
    assert combine_limits({1: a, 2: h})[0] == 8.0
    assert combine_limits({1: a, 2: u}) == (None, "unknown (cannot read x)")
    assert combine_limits({}) == (None, "unknown (no process)")


def test_a_process_another_role_names_is_not_counted_twice():
    import psutil
    parent = subprocess.Popen([sys.executable, "-c",
                               f"import subprocess,sys,time\np=subprocess.Popen([sys.executable,'-c',{BUSY!r}])\ntime.sleep(20)"])
    try:
        deadline = time.monotonic() + 10
        while not psutil.Process(parent.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        (child,) = psutil.Process(parent.pid).children()
        lim = lambda pid: CpuLimit(2.0, "host cores (2; test)", host_cores=2)  # noqa: E731
        # the driver spawned the gateway: the gateway's CPU is the gateway's, not the client's
        s = RoleSampler({"client": lambda: [parent.pid], "gateway": lambda: [child.pid]},
                        children=("client", "gateway"), limit=lim)
        s.sample(time.time(), time.monotonic())
        time.sleep(1.0)
        cpu = _by(s.sample(time.time(), time.monotonic()), "role_cpu_cores")
        assert cpu["gateway"]["value"] > 10 * max(cpu["client"]["value"], 0.001)
    finally:
        _kill_tree(parent)
