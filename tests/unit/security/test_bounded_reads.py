"""The last unbounded reads, bounded: a gateway agent's stderr (another host writes it) is kept
up to a cap and the rest drained; one silent connection to the token issuer stops nobody else
(its TLS handshake runs in the connection's own thread, with a deadline); the monitoring stack's
readiness GET is bounded in time and size and goes to the URL itself, never to a proxy a variable
names."""

from __future__ import annotations

import socket
import sys
import time

import pytest
import requests

from tests.support.peers import HttpPeer, Listener, endless, trickle
from xcbench.ceph import monitoring
from xcbench.errors import XcbError
from xcbench.system import proc


def test_a_spawned_log_with_a_cap_keeps_the_cap_and_the_child_never_blocks(tmp_path):
    log = tmp_path / "agent.log"
    code = "import sys\nfor _ in range(512): sys.stderr.write('e' * 8192)\nprint('done')"
    p = proc.spawn([sys.executable, "-c", code], log=log, pipe=True, log_cap=64 << 10)
    assert p.popen.stdout is not None and p.popen.stdout.read().strip() == b"done"
    assert p.popen.wait(timeout=60) == 0
    deadline = time.monotonic() + 10
    while "output cut" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    text = log.read_text()
    kept, _, said = text.partition("\n[xcbench: ")
    assert kept == "e" * (64 << 10) and said.startswith("output cut at 65,536 bytes")
    proc.stop(p)


def test_one_silent_connection_does_not_stop_the_token_issuer(tmp_path):
    pytest.importorskip("cryptography")
    from xcbench.gateway.security import RunSecurity
    sec = RunSecurity(base=tmp_path)
    try:
        url = sec.issuer.url
        port = int(url.rsplit(":", 1)[1])
        silent = socket.create_connection(("127.0.0.1", port))  # no TLS hello, ever
        try:
            t0 = time.monotonic()
            r = requests.get(f"{url}/jwks", verify=str(sec.ca_cert), timeout=5)
            assert r.status_code == 200 and r.json()["keys"] and time.monotonic() - t0 < 5
        finally:
            silent.close()
    finally:
        sec.close()


def test_the_readiness_get_is_bounded_and_ignores_proxy_variables(monkeypatch):
    with Listener() as proxy:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        for answer in (endless, trickle):
            with HttpPeer(answer) as peer:
                t0 = time.monotonic()
                with pytest.raises(XcbError, match="does not scrape its targets in time"):
                    monitoring.wait_scraped(peer.url, ("node",), time.monotonic() + 1.5)
                assert time.monotonic() - t0 < 10 and peer.requests
    assert proxy.connections == 0
