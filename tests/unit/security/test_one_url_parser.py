"""One URL parser decides where a request goes, for the secret policy and for the request:
``http://evil.example\\@127.0.0.1/`` is loopback to urllib and evil.example to requests, so no
parser's reading of it is taken (a URL two parsers could read differently is no URL a secret goes
to); whatever it accepts, urllib3 (requests) and urllib read the same host and port. The HTTP
client attaches the environment's bearer token only where a secret may go (verified TLS or
loopback), and refuses to carry an explicit credential anywhere else."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from urllib3.util import parse_url as urllib3_parse

from tests.support.peers import own_address
from xcbench.clients.base import TransferError
from xcbench.clients.http_client import KeptAlive
from xcbench.system.ports import is_loopback_url, parse_url
from xcbench.system.secrets_policy import transport_problem

TOKEN = "a-token-that-must-stay-here"
PIECES = st.sampled_from(["http://", "https://", "evil.example", "127.0.0.1", "localhost", "[::1]",
                          "@", "\\", "%40", ":", ":8446", "/", "?", "#", " ", "\t", "a", "..",
                          "user:pw@", "[", "]", "0x7f.1", "ＡＢ", ";", "//"])


@given(st.lists(PIECES, min_size=1, max_size=9).map("".join))
@example("http://evil.example\\@127.0.0.1/")
@example("http://evil.example%5C@127.0.0.1/")
@example("http://127.0.0.1:8446\\@evil.example/")
@example("http://user:pw@127.0.0.1/")
@example("http://127.0.0.1#@evil.example/")
def test_whatever_the_parser_accepts_every_parser_reads_alike(url):
    u = parse_url(url)
    if u is None:
        assert not is_loopback_url(url) and transport_problem(url) is not None
        return
    a = urllib3_parse(url)
    assert ((a.host or "").strip("[]").lower(), a.port) == (u.host, u.port), (url, a)
    b = urlsplit(url)
    assert ((b.hostname or ""), b.port) == (u.host, u.port), (url, b)


class _Ear(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_HEAD(self):  # noqa: N802 - http.server's name
        type(self).seen.append(dict(self.headers))
        self.send_response(200)
        self.send_header("Content-Length", "7")
        self.end_headers()

    def log_message(self, *a):
        pass


@pytest.fixture
def ear():
    _Ear.seen = []
    srv = ThreadingHTTPServer(("0.0.0.0", 0), _Ear)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_the_environments_token_goes_to_loopback_never_over_plain_http_elsewhere(ear, monkeypatch):
    monkeypatch.setenv("BEARER_TOKEN", TOKEN)
    client = KeptAlive()
    _, r = client._request("HEAD", f"http://127.0.0.1:{ear}/x", {}, 10)
    r.read()
    assert _Ear.seen[-1].get("Authorization") == f"Bearer {TOKEN}"
    there = own_address()
    if there is None:
        pytest.skip("this machine has no address other than loopback to listen on")
    _, r = client._request("HEAD", f"http://{there}:{ear}/x", {}, 10)
    r.read()
    assert len(_Ear.seen) == 2 and "Authorization" not in _Ear.seen[-1]
    for headers in ({"Authorization": "Bearer x"}, {"TransferHeaderAuthorization": "Bearer x"}):
        with pytest.raises(TransferError, match="a credential is not sent there"):
            client._request("HEAD", f"http://{there}:{ear}/x", headers, 10)
    assert len(_Ear.seen) == 2
    client.disconnect()


def test_a_url_two_parsers_read_differently_gets_no_request(ear, monkeypatch):
    monkeypatch.setenv("BEARER_TOKEN", TOKEN)
    for url in (f"http://evil.example\\@127.0.0.1:{ear}/", f"http://x@127.0.0.1:{ear}/"):
        with pytest.raises(TransferError, match="only plain http"):
            KeptAlive()._request("HEAD", url, {}, 10)
        assert transport_problem(url) is not None and not is_loopback_url(url)
    assert _Ear.seen == []
