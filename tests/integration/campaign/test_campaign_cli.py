"""`xcbench campaign` from the command line (tmpfs gateways it starts itself): no token reaches the result directory, whichever
way it was given (flag, --flag=value, file, environment), also when FTS refuses it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

TOKEN = "s3cr3t-Tok3n-0f-th3-s1te"


def everything_in(directory: Path) -> bytes:
    """Every byte of every file under ``directory`` (manifest, JSONL, Parquet, raw)."""
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def xcbench(*argv, env=None):
    import os
    return subprocess.run([sys.executable, "-m", "xcbench", *map(str, argv)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("how", ["flag", "flag=", "file", "env"])
def test_cli_fts_token_never_reaches_results(tmp_path, how):
    from tests.support.fts3_double import Fts3Double
    out = tmp_path / "results"
    tok_file = tmp_path / "token"
    tok_file.write_text(TOKEN + "\n")
    given = {"flag": ["--fts-token", TOKEN], "flag=": [f"--fts-token={TOKEN}"],
             "file": ["--fts-token-file", tok_file], "env": []}[how]
    with Fts3Double(token=TOKEN) as fts:
        cp = xcbench("campaign", "--gateway", "tmpfs", "--source", "tmpfs",
                     "--mode", "tpc-http", "--files", 3, "--size", "256K", "--concurrency", 2,
                     "--fts", fts.url, *given, "--store", out, "--run-name", "run", "--no-progress",
                     env={"FTS_TOKEN": TOKEN} if how == "env" else {"FTS_TOKEN": ""})
        assert fts.submitted, cp.stderr  # the token did reach FTS ...
    assert cp.returncode == 0, cp.stderr
    assert "3/3 finished" in cp.stdout
    data = everything_in(out / "run")
    assert b'"kind": "campaign"' in data and b"transfers" in b"".join(
        p.name.encode() for p in (out / "run").rglob("*"))
    assert TOKEN.encode() not in data  # ... and nowhere in the results
    assert TOKEN not in cp.stdout + cp.stderr


def test_cli_refused_token_is_not_printed(tmp_path):
    """FTS answers 401: the error is one line, and it does not quote the token."""
    from tests.support.fts3_double import Fts3Double
    with Fts3Double(token="the-right-one") as fts:
        cp = xcbench("campaign", "--gateway", "tmpfs", "--source", "tmpfs",
                     "--mode", "tpc-http", "--files", 1, "--size", "64K", "--fts", fts.url,
                     "--fts-token", TOKEN, "--store", tmp_path / "r", "--run-name", "run",
                     "--no-progress")
    assert cp.returncode != 0 and "Traceback" not in cp.stderr
    assert TOKEN not in cp.stdout + cp.stderr
    if (tmp_path / "r" / "run").exists():
        assert TOKEN.encode() not in everything_in(tmp_path / "r" / "run")


def test_cli_local_campaign_with_a_token_flag_records_no_token(tmp_path):
    """A local campaign into a tmpfs gateway the command starts itself: the flag is accepted,
    recorded as <redacted>."""
    out = tmp_path / "results"
    cp = xcbench("campaign", "--gateway", "tmpfs", "--files", 2, "--size", "1M",
                 "--concurrency", 1, "--no-progress", "--fts-token", TOKEN, "--store", out,
                 "--run-name", "local")
    assert cp.returncode == 0, cp.stderr
    import json
    manifest = json.loads((out / "local" / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["command"][manifest["command"].index("--fts-token") + 1] == "<redacted>"
    assert TOKEN.encode() not in everything_in(out / "local")
