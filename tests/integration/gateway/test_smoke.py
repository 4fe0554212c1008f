"""xcbench smoke against real gateways: every check passes against a scitokens gateway (and a
tls one, with roots:// TPC); it fails, naming the check, against a gateway without its TPC
handler and with a token that lacks the write scope; read-only without --write-path; the token
never appears in what it prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.gwcheck import tmpfs_gateways, xrootd_workdir
from xcbench.cli import main
from xcbench.gateway.security import READ_SCOPES, WRITE_SCOPES, RunSecurity

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sec():
    s = RunSecurity()
    yield s
    s.close()


def _smoke(capsys, gw, *extra):
    rc = main(["smoke", gw.url("", "https").rstrip("/") + "/", "--json", *extra])
    out = capsys.readouterr().out
    return rc, {c["name"]: c for c in json.loads(out)}, out


def test_all_checks_pass_against_a_scitokens_gateway(sec, capsys):
    tok = sec.token_file(WRITE_SCOPES)
    with xrootd_workdir("xcb-smoke-") as wd, \
            tmpfs_gateways(wd, ("smoke-tok",), security="scitokens", run_security=sec) as (gw,):
        rc, checks, out = _smoke(capsys, gw, "--token-file", str(tok), "--ca-dir", str(sec.cadir),
                                 "--write-path", "/")
        assert rc == 0, out
        for name in ("stat", "upload", "stat-file", "checksum", "download", "tpc-pull", "tpc-push", "delete"):
            assert checks[name]["status"] == "pass", checks[name]
        assert checks["roots-tpc"]["status"] == "skip"
        assert "201" in checks["tpc-pull"]["answer"] and "success" in checks["tpc-pull"]["answer"]
        assert tok.read_text() not in out
        assert not list(Path(gw.target.path).glob("xcb-smoke-*"))  # it removed what it wrote
        # a token without the write scope: the upload fails, and says the server's answer
        rc, checks, out = _smoke(capsys, gw, "--token-file", str(sec.token_file(READ_SCOPES)),
                                 "--ca-dir", str(sec.cadir), "--write-path", "/")
        assert rc == 1 and checks["upload"]["status"] == "fail" and "403" in checks["upload"]["answer"]
        assert checks["tpc-pull"]["status"] == "skip"
        # read-only without --write-path: stat only, the rest skipped
        rc, checks, out = _smoke(capsys, gw, "--token-file", str(tok), "--ca-dir", str(sec.cadir))
        assert rc == 0 and checks["stat"]["status"] == "pass"
        assert {c["status"] for n, c in checks.items() if n != "stat"} == {"skip"}


def test_a_gateway_without_its_tpc_handler_fails_the_tpc_checks_by_name(sec, capsys):
    with xrootd_workdir("xcb-smoke-") as wd, \
            tmpfs_gateways(wd, ("smoke-notpc",), security="tls", run_security=sec,
                           tunables={"tpc": False}) as (gw,):
        rc, checks, out = _smoke(capsys, gw, "--ca-dir", str(sec.cadir), "--write-path", "/",
                                 "--xroot", gw.root_url)
        assert rc == 1
        assert checks["upload"]["status"] == "pass" and checks["checksum"]["status"] == "pass"
        assert checks["tpc-pull"]["status"] == "fail" and checks["tpc-push"]["status"] == "fail"
        assert checks["roots-tpc"]["status"] == "fail"
        assert checks["delete"]["status"] == "pass"
        rc = main(["smoke", gw.url("", "https"), "--ca-dir", str(sec.cadir), "--write-path", "/"])
        text = capsys.readouterr().out
        assert "FAIL  tpc-pull" in text and "failed: tpc-pull, tpc-push" in text


def test_roots_tpc_passes_against_a_tls_gateway(sec, capsys):
    with xrootd_workdir("xcb-smoke-") as wd, \
            tmpfs_gateways(wd, ("smoke-tls",), security="tls", run_security=sec) as (gw,):
        rc, checks, out = _smoke(capsys, gw, "--ca-dir", str(sec.cadir), "--write-path", "/",
                                 "--xroot", gw.root_url)
        assert rc == 0, out
        assert checks["roots-tpc"]["status"] == "pass", checks["roots-tpc"]


def test_bad_input_is_one_line_before_any_request(tmp_path, capsys):
    assert main(["smoke", "ftp://example.org/x"]) == 2
    err = capsys.readouterr().err
    assert "https:// or davs://" in err and err.count("\n") == 1
    assert main(["smoke", "https://localhost:1/", "--token-file", str(tmp_path / "none")]) == 2
    assert "--token-file" in capsys.readouterr().err


def test_smoke_against_a_scitokens_cell_brought_up_by_gateway_up(tmp_path):
    """The way a user does it: `gateway up` of a scitokens cell prints what clients need (paths,
    never a token); `smoke` with them passes; `gateway down` removes the CA, keys and tokens."""
    import os
    import sys

    from xcbench.system import proc
    m = tmp_path / "up.yaml"
    m.write_text("name: up\ndefaults: {concurrency: [1], files: 2, file_size: 1M, security: [scitokens]}\n"
                 "backends: {tmpfs: {size: 64M}}\n")
    from xcbench.matrix import load_matrix
    cell = load_matrix(m).cells[0]
    wd = tmp_path / "gw"
    cli = [sys.executable, "-m", "xcbench"]
    out = proc.run(cli + ["gateway", "up", "--matrix", m, "--cell", cell.id, "--workdir", wd], timeout=120).stdout
    state = json.loads((wd / "gateway.json").read_text())
    sec_dir = Path(state["security_dir"])
    try:
        need = dict(kv.split("=", 1) for kv in out.split("clients need: ", 1)[1].splitlines()[0].split())
        assert set(need) == {"X509_CERT_DIR", "BEARER_TOKEN_FILE"}
        assert Path(need["BEARER_TOKEN_FILE"]).read_text() not in out  # a path, not the token
        https = state["gateway"]["http_url"]
        assert https.startswith("https://")
        res = proc.run(cli + ["smoke", https + "/", "--write-path", "/"], env=need, timeout=300, check=False)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "PASS  tpc-pull" in res.stdout and "PASS  delete" in res.stdout
    finally:
        proc.run(cli + ["gateway", "down", "--workdir", wd], timeout=120)
    assert not sec_dir.exists() and not os.path.exists(state["target"]["path"])
