"""Flags as users type them: the ceph CLI's -c/--conf, --id, -k/--keyring (old names kept),
--store = the result store and --out = an output file everywhere, a description for every
command."""

from __future__ import annotations

import argparse

import pytest

from xcbench.cli import build_parser, main


def _commands(parser, name="xcbench"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for n, p in action.choices.items():
                yield f"{name} {n}", p, helps.get(n)
                yield from _commands(p, f"{name} {n}")


def test_every_command_has_a_description_and_a_help_line():
    seen = list(_commands(build_parser()))
    assert len(seen) > 20
    for name, p, help_ in seen:
        assert p.description and len(p.description) > 10, name
        assert help_, name
        assert " ".join(p.description.split()) in " ".join(p.format_help().split()), name


@pytest.mark.parametrize("cmd", [["run", "m.yaml"], ["probe", "--matrix", "m.yaml"], ["cluster", "status"]])
def test_ceph_flags_as_the_ceph_cli_spells_them_and_the_old_names(cmd):
    p = build_parser()
    new = p.parse_args([*cmd, "-c", "/e/ceph.conf", "--id", "bench", "-k", "/e/k.keyring"])
    old = p.parse_args([*cmd, "--ceph-conf", "/e/ceph.conf", "--ceph-id", "bench",
                        "--keyring", "/e/k.keyring"])
    longs = p.parse_args([*cmd, "--conf", "/e/ceph.conf", "--id", "bench", "--keyring", "/e/k.keyring"])
    for a in (new, old, longs):
        assert (a.ceph_conf, a.ceph_id, a.keyring) == ("/e/ceph.conf", "bench", "/e/k.keyring")


@pytest.mark.parametrize("cmd", [["run", "m.yaml"], ["demo"], ["selftest"],
                                 ["campaign", "--gateway", "root://127.0.0.1:1094", "--files", "1"]])
def test_store_is_the_result_store_and_out_its_old_spelling(cmd):
    p = build_parser()
    try:
        a = p.parse_args([*cmd, "--store", "/r/s"])
    except SystemExit:
        pytest.fail(f"{cmd}: --store not accepted")
    b = p.parse_args([*cmd, "--out", "/r/s"])
    assert a.store == b.store == "/r/s"
    assert "--store" in p._subparsers._group_actions[0].choices[cmd[0]].format_help()


def test_report_out_is_a_file_and_store_the_result_store(tmp_path):
    a = build_parser().parse_args(["report", "latest", "--out", "r.html", "--store", str(tmp_path)])
    assert str(a.out) == "r.html" and a.store == tmp_path


def test_a_bad_store_names_the_flag(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    m = tmp_path / "m.yaml"
    m.write_text("name: x\nbackends: {tmpfs: {size: 64M}}\n")
    assert main(["run", str(m), "--store", str(f)]) == 2
    err = capsys.readouterr().err
    assert "--store" in err and "not a directory" in err and "Traceback" not in err
