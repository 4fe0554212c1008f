"""Bad input is refused at load: one line naming file, cell and field, exit 2, no traceback."""

import math
import subprocess
import sys

import pytest

from xcbench.campaign.spec import CampaignSpec, OptimizerSpec, check_campaign_settings
from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.matrix import check_lines, load_matrix
from xcbench.store.rundir import RunDir
from xcbench.system.userfiles import read_json, read_text, read_yaml


@pytest.mark.parametrize("kw, field", [
    ({"timeout": math.nan}, "timeout"), ({"timeout": math.inf}, "timeout"),
    ({"timeout": -1}, "timeout"), ({"timeout": 0}, "timeout"), ({"timeout": "abc"}, "timeout"),
    ({"retry_delay": math.nan}, "retry_delay"), ({"retry_delay": -0.5}, "retry_delay"),
    ({"timeout_per_mib": math.inf}, "timeout_per_mib"), ({"retries": 10**40}, "retries"),
    ({"files": 0}, "files"), ({"files": 2.5}, "files"), ({"streams": True}, "streams"),
    ({"size_spread": math.nan}, "size_spread"), ({"seed": -1}, "seed"),
    ({"overwrite": "yes"}, "overwrite"), ({"size_dist": "zipf"}, "size_dist"),
    ({"file_size": 0}, "file_size"), ({"chunk_size": "1T"}, "chunk_size"),
    ({"optimizer": {"interval": math.nan}}, "optimizer.interval"),
    ({"optimizer": {"ema_alpha": 0}}, "optimizer.ema_alpha"),
    ({"optimizer": {"low_success_rate": 101}}, "optimizer.low_success_rate"),
    ({"optimizer": {"bogus": 1}}, "optimizer.bogus"), ({"optimizer": "yes"}, "optimizer")])
def test_every_campaign_value_finite_and_in_range(kw, field):
    with pytest.raises(XcbError, match=rf"^campaign: {field}: "):
        CampaignSpec(**kw)
    assert [f for f, _ in check_campaign_settings(kw)] == [field]


def test_good_values_still_pass_and_are_normalised():
    s = CampaignSpec(timeout=60, retries=2.0, retry_delay=1, optimizer={"interval": 5})
    assert s.retries == 2 and isinstance(s.retries, int) and s.timeout == 60.0
    assert OptimizerSpec(max_active=0).max_active == 0
    assert check_campaign_settings({"client": "gfal2", "timeout": 30, "optimizer": True}) == []
    assert check_campaign_settings({"x": 1}) == [("x", "unknown setting")]
    assert check_campaign_settings({"x": 1}, unknown=False) == []


def test_a_level_duration_and_its_steady_window_are_checked_together():
    """A 2-s window fits a 6-s level; checked alone, the 6-s duration met the default 10-s
    window and a good campaign was refused."""
    level = {"duration": {"min": "2s", "max": "6s"},
             "steady": {"rule": "autoterm", "window": "2s", "points": 2, "tolerance": "10%"}}
    assert check_campaign_settings(level) == []
    bad = {**level, "steady": {**level["steady"], "window": "8s"}}
    assert check_campaign_settings(bad) == [
        ("steady.window", "8 s must be at least 1 s per point (2) and at most max (6 s)")]


