"""Security modes in the rendered xrootd config (no process): TLS required of capable clients
with the run's CA dir; scitokens adds the token authorization, ztn and the HTTP header mapping;
none keeps the self-signed certificate only for XrdHttp's TPC handler; macaroons adds XrdMacaroons
with an authdb; an unknown mode is refused."""

from __future__ import annotations

import pytest

from tests.support.gateway_config import xrootd
from xcbench.backends.base import Target
from xcbench.errors import XcbError
from xcbench.gateway.security import check_mode

TARGET = Target(cell_id="c1", backend="tmpfs", path="/mnt/t")


def test_none_has_no_tls_requirement_nor_tokens():
    cfg = xrootd(TARGET)
    assert "xrd.tlsca certfile cert.pem" in cfg
    assert not [ln for ln in cfg if ln.startswith(("xrootd.tls", "sec.", "ofs.authlib"))]
    # anonymous, and authorized all the same: the namespace only (xcbench.gateway.authz)
    assert "ofs.authorize 1" in cfg and "acc.authdb authdb" in cfg


def test_tls_requires_tls_of_capable_clients_with_the_runs_ca():
    cfg = xrootd(TARGET, security={"mode": "tls", "cadir": "/var/tmp/xcbsec-x/ca", "scitokens": None})
    assert "xrd.tlsca certdir /var/tmp/xcbsec-x/ca" in cfg and "xrootd.tls capable all" in cfg
    assert not [ln for ln in cfg if ln.startswith(("sec.", "ofs.authlib"))]


def test_scitokens_adds_token_authorization_for_both_protocols():
    cfg = xrootd(TARGET, security={"mode": "scitokens", "cadir": "/c", "scitokens": "/a/scitokens.cfg"})
    for line in ("ofs.authorize 1", "ofs.authlib libXrdAccSciTokens.so config=/a/scitokens.cfg",
                 "sec.protocol ztn", "sec.protbind * only ztn", "http.header2cgi Authorization authz",
                 "xrootd.tls capable all"):
        assert line in cfg


def test_macaroons_adds_the_macaroon_handler_and_an_authdb():
    cfg = xrootd(TARGET, security={"mode": "macaroons", "cadir": "/c", "scitokens": None,
                                   "macaroons": {"secret": "/a/macaroon.secret"}}, authdb="/a/authdb")
    for line in ("ofs.authorize 1", "acc.authdb /a/authdb", "ofs.authlib libXrdMacaroons.so",
                 "macaroons.secretkey /a/macaroon.secret", "http.exthandler xrdmacaroons libXrdMacaroons.so",
                 "http.header2cgi Authorization authz", "xrootd.tls capable all"):
        assert line in cfg
    assert not [ln for ln in cfg if ln.startswith("sec.protocol")]  # no ztn: root:// has no macaroon


def test_an_unknown_mode_is_refused():
    with pytest.raises(XcbError, match="not one of none, tls, scitokens, macaroons"):
        check_mode("x509")
    check_mode("macaroons")
