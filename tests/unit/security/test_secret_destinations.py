"""A secret goes only over verified TLS or loopback, and only where the operator said: every way
a matrix could send one away is one line, exit 2, before anything starts, and nothing reaches a
listener at the address the matrix names."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.support.peers import Listener, own_address
from xcbench import cli
from xcbench.errors import XcbError
from xcbench.system.secrets_policy import transport_problem
from xcbench.telemetry.promapi import PromClient, PromError

TMPFS = {"name": "s", "defaults": {"concurrency": [1], "file_size": "1M", "files": 2},
         "backends": {"tmpfs": {"size": ["64M"]}}}
HERE = {"here": {"roles": ["client", "gateway"], "transport": "local"}}
ADDR = own_address()
needs_address = pytest.mark.skipif(ADDR is None, reason="this machine has no address other than "
                                   "loopback to listen on as a remote endpoint")


def _token(tmp_path: Path) -> Path:
    f = tmp_path / "token"
    f.write_text("a-token-that-must-stay-here\n")
    f.chmod(0o600)
    return f


def _fts(url: str, **kw) -> dict:
    m = copy.deepcopy(TMPFS)
    m["defaults"].update(modes=["tpc-http"])
    m["defaults"]["campaign"] = {"engine": "fts3", "fts": {"endpoint": url, **kw}}
    return m


def _ways(tmp_path: Path, port: int) -> dict[str, tuple[dict, str]]:
    """name -> (matrix, what its one line says)."""
    tok = _token(tmp_path)
    loop = f"http://127.0.0.1:{port}"
    remote = f"http://{ADDR}:{port}"
    hosts_file = tmp_path / "site.yaml"
    hosts_file.write_text(yaml.safe_dump({"hosts": HERE, "prometheus": {
        "url": f"https://{ADDR}:{port}", "auth": f"bearer:{tok}"}}))
    return {
        "prometheus auth": ({**TMPFS, "prometheus": {"url": loop, "auth": f"bearer:{tok}"}},
                            "prometheus: auth: a matrix names no credential"),
        "inline hosts prometheus": ({**TMPFS, "hosts": {"hosts": HERE, "prometheus": {
            "url": f"https://{ADDR}:{port}", "auth": f"basic:{tok}"}}},
            "hosts: prometheus: auth: a matrix names no credential"),
        "hosts file prometheus": ({**TMPFS, "hosts": "site.yaml"},
                                  "site.yaml: prometheus: auth: a matrix names no credential"),
        "ssh host": ({**TMPFS, "hosts": {"hosts": {**HERE, "g2": {
            "roles": ["gateway"], "transport": "ssh", "ssh": f"root@{ADDR}",
            "address": ADDR}}}}, "host g2: transport: ssh: an ssh host receives the gateway keyring"),
        "ceph keyring": ({**TMPFS, "hosts": {"hosts": HERE, "ceph": {
            "conf": "/etc/ceph/ceph.conf", "id": "admin"}}}, "hosts: ceph: which cluster's keyring"),
        "fts cleartext": (_fts(remote, token_file=str(tok)), "fts.endpoint: http://"),
        "fts cert cleartext": (_fts(remote, cert=str(tok)), "campaign.fts.endpoint: http://"),
        "fts no verify": (_fts(f"https://{ADDR}:{port}", token_file=str(tok), verify=False),
                          "campaign.fts.verify: https://"),
        "fts cert no verify": (_fts(f"https://{ADDR}:{port}", cert=str(tok), verify=False),
                               "TLS verification is off"),
    }


WAYS = ["prometheus auth", "inline hosts prometheus", "hosts file prometheus", "ssh host",
        "ceph keyring", "fts cleartext", "fts cert cleartext", "fts no verify", "fts cert no verify"]


@needs_address
@pytest.mark.parametrize("way", WAYS)
def test_a_matrix_cannot_send_a_secret_away(tmp_path, capsys, way):
    with Listener() as ear:
        matrix, says = _ways(tmp_path, ear.port)[way]
        f = tmp_path / "m.yaml"
        f.write_text(yaml.safe_dump(matrix, sort_keys=False))
        store = tmp_path / "store"
        code = cli.main(["run", str(f), "--store", str(store), "--no-baseline", "--no-report",
                         "--no-probes", "--telemetry", "none"])
        err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0], err
    named = tmp_path / "site.yaml" if way == "hosts file prometheus" else f
    assert str(named) in err[0] and says in err[0], err[0]
    assert ear.connections == 0  # nothing sent
    assert not store.exists() or not any(store.iterdir())  # nothing started


@needs_address
def test_the_command_line_cannot_send_a_token_in_clear_either(tmp_path, capsys):
    tok = _token(tmp_path)
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump(TMPFS))
    with Listener() as ear:
        code = cli.main(["run", str(f), "--store", str(tmp_path / "s"), "--no-baseline",
                         "--prometheus", f"http://{ADDR}:{ear.port}",
                         "--prometheus-auth", f"bearer:{tok}"])
        err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "is not TLS" in err[0], err
    assert ear.connections == 0


@needs_address
def test_the_prometheus_client_itself_never_sends_credentials_on_an_unverified_path():
    with Listener() as ear:
        c = PromClient(f"http://{ADDR}:{ear.port}", ("bearer", "a-token-that-must-stay-here"))
        with pytest.raises(PromError, match="credentials not sent"):
            c.query("up")
        anon = PromClient(f"http://{ADDR}:{ear.port}", None, timeout=1)  # no secret: may go
        with pytest.raises(PromError):
            anon.query("up")
    assert ear.connections == 1  # only the one without credentials


def test_the_rule():
    assert transport_problem("https://prom.example:9090") is None
    assert transport_problem("https://prom.example:9090", "/etc/ssl/ca.pem") is None
    assert transport_problem("http://127.0.0.1:9090") is None
    assert transport_problem("http://[::1]:9090", False) is None
    assert transport_problem("http://localhost:9090") is None
    assert "not TLS" in transport_problem("http://prom.example:9090")
    assert "not TLS" in transport_problem("http://127.0.0.1.evil.example:9090")
    assert "verification is off" in transport_problem("https://prom.example", False)
    with pytest.raises(XcbError, match="fts3: https://fts.example:8446: TLS verification is off"):
        from xcbench.scaleout.fts3 import connect
        connect("https://fts.example:8446", token="t0ken-x", verify=False)


@needs_address
def test_smoke_sends_its_token_only_over_verified_tls_or_loopback(tmp_path, capsys):
    tok = _token(tmp_path)
    with Listener() as ear:
        code = cli.main(["smoke", f"http://{ADDR}:{ear.port}/", "--token-file", str(tok)])
        err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "smoke: " in err[0] and "is not TLS" in err[0], err
    assert ear.connections == 0


def test_a_matrix_alone_sends_no_fts_credential_even_to_loopback(tmp_path, capsys):
    """The FTS endpoint that receives the token must be named by the operator (--fts-endpoint);
    without it, or with another, one line, exit 2, no connection."""
    tok = _token(tmp_path)
    with Listener() as ear:
        url = f"http://127.0.0.1:{ear.port}"
        f = tmp_path / "m.yaml"
        f.write_text(yaml.safe_dump(_fts(url, token_file=str(tok))))
        argv = ["run", str(f), "--store", str(tmp_path / "s"), "--no-baseline", "--no-report"]
        codes = [cli.main(argv), cli.main([*argv, "--fts-endpoint", f"http://127.0.0.1:{ear.port + 1}"])]
        err = capsys.readouterr().err.strip().splitlines()
    assert codes == [2, 2] and len(err) == 2, err
    for line in err:
        assert line.startswith(f"xcbench: error: {f}: cell tmpfs 64M o1 tpc-http (")
        assert f"campaign.fts.endpoint: {url} would receive the FTS credential" in line
        assert f"--fts-endpoint {url}" in line
    assert ear.connections == 0


def _include_only(url: str, tok: Path, kind: str = "token_file") -> dict:
    """A matrix whose only FTS section (with its credential) is in an include: entry."""
    m = copy.deepcopy(TMPFS)
    m["defaults"].update(modes=["tpc-http"])
    m["include"] = [{"backend": "tmpfs", "size": "32M", "campaign": {
        "engine": "fts3", "fts": {"endpoint": url, kind: str(tok)}}}]
    return m


def test_an_fts_section_only_in_include_sends_nothing_unless_named(tmp_path, capsys):
    """include: entries carry campaign: too; the check reads every cell's merged section:
    `run` and `confirm` refuse in one line (exit 2), and the loopback listener the entry names
    receives nothing; over plain http to another host, `matrix check` refuses it too."""
    from xcbench.selftest.confirm import _operator_named
    tok = _token(tmp_path)
    with Listener() as ear:
        url = f"http://127.0.0.1:{ear.port}"
        f = tmp_path / "m.yaml"
        f.write_text(yaml.safe_dump(_include_only(url, tok)))
        code = cli.main(["run", str(f), "--store", str(tmp_path / "s"), "--no-baseline",
                         "--no-report"])
        err = capsys.readouterr().err.strip().splitlines()
        with pytest.raises(XcbError, match=r"cell tmpfs 32M o1 tpc-http \(\w+\): campaign.fts.endpoint: "
                           + url.replace(".", r"\.") + " would receive"):
            _operator_named(_include_only(url, tok), "m.yaml", ())
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"xcbench: error: {f}: cell tmpfs 32M o1 tpc-http (") and url in err[0]
    assert ear.connections == 0
    # the X509 proxy the fts3 client delegates, over plain http to another host
    f.write_text(yaml.safe_dump(_include_only("http://fts.example:8446", tok, "cert")))
    assert cli.main(["matrix", "check", str(f)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "cell tmpfs 32M o1 tpc-http (" in line and "campaign.fts.endpoint: http://fts.example" in line


def test_the_operator_names_the_fts_endpoint():
    from xcbench.matrix.expand import expand
    from xcbench.matrix.schema import _Errors
    from xcbench.system.secrets_policy import fts_endpoint_problems

    def cells(m):
        return expand(m, "m.yaml", _Errors("m.yaml"))
    m = _fts("https://fts.example:8446/", token_env="FTS_TOKEN")
    m["include"] = [{"backend": "tmpfs", "size": "32M", "campaign": {
        "engine": "fts3", "fts": {"endpoint": "https://other:8446", "cert": "/p"}}}]
    assert len(fts_endpoint_problems(cells(m), "m.yaml", [])) == 2
    assert fts_endpoint_problems(cells(m), "m.yaml", ["https://FTS.example:8446", "https://other:8446/"]) == []
    no_credential = _fts("https://fts.example:8446")  # nothing secret goes: nothing to name
    assert fts_endpoint_problems(cells(no_credential), "m.yaml", []) == []
