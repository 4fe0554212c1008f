"""Third-party copies between two tmpfs gateways: root TPC (xrdcp --tpc only) and HTTP-TPC."""

from __future__ import annotations

import pytest
import requests

from tests.integration.gwcheck import adler32_hex, gateway_checksum, make_file, xrdcp_put
from xcbench import proc
from xcbench.backends.tmpfs import BACKEND
from xcbench.cell import Cell
from xcbench.gateway import start_gateway
from xcbench.proc import ProcessSet

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def two_gateways(tmp_path_factory):
    wd = tmp_path_factory.mktemp("tpc")
    procs = ProcessSet()
    backend = BACKEND(None, wd, procs)
    targets = [backend.prepare(Cell(id=f"tpc{i}", label="tpc", backend="tmpfs", tmpfs_size=64 << 20))
               for i in (1, 2)]
    gws = []
    try:
        for t in targets:
            gws.append(start_gateway(t, workdir=wd, procs=procs))
        data = make_file(wd / "src.bin", 2 << 20, seed=7)
        xrdcp_put(gws[0], wd / "src.bin", "src.bin")
        yield gws[0], gws[1], adler32_hex(data)
    finally:
        for gw in gws:
            gw.stop()
        procs.stop_all()
        for t in targets:
            backend.cleanup(t)


def test_root_tpc(two_gateways):
    src, dst, want = two_gateways
    proc.run(["xrdcp", "--tpc", "only", "--nopbar", src.url("src.bin"), dst.url("root-tpc.bin")],
             timeout=60)
    assert gateway_checksum(dst, "root-tpc.bin") == want


@pytest.mark.parametrize("direction", ["pull", "push"])
def test_http_tpc(two_gateways, direction):
    src, dst, want = two_gateways
    name = f"http-tpc-{direction}.bin"
    if direction == "pull":  # COPY sent to the destination, which fetches the source
        r = requests.request("COPY", dst.url(name, "http"), timeout=60,
                             headers={"Source": src.url("src.bin", "http")})
    else:  # COPY sent to the source, which uploads to the destination
        r = requests.request("COPY", src.url("src.bin", "http"), timeout=60,
                             headers={"Destination": dst.url(name, "http")})
    assert r.status_code in (201, 202), r.text[-300:]
    assert "success" in r.text, r.text[-300:]
    assert gateway_checksum(dst, name) == want