def write(tmp_path, text, name="m.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


BASE = "backends:\n  tmpfs: {size: 1G}\n"


def test_matrix_campaign_settings_checked_at_load(tmp_path):
    p = write(tmp_path, BASE + "defaults:\n  campaign: {timeout: abc, client: bogus, "
              "optimizer: {bogus: 1}, retry_delay: .nan, retries: 0}\n")
    lines = check_lines(p)
    assert [ln.split(": ")[2] for ln in lines] == ["timeout", "client", "optimizer.bogus",
                                                    "retry_delay"]
    assert all(ln.startswith(f"{p}: defaults.campaign: ") for ln in lines)


def test_matrix_campaign_bad_value_is_reported_once(tmp_path):
    p = write(tmp_path, BASE.replace("{size: 1G}", "{size: 1G, campaign: {streams: 0}}"))
    assert check_lines(p) == [f"{p}: backends.tmpfs.campaign: streams: 0 must be >= 1"]


@pytest.mark.parametrize("bind", ["null", "''", "'  '", "5", "[a]", "'example host'"])
def test_matrix_empty_or_bad_bind_is_an_error(tmp_path, bind):
    p = write(tmp_path, BASE + f"defaults:\n  gateway: {{bind: {bind}}}\n")
    lines = check_lines(p)
    assert len(lines) == 1 and lines[0].startswith(f"{p}: defaults.gateway: bind: ")


@pytest.mark.parametrize("bind", ["0.0.0.0", "'::'", "'[::]'", "10.1.2.3"])
def test_matrix_wildcard_or_non_loopback_bind_is_one_line_exit_2(tmp_path, bind):
    """A matrix binds a gateway to loopback only: `matrix check` says so in one line, exit 2
    (a gateway on another address comes from the operator's inventory)."""
    p = write(tmp_path, BASE + f"defaults:\n  gateway: {{bind: {bind}}}\n")
    r = subprocess.run([sys.executable, "-m", "xcbench", "matrix", "check", str(p)],
                       capture_output=True, text=True, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"xcbench: error: {p}: defaults.gateway: bind: "), lines


@pytest.mark.parametrize("bind", ["127.0.0.1", "'[::1]'", "localhost"])
def test_matrix_loopback_bind_is_valid(tmp_path, bind):
    p = write(tmp_path, BASE + f"defaults:\n  gateway: {{bind: {bind}}}\n")
    assert load_matrix(p).cells[0].gateway_settings["bind"] in ("127.0.0.1", "[::1]", "localhost")


def test_reader_turns_every_failure_into_one_line(tmp_path):
    (tmp_path / "bin").write_bytes(b"a: 1\n\xff\xfe\n")
    (tmp_path / "nul").write_bytes(b"a\0b")
    (tmp_path / "bad.json").write_text('{"a": [1,')
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (tmp_path / "deep.yaml").write_text("[" * 100000 + "]" * 100000)
    (tmp_path / "date.yaml").write_text("a: 2024-13-45\n")
    (tmp_path / "huge.json").write_text("1" * 5000)
    cases = [(read_text, "bin", "line 2: not UTF-8"), (read_text, "nul", "binary data"),
             (read_text, ".", "is a directory"), (read_text, "missing", "no such file"),
             (read_json, "bad.json", "not valid JSON"), (read_json, "deep.json", "deeply"),
             (read_yaml, "deep.yaml", "yaml"), (read_yaml, "date.yaml", "yaml"),
             (read_json, "huge.json", "JSON")]
    for fn, name, what in cases:
        with pytest.raises(XcbError, match=what) as e:
            fn(tmp_path / name)
        assert str(e.value).startswith(str(tmp_path / name)) and "\n" not in str(e.value)


def test_resume_of_a_campaign_run_is_one_line(tmp_path, capsys):
    run = RunDir.create(tmp_path, name="camp", fingerprint=False, kind="campaign",
                        command=["campaign"])
    run.finalize("complete")
    assert main(["run", "--resume", str(run.path), "--state-dir", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "made by `xcbench campaign`" in err


@pytest.mark.parametrize("manifest", ["", "{", "[]", '{"schema_version": "x"}',
                                      '{"schema_version": 99}', "\xff"])
def test_damaged_manifest_is_one_line(tmp_path, capsys, manifest):
    d = tmp_path / "r"
    d.mkdir()
    (d / "manifest.json").write_bytes(manifest.encode("latin-1"))
    assert main(["runs", "show", str(d)]) == 2
    assert capsys.readouterr().err.startswith(f"xcbench: error: {d}")


@pytest.mark.parametrize("argv, what", [
    (["campaign", "--gateway", "tmpfs", "--size", "0"], "file_size"),
    (["campaign", "--gateway", "tmpfs", "--timeout", "nan"], "timeout"),
    (["campaign", "--gateway", "tmpfs", "--retry-delay", "inf"], "retry_delay"),
    (["campaign", "--gateway", "tmpfs", "--run-name", "../x"], "--run-name"),
    (["campaign", "--gateway", "ftp://x"], "--gateway"),
    (["campaign", "--gateway", "root://h:99999"], "--gateway"),
    (["campaign", "--gateway", "tmpfs", "--fts", "x"], "--fts"),
    (["campaign", "--gateway", "tmpfs", "--fts-token-file", "/nonexistent"], "/nonexistent"),
    (["campaign", "--gateway", "tmpfs", "--optimizer", "--optimizer-interval", "-1"], "interval"),
    (["run", "layouts/quick.yaml", "--repeats", "0"], "--repeats"),
    (["run", "layouts/quick.yaml", "--fio-hosts", "a b"], "--fio-hosts"),
    (["probe", "layouts/quick.yaml", "--runtime", "0"], "--runtime"),
    (["probe"], "give a MATRIX file"),
    (["probe", "layouts/quick.yaml", "--matrix", "layouts/quick.yaml"], "two matrices given"),
    (["probe", "--matrix", "layouts/quick.yaml", "--runtime", "0"], "--runtime"),  # the older spelling
    (["gateway", "up", "--matrix", "layouts/quick.yaml", "--cell", "x", "--origins", "0"], "--origins"),
    (["gateway", "up", "--matrix", "layouts/quick.yaml", "--cell", "x", "--report", "h"], "--report"),
])
def test_cli_values_refused_before_anything_starts(capsys, argv, what):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("xcbench: error: ") and err.count("\n") == 1 and what in err, err


def test_token_file_is_read_and_empty_one_refused(tmp_path, capsys):
    (tmp_path / "t").write_text("\n")
    assert main(["campaign", "--gateway", "tmpfs", "--fts-token-file", str(tmp_path / "t")]) == 2
    assert "is empty" in capsys.readouterr().err


def test_jsonl_torn_tail_is_skipped_garbage_inside_is_one_line(tmp_path, capsys):
    from xcbench.store.rundir import read_jsonl
    jl = tmp_path / "t.jsonl"
    jl.write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": 5}\n{"a": 3, "b"')
    df = read_jsonl(jl)
    assert list(df["a"]) == [1, 2] and "torn last record skipped" in capsys.readouterr().err
    jl.write_bytes(b'{"a": 1, "b": "x"}\n\xff\n{"a": 2, "b": 5}\n')
    with pytest.raises(XcbError, match=rf"^{jl}: line 2: not a JSON record"):
        read_jsonl(jl)


def test_manifest_with_cells_of_the_wrong_shape_is_one_line(tmp_path):
    import json
    run = RunDir.create(tmp_path, name="r", fingerprint=False)
    m = json.loads((run.path / "manifest.json").read_text())
    (run.path / "manifest.json").write_text(json.dumps({**m, "cells": {"c1": 5}}))
    with pytest.raises(XcbError, match="cells: not a mapping of cell records"):
        RunDir.open(run.path)
