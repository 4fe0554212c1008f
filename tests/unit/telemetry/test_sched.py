"""CPU pressure and run-queue wait as the samplers read them: PSI files, schedstat of real threads."""

from __future__ import annotations

import os
import threading
import time

import pytest

from xcbench.telemetry.host import HostSampler
from xcbench.telemetry.role_processes import CellRoleSampler
from xcbench.telemetry.sched import cgroup_pressure_file, read_pressure, thread_times

PSI = ("some avg10=1.00 avg60=0.50 avg300=0.10 total={some}\n"
       "full avg10=0.00 avg60=0.00 avg300=0.00 total={full}\n")


def test_pressure_totals_are_seconds_and_an_absent_file_is_empty(tmp_path):
    f = tmp_path / "cpu"
    f.write_text(PSI.format(some=2_500_000, full=0))
    assert read_pressure(f) == {"some": 2.5, "full": 0.0}
    assert read_pressure(tmp_path / "none") == {}


def test_the_host_sampler_gives_the_share_of_a_tick_stalled(tmp_path):
    f = tmp_path / "cpu"
    s = HostSampler(interfaces=[], per_cpu=False, pressure=f)
    f.write_text(PSI.format(some=1_000_000, full=0))
    assert not [r for r in s.sample(0.0, 10.0) if r["metric"].startswith("cpu.pressure")]
    f.write_text(PSI.format(some=1_600_000, full=100_000))  # 0.6 s of 2 s stalled
    rows = {r["metric"]: r for r in s.sample(2.0, 12.0) if r["metric"].startswith("cpu.pressure")}
    assert rows["cpu.pressure.some"]["value"] == pytest.approx(0.3)
    assert rows["cpu.pressure.full"]["value"] == pytest.approx(0.05)
    assert rows["cpu.pressure.some"]["labels"] == {"scope": "system"}


def test_no_pressure_rows_without_psi(tmp_path):
    s = HostSampler(interfaces=[], per_cpu=False, pressure=tmp_path / "none")
    s.sample(0.0, 1.0)
    assert not [r for r in s.sample(1.0, 2.0) if r["metric"].startswith("cpu.pressure")]


def test_thread_times_cover_every_thread_of_this_process():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="xcb-waiter", daemon=True)
    t.start()
    try:
        got = thread_times(os.getpid())
        assert threading.get_native_id() in got and t.native_id in got
        run, wait, _ = got[threading.get_native_id()]
        assert run > 0 and wait >= 0
    finally:
        stop.set()
        t.join()
    assert thread_times(2 ** 22 + 7) == {}  # no such process


def test_a_process_in_the_v2_root_group_has_no_pressure_of_its_own(tmp_path):
    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "cgroup").write_text("1:cpu:/\n0::/\n")
    (proc / "self").mkdir()
    (proc / "self" / "mounts").write_text(f"cgroup2 {tmp_path / 'cg'} cgroup2 rw 0 0\n")
    f, why = cgroup_pressure_file(42, root=tmp_path / "cg", proc=proc)
    assert f is None and "root cgroup" in why and "per-task" in why
    (proc / "42" / "cgroup").write_text("1:cpu:/xcb-r-gateway\n0::/\n")
    f, why = cgroup_pressure_file(42, root=tmp_path / "cg", proc=proc)
    assert f is None and "cgroup v1 group without cpu.pressure" in why
    (tmp_path / "cg" / "site.slice").mkdir(parents=True)
    (tmp_path / "cg" / "site.slice" / "cpu.pressure").write_text(PSI.format(some=1, full=0))
    (proc / "42" / "cgroup").write_text("0::/site.slice\n")
    assert cgroup_pressure_file(42, root=tmp_path / "cg", proc=proc) == (
        tmp_path / "cg" / "site.slice" / "cpu.pressure", "")


def test_the_role_sampler_names_the_busiest_thread_and_the_wait():
    """A thread spinning for the tick is the role's busiest; the idle role has no hot thread
    of note; a role with no cgroup PSI says why once."""
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass
    t = threading.Thread(target=spin, name="xcb-spinner", daemon=True)
    t.start()
    try:
        s = CellRoleSampler({"client": lambda: [os.getpid()]})
        m0 = time.monotonic()
        first = s.sample(time.time(), m0)
        notes = [r for r in first if r["metric"] == "role_cpu_pressure"]
        assert len(notes) == 1 and notes[0]["value"] is None and notes[0]["labels"]["source"]
        time.sleep(0.5)
        rows = s.sample(time.time(), time.monotonic())
    finally:
        stop.set()
        t.join()
    by = {r["metric"]: r for r in rows}
    assert by["role_runq_wait"]["value"] >= 0
    hot = by["role_hot_thread_cores"]
    assert hot["labels"]["tid"] == t.native_id, hot  # the spinner, whatever the host's load
    assert 0 < hot["value"] <= 1.05
    assert by["role_hot_thread_wait"]["labels"] == hot["labels"]
    assert not [r for r in rows if r["metric"] == "role_cpu_pressure"]  # said once



def test_a_role_in_a_group_with_its_own_pressure_gets_its_share(tmp_path, monkeypatch):
    """Where the role's cgroup has cpu.pressure (cgroup v2 hosts), its stalled share per tick."""
    import xcbench.telemetry.role_processes as rp
    f = tmp_path / "cpu.pressure"
    monkeypatch.setattr(rp, "cgroup_pressure_file", lambda pid: (f, ""))
    s = CellRoleSampler({"gateway": lambda: [os.getpid()]})
    f.write_text(PSI.format(some=1_000_000, full=0))
    s.sample(0.0, 100.0)
    f.write_text(PSI.format(some=1_500_000, full=0))  # 0.5 s of 2 s
    got = [r for r in s.sample(2.0, 102.0) if r["metric"] == "role_cpu_pressure"]
    assert len(got) == 1 and got[0]["value"] == pytest.approx(0.25)
    assert got[0]["labels"] == {"role": "gateway", "source": str(f)}
