"""Security modes on real gateways: a scitokens gateway takes only a token with the write scope
for writes (HTTP and roots://), delegates to a secure source in an HTTP-TPC pull, trusts only the
run's CA; and a run of none/tls/scitokens cells verifies every transfer and writes no token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import requests

from tests.support.gwcheck import tmpfs_gateways, xrootd_workdir
from xcbench.gateway.security import READ_SCOPES, WRITE_SCOPES, RunSecurity
from xcbench.store.rundir import RunDir

pytestmark = pytest.mark.integration

JWT_HEADER = "eyJhbGciOiJFUzI1NiIs"  # base64 of '{"alg":"ES256",': the start of every token we mint
MACAROON_HEAD = "MDAxNWxvY2F0aW9u"  # base64 of '0015location': the start of every macaroon here


@pytest.fixture
def sec():
    s = RunSecurity()
    yield s
    s.close()
    assert not s.dir.exists()  # keys and tokens gone with it


def _put(url, data, token=None, ca=None):
    h = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.put(url, data=data, headers=h, verify=ca, timeout=60)


def test_scitokens_gateway_checks_the_scope_and_delegates_in_tpc(sec):
    rw = sec.token_file(WRITE_SCOPES).read_text()
    ro = sec.token_file(READ_SCOPES).read_text()
    ca = str(sec.ca_cert)
    data = os.urandom(1 << 20)
    with xrootd_workdir("xcb-sec-") as wd, \
            tmpfs_gateways(wd, ("sec-src", "sec-dst"), security="scitokens", run_security=sec) as (src, dst):
        assert src.root_url.startswith("roots://") and dst.http_url.startswith("https://")
        url = src.url("f.bin", "https")
        small = b"x" * 1024  # a refused PUT: a body in one send (the server answers, then closes)
        assert _put(url, small, ca=ca).status_code == 403  # no token
        assert _put(url, small, ro, ca).status_code == 403  # read scope only
        with pytest.raises(requests.exceptions.SSLError):
            _put(url, data, rw)  # the run's CA is not in the system store
        assert _put(url, data, rw, ca).status_code in (200, 201)
        got = requests.get(url, headers={"Authorization": f"Bearer {ro}"}, verify=ca, timeout=60)
        assert got.status_code == 200 and got.content == data
        # HTTP-TPC pull: the destination forwards TransferHeaderAuthorization to the source
        copy = dict(Source=url, Authorization=f"Bearer {rw}", Overwrite="T")
        bad = requests.request("COPY", dst.url("nodelegation.bin", "https"), headers=copy, verify=ca, timeout=60)
        assert "failure" in bad.text and "403" in bad.text
        ok = requests.request("COPY", dst.url("t.bin", "https"), verify=ca, timeout=60,
                              headers={**copy, "TransferHeaderAuthorization": f"Bearer {ro}"})
        assert ok.status_code == 201 and "success" in ok.text
        back = requests.get(dst.url("t.bin", "https"), headers={"Authorization": f"Bearer {ro}"}, verify=ca,
                            timeout=60)
        assert back.content == data
        # roots:// with the XRootD client: the token file (0600) as BEARER_TOKEN_FILE
        env = {**os.environ, **dst.client_env}
        assert env["BEARER_TOKEN_FILE"] == str(sec.token_file(WRITE_SCOPES))
        prog = textwrap.dedent("""
            import sys
            from XRootD import client
            f = client.File()
            st, _ = f.open(sys.argv[1], client.flags.OpenFlags.DELETE)
            print(st.ok, st.message)
        """)
        run = subprocess.run([sys.executable, "-c", prog, dst.url("x.bin", "root")], env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.stdout.startswith("True"), run.stdout + run.stderr
        env["BEARER_TOKEN_FILE"] = str(sec.token_file(READ_SCOPES))
        run = subprocess.run([sys.executable, "-c", prog, dst.url("y.bin", "root")], env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.stdout.startswith("False"), run.stdout + run.stderr


MATRIX = """
name: sec
defaults: {concurrency: [2], files: 6, file_size: 4M, modes: [push, tpc-http], security: [none, tls, scitokens],
           campaign: {timeout: 60, retries: 1}}
backends: {tmpfs: {size: 128M}}
include:  # macaroons travel over HTTP only: gfal2 pushes over https
  - {backend: tmpfs, size: 128M, security: macaroons, modes: [push, tpc-http],
     campaign: {timeout: 60, retries: 1, client: gfal2}}
