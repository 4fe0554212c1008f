"""A gateway's bind: an empty/null bind that reaches start_gateway listens on loopback (never
on every interface); a wildcard, in any spelling, or an address that is not loopback, given as a
cell's bind (a matrix's), is refused in one line before anything starts (a gateway serves its
namespace to whoever reaches it). (The matrix refuses them at load: tests/unit/inputs/test_bad_input.py.)"""

from __future__ import annotations

import pytest

from tests.support.gwcheck import listeners
from xcbench.backends.tmpfs import BACKEND
from xcbench.cell import Cell
from xcbench.errors import XcbError
from xcbench.gateway import start_gateway
from xcbench.system.proc import ProcessSet

pytestmark = pytest.mark.integration


def test_bind_null_is_loopback_and_a_wildcard_is_refused(tmp_path):
    procs = ProcessSet()
    backend = BACKEND(None, tmp_path, procs)
    target = backend.prepare(Cell(id="gwbind", label="x", backend="tmpfs", tmpfs_size=32 << 20))
    try:
        for bind in (None, ""):
            gw = start_gateway(target, workdir=tmp_path, procs=procs, name="bind",
                               tunables={"bind": bind})
            try:
                socks = listeners(gw.pids)
                assert socks and {a for a, _, _ in socks} <= {"127.0.0.1"}, socks
            finally:
                gw.stop()
        for bind in ("0.0.0.0", "::", "[::]", "10.9.8.7"):
            with pytest.raises(XcbError, match=r"^cell gwbind: gateway.bind: "):
                start_gateway(target, workdir=tmp_path, procs=procs, name="bind",
                              tunables={"bind": bind})
        with pytest.raises(XcbError, match="every interface"):
            start_gateway(target, workdir=tmp_path, procs=procs, name="bind", bind="0.0.0.0")
        assert not list(procs)
    finally:
        procs.stop_all()
        backend.cleanup(target)
