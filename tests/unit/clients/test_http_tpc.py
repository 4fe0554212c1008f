"""The one HTTP-TPC COPY (campaign client and smoke test): its headers for a pull and a push, the
markers' bytes and the final line read from the answer, and no ambient token where the caller
sends its own."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from xcbench.clients.base import Progress
from xcbench.clients.http_client import KeptAlive, tpc_headers


def test_pull_and_push_headers():
    pull = tpc_headers(source="https://a/f", streams=4, token="t0k")
    assert pull == {"Source": "https://a/f", "X-Number-Of-Streams": "4", "Overwrite": "T",
                    "Credential": "none", "TransferHeaderAuthorization": "Bearer t0k"}
    push = tpc_headers(destination="https://b/g", overwrite=False)
    assert push == {"Destination": "https://b/g", "Overwrite": "F", "Credential": "none"}
    for bad in ({}, {"source": "https://a/f", "destination": "https://b/g"}):
        with pytest.raises(ValueError):
            tpc_headers(**bad)


class _Active(BaseHTTPRequestHandler):
    """The active side of a COPY as XrdHttp answers it: 201, markers, a final line."""
    seen: list[dict] = []

    def do_COPY(self):  # noqa: N802 - the HTTP method's name
        type(self).seen.append(dict(self.headers))
        self.send_response(201)
        self.send_header("Connection", "close")
        self.end_headers()
        for n in (1000, 5000):
            self.wfile.write(f"Perf Marker\n\tStripe Bytes Transferred: {n}\nEnd\n".encode())
        self.wfile.write(b"success: Created\n")

    def log_message(self, *a):
        pass


def test_copy_reads_the_markers_and_the_final_line_and_sends_no_ambient_token(monkeypatch):
    monkeypatch.setenv("BEARER_TOKEN", "ambient-token")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Active)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_port}/dst"
        progress = Progress()
        reply = KeptAlive(env_token=False).copy(url, tpc_headers(source="http://x/src"),
                                                time.time() + 30, progress)
        assert (reply.status, reply.final, progress.transferred) == (201, "success: Created", 5000)
        assert "Authorization" not in _Active.seen[-1]
        KeptAlive().copy(url, tpc_headers(source="http://x/src"), time.time() + 30, Progress())
        assert _Active.seen[-1]["Authorization"] == "Bearer ambient-token"  # the campaign's way
    finally:
        srv.shutdown()
        srv.server_close()
