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


@pytest.mark.parametrize("bind", ["0.0.0.0", "::", "[::]", "::0", "0:0::0", "::ffff:0.0.0.0",
                                  "10.77.0.1", "192.0.2.1", "::2"])
def test_a_matrix_binds_loopback_only(bind):
    """A wildcard in any spelling, and any address but loopback: one line naming bind (a gateway
    on another address comes from the operator's inventory)."""
    (fld, why), = check_bind(bind)
    assert fld == "bind" and ("every interface" in why if is_wildcard(bind) else "not a loopback" in why)


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost",
                                  "::ffff:127.0.0.1"])
def test_loopback_binds_pass(bind):
    assert check_bind(bind) == []


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
