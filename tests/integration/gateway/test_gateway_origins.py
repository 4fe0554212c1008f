"""N origins behind a real cmsd redirector: every origin gets files; clients see one gateway."""

from __future__ import annotations

import os
import socket
import time

import pytest

from tests.support.gwcheck import listeners, make_file, upload_and_verify
from xcbench.backends.tmpfs import BACKEND
from xcbench.cell import Cell
from xcbench.gateway import start_gateway
from xcbench.system import proc
from xcbench.system.proc import ProcessSet, pid_alive

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster_gateway(tmp_path_factory):
    wd = tmp_path_factory.mktemp("origins")
    procs = ProcessSet()
    backend = BACKEND(None, wd, procs)
    target = backend.prepare(Cell(id="orig2", label="origins", backend="tmpfs", tmpfs_size=128 << 20))
    try:
        with start_gateway(target, workdir=wd, procs=procs, origins=2) as gw:
            yield gw, wd
    finally:
        procs.stop_all()
        backend.cleanup(target)


def _non_loopback_addr() -> str | None:
    """An IPv4 address of this host that is not loopback (None if there is none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a source address
            addr = s.getsockname()[0]
        except OSError:
            return None
    return None if addr.startswith("127.") else addr


def test_both_origins_receive_files(cluster_gateway):
    gw, wd = cluster_gateway
    assert len(gw.origins) == 2 and gw.findings  # the redirector finding
    src = wd / "many"
    src.mkdir()
    for i in range(6):
        make_file(src / f"f{i}.bin", 256 << 10, seed=i)
    # in parallel: each new file waits for the cmsd query deadline (1 s)
    ps = [proc.spawn(["xrdcp", "--nopbar", src / f"f{i}.bin", gw.url(f"many/f{i}.bin")])
          for i in range(6)]
    assert [p.popen.wait(timeout=120) for p in ps] == [0] * 6
    counts = [len([f for _, _, fs in os.walk(o.localroot) for f in fs if f.startswith("f")])
              for o in gw.origins]
    assert sum(counts) == 6 and all(c > 0 for c in counts), counts
    back = wd / "back.bin"
    proc.run(["xrdcp", "-f", "--nopbar", gw.url("many/f3.bin"), back], timeout=60)
    assert back.read_bytes() == (src / "f3.bin").read_bytes()


def test_clients_through_the_redirector(cluster_gateway, tmp_path):
    gw, _ = cluster_gateway
    upload_and_verify(gw, "tmpfs", tmp_path, size=1 << 20, prefix="redir")


def test_only_fenced_listeners_off_loopback(cluster_gateway):
    gw, _ = cluster_gateway
    cmsd_servers = {s.pid for s in gw.servers if s.daemon == "cmsd" and s.role == "server"}
    socks = listeners(gw.pids)
    assert {pid for _, _, pid in socks} == set(gw.pids)
    wide = [(a, port, pid) for a, port, pid in socks if a != "127.0.0.1"]
    # XrdCmsConfig forces an origin's cmsd onto an ephemeral wildcard port: nothing else may be
    assert {pid for _, _, pid in wide} <= cmsd_servers, wide
    addr = _non_loopback_addr()
    if addr is None or not wide:
        return
    # ... and xrd.allow refuses a connection from another interface at accept
    _, port, pid = wide[0]
    with socket.create_connection((addr, port), timeout=5, source_address=(addr, 0)) as s:
        s.settimeout(5)
        try:
            s.sendall(b"\0" * 20)
            assert s.recv(16) == b""
        except ConnectionResetError:
            pass
    log = next(s.log for s in gw.servers if s.pid == pid)
    deadline = time.monotonic() + 5
    while "permission denied" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f"Unable to accept TCP connection from [::ffff:{addr}]; permission denied" in log.read_text()


def test_stop_leaves_no_process(tmp_path):
    procs = ProcessSet()
    backend = BACKEND(None, tmp_path, procs)
    target = backend.prepare(Cell(id="orig3", label="x", backend="tmpfs", tmpfs_size=64 << 20))
    try:
        gw = start_gateway(target, workdir=tmp_path, procs=procs, origins=3)
        pids = gw.pids
        assert len(pids) == 8  # manager cmsd + xrootd, 3 x (cmsd + xrootd)
        gw.stop()
        assert not [p for p in pids if pid_alive(p)]
    finally:
        procs.stop_all()
        backend.cleanup(target)
