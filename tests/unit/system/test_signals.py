"""xcbench.system.signals: SIGINT, SIGTERM and SIGHUP stop every command the same way."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from xcbench.system.signals import SIGNALS, Interrupted, StopFlag, active


def _wait_for_handler() -> None:
    threading.Event().wait(5)  # the handler runs (and raises) in the main thread


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_polite_section_first_signal_asks_second_interrupts(sig):
    before = signal.getsignal(sig)
    with StopFlag() as stop:
        with stop.polite():
            stop.check()  # nothing asked yet
            os.kill(os.getpid(), sig)
            assert stop.event.wait(5)
            assert stop.signum == sig
            with pytest.raises(Interrupted):
                stop.check()
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGTERM)
                _wait_for_handler()
    assert signal.getsignal(sig) is before
    assert active() is None


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_outside_a_polite_section_the_first_signal_unwinds(sig):
    with StopFlag() as stop, pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), sig)
        _wait_for_handler()
    assert stop.stopping


def test_a_signal_during_cleanup_does_not_cut_it_short():
    done = []
    with StopFlag() as stop:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            _wait_for_handler()
        except KeyboardInterrupt:
            os.kill(os.getpid(), signal.SIGHUP)  # a second signal while cleaning up: noted only
            threading.Event().wait(0.2)
            done.append("cleanup finished")
    assert done == ["cleanup finished"] and stop.stopping


def test_a_signal_before_a_polite_section_stops_before_it_starts():
    with StopFlag() as stop:
        stop.event.set()
        with pytest.raises(KeyboardInterrupt), stop.polite():
            pytest.fail("the section must not start")


def test_nested_flags_share_the_outer_one():
    with StopFlag() as outer:
        handler = signal.getsignal(signal.SIGTERM)
        with StopFlag() as inner:
            assert inner is outer and active() is outer
        assert signal.getsignal(signal.SIGTERM) is handler and active() is outer
    assert active() is None


def test_outside_the_main_thread_no_handler_is_installed():
    seen = []

    def body():
        with StopFlag() as stop:
            seen.append(dict(stop._old))
    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == [{}]


WAITER = """
import sys
from xcbench.system.signals import StopFlag
with StopFlag() as stop, stop.polite() as event:
    print("waiting", flush=True)
    while not event.wait(0):  # inside wait most of the time, its lock held part of it
        pass
print("stopped", flush=True)
"""


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_while_the_main_thread_waits_on_the_stop_event_stops_it(sig):
    """The handler sets the event the main thread is waiting on, possibly while that thread
    holds the event's lock: with threading.Event's lock (not re-entrant) about one try in two
    hung for good (`gateway up --wait` after a SIGHUP); the process must end every time."""
    import subprocess
    import sys
    for _ in range(4):
        p = subprocess.Popen([sys.executable, "-c", WAITER], stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout.readline() == "waiting\n"
            p.send_signal(sig)
            assert p.wait(timeout=20) == 0, "the command hung in the stop event's lock"
            assert p.stdout.read() == "stopped\n"
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
