"""A real local HTTP server speaking (a recorded slice of) the Prometheus API, which can also
misbehave on purpose: down, slow, errors, no series, garbage, or wanting credentials."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from xcbench.telemetry import promqueries as pq

DATA = Path(__file__).resolve().parents[1] / "data" / "prometheus"
ANSWERS = json.loads((DATA / "prometheus-2.42-answers.json").read_text())


class PromServer:
    """mode: replay | slow | error | empty | garbage; ``auth``: the Authorization header it
    wants (401 otherwise); ``delay``: seconds a slow answer takes."""

    def __init__(self, mode: str = "replay", auth: str | None = None, delay: float = 3.0):
        self.mode, self.auth, self.delay = mode, auth, delay
        self.requests: list[tuple[str, dict]] = []
        self.instant = dict(ANSWERS["instant"])  # query -> answer (a test may add its own)
        by_promql = {}
        from xcbench.telemetry import promqueries as pq
        for name, answer in ANSWERS["range"].items():
            by_promql[pq.promql(name, ANSWERS["step"])] = answer
        self.range = by_promql
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                u = urlsplit(self.path)
                params = {k: v[0] for k, v in parse_qs(u.query).items()}
                server.requests.append((u.path, params))
                if server.auth and self.headers.get("Authorization") != server.auth:
                    return self._send(401, {"status": "error", "errorType": "unauthorized",
                                            "error": "no valid credentials"})
                if server.mode == "slow":
                    time.sleep(server.delay)
                if server.mode == "error":
                    return self._send(503, {"status": "error", "errorType": "unavailable",
                                            "error": "TSDB not ready"})
                if server.mode == "garbage":
                    return self._send(200, "<html>a login page</html>", raw=True)
                self._send(200, server.answer(u.path, params))

            def _send(self, code, body, raw=False):
                data = (body if raw else json.dumps(body)).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "text/html" if raw else "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): what a slow server sees

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, path: str, params: dict) -> dict:
        empty_vec = {"status": "success", "data": {"resultType": "vector", "result": []}}
        if path == "/api/v1/status/config":
            return ANSWERS["config"]
        if path == "/api/v1/query":
            if self.mode == "empty":
                return empty_vec
            return self.instant.get(params.get("query"), empty_vec)
        if path == "/api/v1/query_range":
            if self.mode == "empty":
                return {"status": "success", "data": {"resultType": "matrix", "result": []}}
            return self.range.get(params.get("query"), {"status": "error", "errorType": "bad_data",
                                                        "error": "unknown query in the replay"})
        return {"status": "error", "errorType": "not_found", "error": path}

    def __enter__(self) -> PromServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


OSD_META = json.loads((DATA / "ceph-osd-metadata-16.2.15.json").read_text())


UNAME = ANSWERS["instant"][pq.UNAME]["data"]["result"]
