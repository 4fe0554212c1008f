"""CellSession: setup in order, teardown in reverse, on any exit (a real tmpfs backend)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import xcbench.run.session
from xcbench.backends.tmpfs import TmpfsBackend
from xcbench.cell import Cell
from xcbench.errors import XcbError
from xcbench.run.session import CellSession
from xcbench.system.proc import ProcessSet


def recording(events: list[str]):
    """The real tmpfs backend, with every step written down."""
    class Recording(TmpfsBackend):
        def prepare(self, cell):
            t = super().prepare(cell)
            events.append("prepare")
            self.seen = t
            return t

        def cleanup(self, target):
            events.append("cleanup")
            super().cleanup(target)

        def close(self):
            events.append("close")

    return Recording


class FakeGateway:
    def __init__(self, events, fail_stop=False):
        self.events, self.fail_stop, self.findings = events, fail_stop, [{"what": "x"}]

    def stop(self):
        self.events.append("stop")
        if self.fail_stop:
            raise XcbError("stop failed")


@pytest.fixture
def events(monkeypatch):
    ev: list[str] = []
    monkeypatch.setattr(xcbench.run.session, "get_backend", lambda name: recording(ev))
    return ev


def cell(**kw) -> Cell:
    return Cell(id="sess", label="session test", backend="tmpfs", tmpfs_size=16 << 20, **kw)


def test_a_failing_gateway_start_cleans_the_target_up(tmp_path, events):
    # origins 0: start_gateway refuses it, after the target was prepared
    s = CellSession(cell(origins=0), cluster=None, workdir=tmp_path, procs=ProcessSet())
    with pytest.raises(XcbError, match="origins must be >= 1"):
        s.__enter__()
    assert events == ["prepare", "cleanup", "close"]
    assert not os.path.exists(s.backend.seen.path)


def test_teardown_is_the_reverse_of_setup_even_when_the_body_raises(tmp_path, events, monkeypatch):
    def fake_start(target, **kw):
        events.append("start")
        assert kw["name"] == "gw-x" and kw["report_addr"] == "127.0.0.1:9"
        return FakeGateway(events)

    monkeypatch.setattr(xcbench.run.session, "start_gateway", fake_start)
    with pytest.raises(RuntimeError, match="body"):
        with CellSession(cell(), cluster=None, workdir=tmp_path, procs=ProcessSet(), name="gw-x",
                         report_addr="127.0.0.1:9") as s:
            assert s.findings == [{"what": "x"}] and Path(s.target.path).is_dir()
            raise RuntimeError("body")
    assert events == ["prepare", "start", "stop", "cleanup", "close"]
    assert not os.path.exists(s.target.path)


def test_cleanup_runs_when_stopping_the_gateway_fails(tmp_path, events, monkeypatch):
    monkeypatch.setattr(xcbench.run.session, "start_gateway",
                        lambda target, **kw: FakeGateway(events, fail_stop=True))
    with pytest.raises(XcbError, match="stop failed"):
        with CellSession(cell(), cluster=None, workdir=tmp_path, procs=ProcessSet()) as s:
            pass
    assert events == ["prepare", "stop", "cleanup", "close"]
    assert not os.path.exists(s.target.path)


def test_without_gateway_verify_uses_the_backend_alone(tmp_path, events):
    with CellSession(cell(), cluster=None, workdir=tmp_path, procs=ProcessSet(), gateway=False) as s:
        assert s.gateway is None and s.findings == []
        ev = s.verify()
        assert ev["fstype"] == "tmpfs" and ev["path"] == s.target.path
    assert events == ["prepare", "cleanup", "close"]
