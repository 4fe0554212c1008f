"""CPU-quota cgroups on the real kernel: the quota binds, the limit is read back, and every group
is removed: on exit, at interpreter exit, and by a sweep after its owner was killed with -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.support.quota import MECH, needs_quota
from xcbench.system.cgroups import CgroupError, CpuGroups, Registry, sweep_stale
from xcbench.system.limits import cpu_limit

TICKS = 2 / os.sysconf("SC_CLK_TCK")  # resolution of two process CPU-time reads (s)

pytestmark = needs_quota
BUSY = [sys.executable, "-c", "while True: pass"]
ROOT = Path(__file__).resolve().parents[3]


def _stat(group: Path) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in (ln.split() for ln in (group / "cpu.stat").read_text().splitlines())}
    except OSError:
        return {}


@pytest.fixture
def busy():
    p = subprocess.Popen(BUSY)
    yield p
    p.kill()
    p.wait()


def test_a_busy_loop_uses_its_quota_and_no_more(tmp_path, busy):
    run = f"t{uuid.uuid4().hex[:6]}"
    with CpuGroups(tmp_path, run) as groups:
        g = groups.create("probe", cores=0.25)
        assert g.path.name == f"xcb-{run}-probe" and g.path.is_dir()
        g.add(busy.pid)
        assert busy.pid in g.pids()
        lim = cpu_limit(busy.pid)
        assert lim.cores == 0.25 and lim.source == f"cgroup v1 cpu.cfs_quota_us=25000/100000 at {g.path}" \
            if MECH.kind == "v1" else lim.cores == 0.25
        proc = psutil.Process(busy.pid)
        t0, c0 = time.monotonic(), sum(proc.cpu_times()[:2])
        time.sleep(2.0)
        used, wall = sum(proc.cpu_times()[:2]) - c0, time.monotonic() - t0
        # the window spans at most wall/period + 1 periods, each granting at most one quota;
        # CPU times are read in clock ticks, so two reads are each off by up to one tick
        period = g.period_us / 1e6
        bound = g.quota_us / 1e6 * (wall / period + 1) + TICKS
        assert used <= bound, f"{used:.3f} s CPU in {wall:.2f} s, quota allows {bound:.3f}"
        assert used > 0
        # the group's quota timer ran (a contended host may keep it below the quota: no
        # assertion that it was throttled)
        assert _stat(g.path).get("nr_periods", 0) > 0
        assert [e["path"] for e in Registry(tmp_path).entries()] == [str(g.path)]
    assert not g.path.exists()
    assert Registry(tmp_path).entries() == []
    assert psutil.Process(busy.pid).is_running()  # moved back to the parent, not killed
    assert cpu_limit(busy.pid).cores != 0.25


def test_names_must_be_xcbench_names(tmp_path):
    with CpuGroups(tmp_path, "x") as groups, pytest.raises(CgroupError):
        groups.create("a/../../b", 0.5)


def _child(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    code = textwrap.dedent(f"""
        import os, signal, subprocess, sys
        from xcbench.system.cgroups import CpuGroups
        groups = CpuGroups({str(tmp_path)!r}, "crash{os.getpid()}")
        g = groups.create("gateway", 0.5)
        busy = subprocess.Popen({BUSY!r}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        g.add(busy.pid)
        print(g.path, busy.pid, flush=True)
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_atexit_removes_what_a_forgotten_close_left(tmp_path):
    r = _child(tmp_path, "busy.kill(); busy.wait()\n")  # exits without close(): atexit runs
    path, pid = r.stdout.split()
    assert r.returncode == 0, r.stderr
    assert not Path(path).exists() and Registry(tmp_path).entries() == []


def test_after_kill_9_a_sweep_removes_the_group_and_keeps_its_process(tmp_path):
    r = _child(tmp_path, "os.kill(os.getpid(), signal.SIGKILL)\n")
    assert r.returncode == -signal.SIGKILL
    path, pid = r.stdout.split()
    busy = psutil.Process(int(pid))
    try:
        assert Path(path).is_dir()  # no atexit after -9: left over, but recorded
        assert sweep_stale(tmp_path) == [path]
        assert not Path(path).exists() and Registry(tmp_path).entries() == []
        assert busy.is_running()
        assert sweep_stale(tmp_path) == []
    finally:
        busy.kill()
        busy.wait(10)


def test_a_sweep_keeps_the_groups_of_a_live_owner(tmp_path, busy):
    with CpuGroups(tmp_path, f"live{os.getpid()}") as groups:
        g = groups.create("client", 1.0)
        assert sweep_stale(tmp_path) == [] and g.path.is_dir()
    assert not g.path.exists()


def test_every_thread_moves_and_the_role_sampler_sees_the_role_at_its_limit(tmp_path):
    """A 3-thread busy process in a quarter-core group: all its threads are in the group, the
    RoleSampler reports the group's quota as the role's limit, its CPU within the quota, and the
    group's throttling (how a busy shared host still shows the role at its quota)."""
    from xcbench.telemetry.roles import RoleSampler
    code = "import threading\ndef spin():\n    while True: pass\n" \
           "for _ in range(2): threading.Thread(target=spin, daemon=True).start()\nspin()\n"
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        with CpuGroups(tmp_path, f"thr{os.getpid()}") as groups:
            deadline = time.monotonic() + 10
            while len(os.listdir(f"/proc/{p.pid}/task")) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            g = groups.create("gateway", cores=0.25)
            g.add(p.pid)
            for tid in os.listdir(f"/proc/{p.pid}/task"):
                cg = Path(f"/proc/{p.pid}/task/{tid}/cgroup").read_text()
                assert f"/{g.path.name}\n" in cg, (tid, cg)
            s = RoleSampler({"gateway": lambda: [p.pid]})
            m0 = time.monotonic()
            s.sample(time.time(), m0)
            time.sleep(2.0)
            m1 = time.monotonic()
            rows = {r["metric"]: r for r in s.sample(time.time(), m1)}
            lim = rows["role_cpu_limit_cores"]
            assert lim["value"] == 0.25 and str(g.path) in lim["labels"]["source"]
            cpu = rows["role_cpu_cores"]["value"]
            # three spinning threads want 3 cores: the quota of each period the window spans is
            # all they get (at most dt/period + 1 periods)
            period, quota = g.period_us / 1e6, g.quota_us / 1e6
            assert 0 < cpu <= (quota * ((m1 - m0) / period + 1) + TICKS) / (m1 - m0), cpu
            assert 0 <= rows["role_cpu_throttled"]["value"] <= 1
    finally:
        p.kill()
        p.wait()


def test_a_sweep_sees_through_a_reused_owner_pid(tmp_path, busy):
    # the record says our pid but another start time: the owner that made it is gone
    with CpuGroups(tmp_path, f"reuse{os.getpid()}") as groups:
        g = groups.create("osd", 0.5)
        reg = Registry(tmp_path)
        entries = reg.entries()
        entries[0]["owner_start"] -= 3600
        reg.file.write_text(__import__("json").dumps(entries))
        assert sweep_stale(tmp_path) == [str(g.path)] and not g.path.exists()
