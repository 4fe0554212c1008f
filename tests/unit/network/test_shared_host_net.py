"""Wildcards by address semantics, and bearer tokens only where they cannot be read on the way."""

from __future__ import annotations

import pytest

from xcbench.errors import XcbError
from xcbench.system.ports import check_bind, cleartext_token_problem, is_wildcard


@pytest.mark.parametrize("bind", ["0.0.0.0", "::", "[::]", "::0", "0:0::0", "0000:0::0",
                                  "::ffff:0.0.0.0", "[::ffff:0.0.0.0]", "", "*", " :: "])
def test_every_spelling_of_a_wildcard_is_one(bind):
    assert is_wildcard(bind)


@pytest.mark.parametrize("bind", ["127.0.0.1", "::1", "10.77.0.1", "::ffff:127.0.0.1",
                                  "localhost", "0.0.0.1"])
def test_a_specific_address_is_not_a_wildcard(bind):
    assert not is_wildcard(bind)


@pytest.mark.parametrize("bind", ["::0", "0:0::0", "::ffff:0.0.0.0"])
def test_a_wildcard_spelled_otherwise_gets_the_wildcard_finding(bind):
    from xcbench.backends.base import backend_class
    from xcbench.gateway.misconfig import gateway_findings
    assert check_bind(bind) == []  # accepted as an address, and then treated as a wildcard:
    rows = gateway_findings("c1", backend_class("tmpfs"), bind=bind)
    assert any("all interfaces" in r["what"] for r in rows)
    assert not any("all interfaces" in r["what"]
                   for r in gateway_findings("c1", backend_class("tmpfs"), bind="127.0.0.1"))


@pytest.mark.parametrize("url,ok", [
    ("https://fts3.example.org:8446", True), ("http://fts3.example.org:8446", False),
    ("HTTP://192.0.2.5:8446", False), ("http://127.0.0.1:8446", True),
    ("http://[::1]:8446", True), ("http://localhost:8446", True),
    ("http://127.0.0.1.example.org:8446", False),
])
def test_a_bearer_token_goes_over_https_or_loopback_only(url, ok):
    assert (cleartext_token_problem(url) is None) == ok


def test_fts_connect_refuses_a_token_over_plain_http():
    from xcbench.scaleout.fts3 import connect
    with pytest.raises(XcbError, match=r"^fts3: http://fts\.example\.org:8446: http:// is not TLS: "
                                       r"a secret goes only over https://"):
        connect("http://fts.example.org:8446", token="tok-abcdef")
    with pytest.raises(XcbError, match="is not TLS"):  # the proxy it would delegate: the same
        connect("http://fts.example.org:8446", ucert="/tmp/x509up_u0", ukey="/tmp/x509up_u0")


def test_a_matrix_with_a_token_for_a_plain_http_endpoint_is_refused():
    from xcbench.scaleout.engine import engine_problems
    probs = engine_problems({"engine": "fts3", "fts": {"endpoint": "http://fts.example.org:8446",
                                                       "token_env": "FTS_TOKEN"}})
    assert [f for f, _ in probs] == ["fts.endpoint"] and "https://" in probs[0][1]
    ok = engine_problems({"engine": "fts3", "fts": {"endpoint": "http://fts.example.org:8446",
                                                    "cert": "/tmp/x509up_u0"}})
    assert ok == []  # an X509 proxy is not sent over the connection
