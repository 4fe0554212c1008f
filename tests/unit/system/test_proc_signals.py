"""A signal while xcbench.system.proc starts a child: the child is never left without someone to stop it.

The race (a probe's fio left running after SIGHUP): the KeyboardInterrupt the
command's StopFlag raises came between Popen and the code that stops the child (while the child
was being written into the orphan record), so nobody stopped it. Here the signal is sent at
exactly those points, so each test fails every time on the old code, not now and then.
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from xcbench.system import proc, signals
from xcbench.system.signals import StopFlag


def _signal_self(sig: int, stop: StopFlag) -> None:
    """Send ``sig`` to this process and let its handler run (it must not raise here)."""
    os.kill(os.getpid(), sig)
    assert stop.event.wait(5)


class _Recorder:
    """An orphan recorder that is signalled while it writes a child down."""

    def __init__(self, stop: StopFlag, sig: int):
        self.stop, self.sig, self.pids = stop, sig, []

    def add(self, pid, name, args):
        self.pids.append(pid)
        _signal_self(self.sig, self.stop)

    def drop(self, pid):
        pass

    def add_mount(self, path, fstype):
        pass


@pytest.fixture
def signalled_recorder(monkeypatch):
    def make(stop, sig):
        rec = _Recorder(stop, sig)
        monkeypatch.setattr(proc, "recorder", rec)
        return rec
    return make


@pytest.mark.parametrize("sig", signals.SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_while_a_run_child_is_recorded_stops_the_child(sig, signalled_recorder):
    with StopFlag() as stop:
        rec = signalled_recorder(stop, sig)
        with pytest.raises(KeyboardInterrupt):
            proc.run(["sleep", "30"], timeout=60)
    assert len(rec.pids) == 1
    assert not proc.pid_alive(rec.pids[0])


class _SignalledPopen(subprocess.Popen):
    """Popen with a signal arriving once the child exists but before Popen has returned."""
    stop: StopFlag
    sig: int
    pids: list[int] = []

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.pids.append(self.pid)
        _signal_self(self.sig, self.stop)


@pytest.fixture
def signalled_popen(monkeypatch):
    def make(stop, sig):
        cls = type("P", (_SignalledPopen,), {"stop": stop, "sig": sig, "pids": []})
        monkeypatch.setattr(proc.subprocess, "Popen", cls)
        return cls.pids
    return make


def test_a_signal_inside_popen_of_run_stops_the_child(signalled_popen):
    with StopFlag() as stop:
        pids = signalled_popen(stop, signal.SIGHUP)
        with pytest.raises(KeyboardInterrupt):
            proc.run(["sleep", "30"], timeout=60)
    assert len(pids) == 1 and not proc.pid_alive(pids[0])


def test_a_signal_inside_popen_of_spawn_leaves_the_child_in_its_set(signalled_popen):
    ps = proc.ProcessSet(record=False)
    with StopFlag() as stop:
        pids = signalled_popen(stop, signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt):
            proc.spawn(["sleep", "30"], procs=ps)
    assert [p.pid for p in ps] == pids  # the caller's stop_all finds it
    ps.stop_all(timeout=5)
    assert not proc.pid_alive(pids[0])


def test_a_signal_inside_popen_of_spawn_without_a_set_stops_the_child(signalled_popen):
    with StopFlag() as stop:
        pids = signalled_popen(stop, signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            proc.spawn(["sleep", "30"])
    assert len(pids) == 1 and not proc.pid_alive(pids[0])


def test_a_deferred_section_finishes_and_then_raises():
    done = []
    with StopFlag() as stop:
        with pytest.raises(KeyboardInterrupt):
            with signals.deferred():
                _signal_self(signal.SIGTERM, stop)
                done.append("section finished")
            done.append("not reached")
        assert stop.signum == signal.SIGTERM
    assert done == ["section finished"]


def test_a_deferred_section_without_a_signal_raises_nothing():
    with StopFlag() as stop, signals.deferred():
        pass
    assert not stop.stopping


def test_a_signal_deferred_during_cleanup_is_not_raised():
    with StopFlag() as stop:
        try:
            _signal_self(signal.SIGTERM, stop)  # raises: the cleanup below starts
            pytest.fail("the first signal must raise")
        except KeyboardInterrupt:
            with signals.deferred():  # cleanup starting a process (umount): not cut short
                os.kill(os.getpid(), signal.SIGHUP)
                threading_wait(0.2)


def threading_wait(seconds: float) -> None:
    import threading
    threading.Event().wait(seconds)


def test_killing_a_run_child_waits_for_the_rest_of_its_group(tmp_path):
    """fio's job processes are its children in its group: after a kill none is left, so an
    unmount that follows does not find them holding files open."""
    pidfile = tmp_path / "member"
    script = f"sleep 60 & echo $! > {pidfile}; wait"
    with StopFlag() as stop:
        class Rec(_Recorder):
            def add(self, pid, name, args):
                for _ in range(500):
                    if pidfile.exists() and pidfile.read_text().strip():
                        break
                    threading_wait(0.01)
                self.pids.append(int(pidfile.read_text()))
                _signal_self(signal.SIGTERM, self.stop)
        rec = Rec(stop, signal.SIGTERM)
        old, proc.recorder = proc.recorder, rec
        try:
            with pytest.raises(KeyboardInterrupt):
                proc.run(["sh", "-c", script], timeout=60)
        finally:
            proc.recorder = old
    assert not proc.pid_alive(rec.pids[0])  # the group's other member is gone too


def _interrupted_run(cmd: list[str], ready) -> None:
    """proc.run(cmd) cut short by SIGTERM once ``ready()`` holds (checked while the child is
    written down, so the signal lands while it runs)."""
    with StopFlag() as stop:
        class Rec(_Recorder):
            def add(self, pid, name, args):
                for _ in range(500):
                    if ready():
                        break
                    threading_wait(0.01)
                _signal_self(signal.SIGTERM, self.stop)
        old, proc.recorder = proc.recorder, Rec(stop, signal.SIGTERM)
        try:
            with pytest.raises(KeyboardInterrupt):
                proc.run(cmd, timeout=60)
        finally:
            proc.recorder = old


def test_a_descendant_in_a_session_of_its_own_is_stopped_too(tmp_path):
    """As fio's job processes (each calls setsid): no signal to the child's group reaches them."""
    pidfile = tmp_path / "job"
    def in_its_own_session() -> bool:
        try:
            job = int(pidfile.read_text())
            return os.getsid(job) == job
        except (OSError, ValueError):
            return False
    _interrupted_run(["sh", "-c", f"setsid sleep 60 & echo $! > {pidfile}; wait"],
                     in_its_own_session)
    assert in_its_own_session() or not proc.pid_alive(int(pidfile.read_text()))
    job = int(pidfile.read_text())
    try:
        assert not proc.pid_alive(job)
    finally:
        proc.kill_group(job)


def test_a_run_child_is_asked_politely_first(tmp_path):
    """SIGTERM first (fio ends its jobs and writes its output), SIGKILL only after a grace."""
    said = tmp_path / "said"
    ready = tmp_path / "ready"
    _interrupted_run(["sh", "-c", f"trap 'echo term > {said}; exit 0' TERM; touch {ready}; "
                                  "sleep 60 & wait"], ready.exists)
    assert said.read_text().strip() == "term"


def test_a_signal_while_a_set_is_stopped_does_not_leave_the_rest_running(monkeypatch):
    """The command's normal end (stop_all) racing a first signal: every process still stops."""
    ps = proc.ProcessSet(record=False)
    a, b = proc.spawn(["sleep", "30"], procs=ps), proc.spawn(["sleep", "30"], procs=ps)
    real_stop, calls = proc.stop, []

    def stop(p, **kw):
        calls.append(p.pid)
        if len(calls) == 1:
            _signal_self(signal.SIGTERM, flag)  # arrives while the first one is stopped
        return real_stop(p, **kw)
    monkeypatch.setattr(proc, "stop", stop)
    with StopFlag() as flag:
        with pytest.raises(KeyboardInterrupt):
            ps.stop_all(timeout=5)
    assert calls == [b.pid, a.pid] and list(ps) == []
    assert not proc.pid_alive(a.pid) and not proc.pid_alive(b.pid)
