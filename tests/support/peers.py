"""Small real peers on 127.0.0.1 for the tests of what xcbench takes from outside: a TCP
listener that counts connections (did anything get sent?) and an HTTP server whose answers a
test writes byte by byte (hostile Prometheus and FTS servers)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def own_address() -> str | None:
    """An address of this machine that is not loopback (None without one): a URL with it is
    not loopback by the rule, yet a listener here still sees what is sent to it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this picks the source address
            ip = s.getsockname()[0]
        except OSError:
            return None
    return None if ip.startswith("127.") else ip


class Listener:
    """A TCP listener on every address that counts the connections it is offered."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            c.close()

    def __enter__(self) -> Listener:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.3)  # a connection attempt still under way is counted
        self._stop.set()
        self._t.join(2)
        self.sock.close()


Answer = Callable[[Any], None]  # writes the whole answer to the handler (its wfile)


class HttpPeer:
    """ThreadingHTTPServer on 127.0.0.1 answering GET/POST/DELETE with ``answer(handler)``."""

    def __init__(self, answer: Answer):
        peer = self
        self.requests: list[tuple[str, str, dict]] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _any(self):
                peer.requests.append((self.command, self.path, dict(self.headers)))
                try:
                    answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_DELETE = do_PUT = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._t = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HttpPeer:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def send(h: Any, body: bytes, code: int = 200, headers: dict | None = None) -> None:
    h.send_response(code)
    for k, v in {"Content-Type": "application/json", "Content-Length": str(len(body)),
                 **(headers or {})}.items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)


def trickle(h: Any, every: float = 0.3, stop: threading.Event | None = None) -> None:
    """Headers at once, then one byte of a body that never ends, every ``every`` seconds."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.end_headers()
    h.wfile.write(b'{"status": "success", "data": ')
    h.wfile.flush()
    while stop is None or not stop.is_set():
        time.sleep(every)
        h.wfile.write(b" ")
        h.wfile.flush()


def endless(h: Any) -> None:
    """An answer that never stops coming (no Content-Length): 64 KiB after 64 KiB."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.end_headers()
    chunk = b"[" + b"0," * 32767
    for _ in range(100_000):
        h.wfile.write(chunk)
