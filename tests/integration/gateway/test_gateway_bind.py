"""A gateway's bind: an empty/null bind that reaches start_gateway listens on loopback (never
on every interface); a written-out wildcard listens everywhere and is reported as a finding.
(The matrix refuses an empty or null bind at load: tests/unit/inputs/test_bad_input.py.)"""

from __future__ import annotations

import pytest

from tests.support.gwcheck import listeners
from xcbench.backends.tmpfs import BACKEND
from xcbench.cell import Cell
from xcbench.gateway import start_gateway
from xcbench.system.proc import ProcessSet

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("bind, addrs, wildcard", [(None, {"127.0.0.1"}, False),
                                                   ("", {"127.0.0.1"}, False),
                                                   ("0.0.0.0", {"0.0.0.0", "*"}, True)])
def test_bind_null_is_loopback_and_a_wildcard_is_a_finding(tmp_path, bind, addrs, wildcard):
    procs = ProcessSet()
    backend = BACKEND(None, tmp_path, procs)
    target = backend.prepare(Cell(id="gwbind", label="x", backend="tmpfs", tmpfs_size=32 << 20))
    try:
        gw = start_gateway(target, workdir=tmp_path, procs=procs, name="bind",
                           tunables={"bind": bind})
        try:
            socks = listeners(gw.pids)
            assert socks and {a for a, _, _ in socks} <= addrs, socks
            found = [f for f in gw.findings if "all interfaces" in f["what"]]
            assert bool(found) is wildcard, gw.findings
        finally:
            gw.stop()
    finally:
        procs.stop_all()
        backend.cleanup(target)
