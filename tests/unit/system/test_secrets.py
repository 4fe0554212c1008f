"""Secrets are redacted by option/key name and by value: argv, manifests, records, errors."""

import json

import pytest

from xcbench.errors import XcbError
from xcbench.store.rundir import RunDir
from xcbench.system import secrets
from xcbench.system.secrets import REDACTED, redact, redact_argv, redact_env, scrub

TOKEN = "eyJhbGciOiJSUzI1NiJ9.payload.signature"


@pytest.fixture(autouse=True)
def _clean():
    secrets.forget_all()
    yield
    secrets.forget_all()


def test_argv_both_forms_by_option_name():
    argv = ["campaign", "--gateway", "tmpfs", "--fts-token", TOKEN, f"--fts-token={TOKEN}",
            "--keyring", "/etc/ceph/k", "--password=hunter22", "--fts-no-verify", "--files", "3",
            "--ukey", "/tmp/x509up_u0", "--secret-file", "/s"]
    out = redact_argv(argv)
    assert TOKEN not in " ".join(out) and "hunter22" not in " ".join(out)
    assert out[out.index("--fts-token") + 1] == REDACTED
    assert f"--fts-token={REDACTED}" in out and f"--password={REDACTED}" in out
    assert out[out.index("--keyring") + 1] == REDACTED
    assert out[out.index("--ukey") + 1] == REDACTED and out[out.index("--secret-file") + 1] == REDACTED
    # what is not secret stays as it was
    assert out[:3] == ["campaign", "--gateway", "tmpfs"] and "--fts-no-verify" in out
    assert out[out.index("--files") + 1] == "3"


def test_a_secret_option_followed_by_a_flag_does_not_eat_the_flag():
    assert redact_argv(["--fts-token", "--json"]) == ["--fts-token", "--json"]


@pytest.mark.parametrize("name, secret", [
    ("fts_token", True), ("FTS_TOKEN", True), ("X509_USER_PROXY", True), ("password", True),
    ("keyring", True), ("key", True), ("cert-key", True), ("api_secret", True),
    ("Authorization", True), ("files", False), ("checksum", False), ("monkey", False),
    ("file_size", False), ("delete_after_verify", False), ("X509_CERT_DIR", False)])
def test_secret_names(name, secret):
    assert secrets.is_secret_name(name) is secret


def test_mappings_env_and_nested_command():
    data = {"options": {"fts_token": TOKEN, "files": 3, "keyring": None},
            "command": ["run", "--fts-token", TOKEN], "env": {"FTS_TOKEN": TOKEN, "HOME": "/root"},
            "rows": [{"note": f"Authorization: Bearer {TOKEN}"}]}
    out = redact(data)
    assert TOKEN not in json.dumps(out)
    assert out["options"] == {"fts_token": REDACTED, "files": 3, "keyring": None}
    assert out["env"]["HOME"] == "/root" and redact_env({"FTS_TOKEN": "x"}) == {"FTS_TOKEN": REDACTED}
    assert data["options"]["fts_token"] == TOKEN  # a copy: the caller's data is unchanged


def test_registered_value_is_scrubbed_from_any_text():
    secrets.register(TOKEN)
    msg = f"HTTPSConnectionPool: 401 for url https://fts/jobs?x={TOKEN[:5]} headers {{'a': '{TOKEN}'}}"
    assert TOKEN not in scrub(msg) and REDACTED in scrub(msg)
    err = XcbError(f"fts3: cannot use the FTS3 server: {msg}")
    assert TOKEN not in str(err)


def test_header_and_query_tokens_are_scrubbed_unregistered():
    assert "abcdefgh123" not in scrub("sent Authorization: Bearer abcdefgh123 to fts")
    assert "abcdefgh123" not in scrub("GET /x?access_token=abcdefgh123&y=1")
    assert scrub("campaign: timeout: 'abc' is not a number") == \
        "campaign: timeout: 'abc' is not a number"


def test_the_store_writes_no_secret(tmp_path):
    secrets.register(TOKEN)
    run = RunDir.create(tmp_path, name="r", fingerprint=False, kind="campaign",
                        command=["campaign", f"--fts-token={TOKEN}"],
                        options={"fts_token": TOKEN})
    run.append("transfers", [{"reason": f"server said token {TOKEN} expired", "file_index": 0}])
    run.set_cell("c1", status="failed", error=f"401 with {TOKEN}")
    run.finalize("failed")
    blob = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert TOKEN.encode() not in blob
    assert run.manifest["options"]["fts_token"] == TOKEN  # only what is written is redacted
    assert RunDir.open(tmp_path / "r").manifest["command"] == ["campaign", f"--fts-token={REDACTED}"]


def test_fingerprints_are_kept_exact():
    fp = {"packages": {"python3-keyring": "23.13"}, "configs": {"ceph.client.x.keyring": "ab12"}}
    assert redact({"fingerprint": fp, "cells": {"c": {"fingerprint": fp}}})["cells"]["c"] == \
        {"fingerprint": fp}
