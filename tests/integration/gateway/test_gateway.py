"""A real xrootd gateway on a tmpfs target: clients, checksums, loopback binding, lifecycle."""

from __future__ import annotations

import os
import socket
import time

import pytest

from tests.support.gwcheck import listeners, upload_and_verify
from xcbench.backends.tmpfs import BACKEND
from xcbench.cell import Cell
from xcbench.errors import XcbError
from xcbench.gateway import start_gateway
from xcbench.system.proc import ProcessSet, pid_alive

pytestmark = pytest.mark.integration


def _mounted(path: str) -> bool:
    with open("/proc/self/mounts") as fh:
        return any(line.split()[1] == os.path.realpath(path) for line in fh)


@pytest.fixture
def tmpfs_target(tmp_path):
    procs = ProcessSet()
    backend = BACKEND(None, tmp_path, procs)
    target = backend.prepare(Cell(id="gwtest", label="gw test", backend="tmpfs", tmpfs_size=128 << 20))
    yield backend, target, procs
    procs.stop_all()
    backend.cleanup(target)


def test_clients_upload_read_back_and_checksums_match(tmpfs_gateway, tmp_path):
    evidence = upload_and_verify(tmpfs_gateway, "tmpfs", tmp_path / "client")
    assert evidence["gfal2_checksum"] == evidence["adler32"]
    assert tmpfs_gateway.findings == []  # loopback, tmpfs: nothing known-bad


def test_loopback_only_stop_and_cleanup_leave_nothing(tmp_path):
    procs = ProcessSet()
    backend = BACKEND(None, tmp_path, procs)
    target = backend.prepare(Cell(id="gwclean", label="x", backend="tmpfs", tmpfs_size=64 << 20))
    evidence = backend.verify(target)
    assert evidence["fstype"] == "tmpfs"
    gw = start_gateway(target, workdir=tmp_path, procs=procs)
    pids = gw.pids
    socks = listeners(pids)
    assert socks, "the gateway listens on nothing ss can see"
    assert {a for a, _, _ in socks} == {"127.0.0.1"}, socks
    assert gw.start_seconds > 0
    gw.stop()
    assert not [p for p in pids if pid_alive(p)], "xrootd still running after stop()"
    assert list(procs) == []
    for path in gw.config_paths + gw.log_paths:
        assert path.exists() and path.is_relative_to(tmp_path), path
    assert "initialization completed" in gw.log_paths[0].read_text()
    backend.cleanup(target)
    assert not os.path.exists(target.path) and not _mounted(target.path)


def test_report_addr_gets_summary_packets(tmpfs_target, tmp_path):
    backend, target, procs = tmpfs_target
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        udp.settimeout(10)
        addr = f"127.0.0.1:{udp.getsockname()[1]}"
        with start_gateway(target, workdir=tmp_path, procs=procs, report_addr=addr) as gw:
            assert f"xrd.report {addr} every 1s all" in gw.config_paths[0].read_text()
            data, _ = udp.recvfrom(65536)
    assert b"<statistics" in data


def test_failed_start_names_the_log_lines(tmpfs_target, tmp_path):
    backend, target, procs = tmpfs_target
    t0 = time.monotonic()
    with pytest.raises(XcbError) as err:
        start_gateway(target, workdir=tmp_path, procs=procs, tunables={"buffers_maxbsz": 1})
    msg = str(err.value)
    assert "maxbz value 1" in msg and "initialization failed" in msg and "cell gwtest" in msg
    assert time.monotonic() - t0 < 20
    assert list(procs) == []


def test_cli_gateway_up_down(tmp_path):
    import json
    import sys
    from pathlib import Path

    from xcbench.matrix import load_matrix
    from xcbench.system import proc
    quick = Path(__file__).resolve().parents[3] / "layouts" / "quick.yaml"
    cell = next(c for c in load_matrix(quick).cells if c.backend == "tmpfs")
    wd = tmp_path / "cli"
    cli = [sys.executable, "-m", "xcbench", "gateway"]
    out = proc.run(cli + ["up", "--matrix", quick, "--cell", cell.id, "--workdir", wd], timeout=120).stdout
    assert "root://" in out
    state = json.loads((wd / "gateway.json").read_text())
    pids = [s["pid"] for s in state["gateway"]["servers"]]
    target = state["target"]["path"]
    assert all(pid_alive(p) for p in pids) and _mounted(target)
    again = proc.run(cli + ["up", "--matrix", quick, "--cell", cell.id, "--workdir", wd], check=False)
    assert again.returncode == 2 and "already up" in again.stderr and "Traceback" not in again.stderr
    proc.run(cli + ["down", "--workdir", wd], timeout=120)
    assert not [p for p in pids if pid_alive(p)]
    assert not os.path.exists(target) and not (wd / "gateway.json").exists()
    assert (Path(state["gateway"]["keep_dir"]) / "xcb-xrootd.log").exists()


def test_a_start_killed_by_a_signal_is_retried_and_recorded(tmp_path, monkeypatch):
    """XrdCeph 5.5 segfaulted now and then while starting: a start that dies by a signal is
    retried, and the gateway's findings say so. Here the first xrootd really gets SIGSEGV."""
    import signal

    import xcbench.gateway.launch as gateway_mod
    from tests.support.gwcheck import (
        adler32_hex,
        gateway_checksum,
        make_file,
        tmpfs_gateways,
        xrdcp_put,
    )
    real_wait, crashed = gateway_mod.wait_server, []

    def crash_the_first(gw, s, deadline):
        if not crashed and s.daemon == "xrootd":
            crashed.append(s.proc.pid)
            os.kill(s.proc.pid, signal.SIGSEGV)
            s.proc.popen.wait(10)
        return real_wait(gw, s, deadline)

    monkeypatch.setattr(gateway_mod, "wait_server", crash_the_first)
    with tmpfs_gateways(tmp_path, ("crash",)) as (gw,):
        assert crashed and gw.servers[0].proc.pid != crashed[0]
        (f,) = [f for f in gw.findings if f["what"] == "xrootd crashed while starting"]
        assert "killed by signal 11" in f["why"]
        data = make_file(tmp_path / "f.bin", 1 << 20, seed=3)
        xrdcp_put(gw, tmp_path / "f.bin", "f.bin")
        assert gateway_checksum(gw, "f.bin") == adler32_hex(data)