"""


def test_a_macaroon_gateway_refuses_anyone_without_one(sec, tmp_path):
    ca = str(sec.ca_cert)
    with xrootd_workdir("xcb-sec-") as wd, \
            tmpfs_gateways(wd, ("sec-mac",), security="macaroons", run_security=sec) as (gw,):
        mac = gw.client_env["BEARER_TOKEN_FILE"]
        token = open(mac).read()
        assert oct(os.stat(mac).st_mode & 0o777) == "0o600"
        url = gw.url("m.bin", "https")
        assert _put(url, b"x" * 1024, ca=ca).status_code == 403  # no macaroon
        assert _put(url, b"x" * 1024, sec.token_file(WRITE_SCOPES).read_text(), ca).status_code == 403
        assert _put(url, b"x" * 1024, token, ca).status_code in (200, 201)
        other = requests.post(gw.http_url + "/", verify=ca, timeout=60,
                              headers={"Content-Type": "application/macaroon-request"},
                              data='{"caveats": ["activity:UPLOAD"], "validity": "PT60S"}')
        m = json.loads(other.text)["macaroon"]  # anyone may ask ...
        assert _put(gw.url("n.bin", "https"), b"y", m, ca).status_code == 403  # ... but gets no write


def test_a_run_of_security_modes_verifies_every_transfer_and_keeps_no_token(tmp_path):
    # as a command (its own process: XrdCl takes the run's CA dir once per process)
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX)
    before = set(Path("/var/tmp").glob("xcbsec-*"))
    res = subprocess.run([sys.executable, "-m", "xcbench", "run", str(path), "--store", str(tmp_path / "results"),
                          "--run-name", "sec", "--no-probes", "--no-baseline", "--no-report", "--telemetry", "host"],
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    assert JWT_HEADER not in res.stdout + res.stderr and MACAROON_HEAD not in res.stdout + res.stderr
    run = RunDir.open(tmp_path / "results" / "sec")
    t, camp = run.table("transfers"), run.table("campaigns")
    failed = t[t["file_state"] != "FINISHED"]
    assert {c["status"] for c in run.manifest["cells"].values()} == {"complete"}, \
        failed[["cell_id", "mode", "retry", "reason", "error_scope", "error_phase"]].to_string()
    assert len(t) == 8 * 6 and (t["file_state"] == "FINISHED").all()
    assert (t["checksum_source"] == t["checksum_dest"]).all()
    sec_of = {c: v["settings"].get("security", "none") for c, v in run.manifest["cells"].items()}
    for r in t.to_dict("records"):
        secure = sec_of[r["cell_id"]] != "none"
        scheme = r["destination"].split(":", 1)[0]
        want = {"push": "roots", "tpc-http": "https"} if secure else {"push": "root", "tpc-http": "http"}
        if sec_of[r["cell_id"]] == "macaroons":
            want = {"push": "https", "tpc-http": "https"}
        assert scheme == want[r["mode"]]
    assert set(camp["security"]) == {"none", "tls", "scitokens", "macaroons"}
    assert (camp["gateway_cpu_s_per_gb"].astype(float) > 0).all()
    for f in run.path.rglob("*"):
        if f.is_file():
            raw = f.read_bytes()
            assert JWT_HEADER.encode() not in raw and MACAROON_HEAD.encode() not in raw, f"a token in {f}"
    # the run's CA key, issuer key and token files went with the run
    assert set(Path("/var/tmp").glob("xcbsec-*")) <= before


def test_kill9_of_a_secure_run_leaves_no_key_or_token_after_the_next_command():
    """The CA key, the issuer's key and the token files of a killed run are removed by the next
    command (orphan records), like its processes; --resume then completes with new ones."""
    import signal

    from tests.support.faults import flushed, scene
    with scene("xcb-fault-sec-") as s:
        m = s.root / "m.yaml"
        m.write_text("name: ksec\ndefaults: {concurrency: [2], files: 40, file_size: 16M, security: [scitokens],\n"
                     "           campaign: {timeout: 120, retries: 1}}\nbackends: {tmpfs: {size: 256M}}\n")
        name = f"r{s.mark}"
        s.tokens.append(f"xcbench-{name}-")
        out = s.root / "results"
        common = ["--no-probes", "--no-baseline", "--no-report", "--telemetry", "host:0.5"]
        before = set(Path("/var/tmp").glob("xcbsec-*"))
        admin_before = set(Path("/var/tmp").glob("xcbgw-*"))
        cli = s.start("run", str(m), "--store", str(out), "--run-name", name, *common)
        cli.wait_for(flushed(out / name / "records" / "transfers.jsonl", 3), "the first transfer records")
        made = set(Path("/var/tmp").glob("xcbsec-*")) - before
        assert len(made) == 1, made
        (sec_dir,) = made
        assert any(p.name.startswith("token-") for p in sec_dir.iterdir())
        cli.p.send_signal(signal.SIGKILL)
        assert cli.finish() == -signal.SIGKILL
        assert sec_dir.exists()  # nothing ran to remove it ...
        cp = s.run("run", "--resume", str(out / name), *common)
        assert cp.returncode == 0, cp.stderr
        assert not sec_dir.exists()  # ... until the next command reaped the killed one's records
        # the killed run's gateway admin dirs too (their TLS keys); the resumed run removed its own
        assert not [d for d in set(Path("/var/tmp").glob("xcbgw-*")) - admin_before
                    if (d / "scitokens.cfg").exists()]
        assert "Traceback" not in cp.stderr
        s.assert_clean("after the resume reaped the orphans")
