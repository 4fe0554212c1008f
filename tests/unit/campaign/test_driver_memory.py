"""Files and concurrency are limited by the memory this host has free for the driver, not by
fixed ceilings alone: a matrix or a campaign that would take the driver out of memory is one
line naming the field, exit 2, before anything starts."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from xcbench import cli
from xcbench.campaign import spec
from xcbench.system import scratch

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def room(monkeypatch):
    """A host with 4 GiB available and 2 GiB kept in reserve: 2 GiB of room."""
    monkeypatch.setattr(scratch, "memory_room", lambda: (4 << 30, 2 << 30))


def test_the_limit_follows_the_hosts_memory(room):
    assert spec.memory_problem(1_000_000, 100) is None          # ~1 GiB of files + 100 MiB
    fld, why = spec.memory_problem(100_000_000, 4)              # allowed by the fixed ceiling
    assert fld == "files" and "free beyond its reserve" in why
    assert spec.memory_problem(16, 100_000)[0] == "concurrency"  # 100k transfers in flight


def test_a_matrix_asking_for_more_than_the_host_has_is_refused(room, tmp_path, capsys):
    m = yaml.safe_load((ROOT / "layouts" / "quick.yaml").read_text())
    m = copy.deepcopy(m)
    m["defaults"]["files"] = 50_000_000
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump(m))
    assert cli.main(["matrix", "check", str(f)]) == 2
    out, err = capsys.readouterr()
    line = (out or err).splitlines()[0]
    assert line.startswith(f"xcbench: error: {f}: cell ") and ": files: 50000000 files at concurrency" in line


def test_a_campaign_asking_for_more_than_the_host_has_is_refused(room, tmp_path, capsys):
    rc = cli.main(["campaign", "--gateway", "tmpfs", "--files", "2", "--concurrency", "90000",
                   "--store", str(tmp_path / "r"), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--concurrency: 2 files at concurrency 90000" in err
    assert not (tmp_path / "r").exists()
