"""Third-party copies between two tmpfs gateways: root TPC (xrdcp --tpc only) and HTTP-TPC."""

from __future__ import annotations

import pytest
import requests

from tests.support.gwcheck import (
    adler32_hex,
    gateway_checksum,
    make_file,
    tmpfs_gateways,
    xrdcp_put,
)
from xcbench.system import proc

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def two_gateways(tmp_path_factory):
    wd = tmp_path_factory.mktemp("tpc")
    with tmpfs_gateways(wd, ("tpc1", "tpc2")) as (src, dst):
        data = make_file(wd / "src.bin", 2 << 20, seed=7)
        xrdcp_put(src, wd / "src.bin", "src.bin")
        yield src, dst, adler32_hex(data)


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
