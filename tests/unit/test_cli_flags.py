"""Flags as users type them: the ceph CLI's -c/--conf, --id, -n/--name, -k/--keyring (old names
kept), --store = the result store and --out = an output file everywhere, --run-name for the run's
directory, --json and a help line for every flag, a description for every command, internal
commands hidden, one error prefix."""

from __future__ import annotations

import argparse

import pytest

from xcbench.cli import HIDDEN, build_parser, main


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
        assert help_ or name.split()[-1] in HIDDEN, name
        assert " ".join(p.description.split()) in " ".join(p.format_help().split()), name


@pytest.mark.parametrize("cmd", [["run", "m.yaml"], ["probe", "m.yaml"], ["cluster", "status"]])
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
def test_store_is_the_result_store_and_the_only_spelling(cmd, capsys):
    p = build_parser()
    try:
        a = p.parse_args([*cmd, "--store", "/r/s"])
    except SystemExit:
        pytest.fail(f"{cmd}: --store not accepted")
    assert a.store == "/r/s"
    with pytest.raises(SystemExit):  # one name for one thing: no hidden --out beside --store
        p.parse_args([*cmd, "--out", "/r/s"])
    assert "unrecognized arguments: --out" in capsys.readouterr().err
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


def _flags(parser, name="xcbench"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for n, p in action.choices.items():
                yield from _flags(p, f"{name} {n}")
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield name, action


def test_every_flag_and_argument_has_help():
    flags = list(_flags(build_parser()))
    assert len(flags) > 150
    missing = [(n, a.option_strings or a.dest) for n, a in flags if not a.help]
    assert missing == []
    for n, a in flags:  # help text goes through %-formatting: a stray %% would show doubled
        if a.help and a.help != argparse.SUPPRESS:
            assert "%%" not in (a.help % {**vars(a), "prog": n}), (n, a.option_strings)


def test_help_text_shows_no_doubled_percent_and_no_old_flag_names():
    p = build_parser()
    sub = p._subparsers._group_actions[0].choices
    assert "95 % CIs" in " ".join(sub["compare"].format_help().split())
    assert "%%" not in sub["compare"].format_help()
    assert "--out" not in sub["campaign"].format_help()  # --store is the result store


def test_internal_commands_are_hidden_from_help_but_still_run():
    p = build_parser()
    top = p.format_help()
    for name in HIDDEN:
        assert name not in top
        assert p.parse_args([name]).command == name


def test_probe_takes_its_matrix_as_run_does_and_the_older_flag_unlisted():
    p = build_parser()
    sub = p._subparsers._group_actions[0].choices
    assert p.parse_args(["probe", "m.yaml", "--cell", "c"]).matrix == "m.yaml"
    old = p.parse_args(["probe", "--matrix", "m.yaml"])
    assert (old.matrix, old.matrix_flag) == (None, "m.yaml")
    assert "MATRIX" in sub["probe"].format_usage() and "--matrix" not in sub["probe"].format_help()


def test_a_command_printing_results_takes_json():
    p = build_parser()
    for argv in (["run", "m.yaml"], ["demo"], ["report", "latest"], ["compare", "a", "b"],
                 ["confirm", "latest"], ["matrix", "check", "m.yaml"], ["matrix", "show", "m.yaml"],
                 ["runs", "list"], ["runs", "show", "latest"], ["cluster", "status"],
                 ["probe", "m.yaml"], ["baseline"], ["selftest"],
                 ["telemetry", "list"], ["hosts", "status"]):
        assert p.parse_args([*argv, "--json"]).json is True, argv
    # plan's --format json stays: --json is its alias
    assert p.parse_args(["plan", "--json"]).format == p.parse_args(["plan", "--format", "json"]).format == "json"


@pytest.mark.parametrize("argv, says", [
    (["report", "latest", "--fromat", "md"], "report: unrecognized arguments: --fromat md; did you mean --format?"),
    (["cluster", "status", "--bogus"], "cluster status: unrecognized arguments: --bogus"),
    (["compare", "a"], "compare: the following arguments are required: CONTENDER"),
    (["run", "m.yaml", "--repeats", "x"], "run: argument --repeats: invalid int value"),
])
def test_one_error_prefix_naming_the_command(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("xcbench: error:") == 1 and err.startswith(f"xcbench: error: {says}"), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_matrix_check_errors_carry_the_prefix(tmp_path, capsys):
    m = tmp_path / "m.yaml"
    m.write_text("backends: {tmpfs: {size: 0}}\ndefaults: {files: -1}\n")
    assert main(["matrix", "check", str(m)]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) >= 1, (out, err)
    assert all(ln.startswith(f"xcbench: error: {m}: ") for ln in lines), err


def test_run_name_is_the_directory_and_name_the_ceph_client():
    p = build_parser()
    a = p.parse_args(["run", "m.yaml", "--run-name", "r1", "-n", "client.xcb"])
    assert (a.run_name, a.ceph_name) == ("r1", "client.xcb")
    a = p.parse_args(["campaign", "--gateway", "tmpfs", "--run-name", "r1"])
    assert a.run_name == "r1"


@pytest.mark.parametrize("flag", ["-n", "--name"])
def test_name_client_x_is_the_ceph_id(flag):
    from xcbench.commands.options import apply_ceph_name
    a = build_parser().parse_args(["cluster", "status", flag, "client.xcb"])
    apply_ceph_name(a)
    assert a.ceph_id == "xcb"


@pytest.mark.parametrize("argv, says", [
    (["run", "m.yaml", "--name", "myrun"], "is not a Ceph name"),
    (["run", "m.yaml", "-n", "osd.1"], "as a Ceph client"),
    (["run", "m.yaml", "-n", "client.a", "--id", "b"], "name two clients"),
    (["demo", "--name", "myrun"], "takes none"),
    (["campaign", "--gateway", "tmpfs", "--name", "myrun"], "takes none"),
])
def test_name_that_is_no_ceph_client_is_one_line_exit_2(argv, says, capsys, tmp_path):
    assert main([*argv, "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("xcbench: error: ") and says in err, err
    assert "--run-name" in err or "two clients" in err or "client.ID" in err
    assert list(tmp_path.iterdir()) == []  # refused before anything was made


def test_a_run_is_given_by_path_id_or_latest(tmp_path, monkeypatch):
    from xcbench.commands import confirm, plan
    from xcbench.store.rundir import RunDir
    r1 = RunDir.create(tmp_path, name="first", fingerprint=False)
    r2 = RunDir.create(tmp_path, name="second", fingerprint=False)
    seen = []
    monkeypatch.setattr(confirm.confirm, "preflight",
                        lambda run, *_: seen.append(run) or (_ for _ in ()).throw(SystemExit(0)))
    for spec in (str(r2.path), "second", "latest"):
        with pytest.raises(SystemExit):
            main(["confirm", spec, "--store", str(tmp_path)])
    assert seen == [str(r2.path)] * 3
    cal = []
    monkeypatch.setattr(plan, "load_calibration",
                        lambda runs, osds: cal.append([str(r.run.path) for r in runs])
                        or (_ for _ in ()).throw(SystemExit(0)))
    with pytest.raises(SystemExit):
        main(["plan", "--target", "hl-lhc-t1", "--calibrate", "first", "latest", "--store", str(tmp_path)])
    assert cal == [[str(r1.path), str(r2.path)]]


@pytest.mark.parametrize("pct", ["100", "-1", "nan"])
def test_a_bad_fail_if_slower_is_one_line_exit_2(pct, capsys):
    assert main(["compare", "a", "b", "--fail-if-slower", pct]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xcbench: error: compare: --fail-if-slower:") and len(err.splitlines()) == 1


def test_cluster_status_says_where_the_embedded_prometheus_is(capsys):
    from xcbench.commands.cluster import _print_status
    s = {"conf": "/s/ceph.conf", "embedded": True, "health": "HEALTH_OK", "checks": {},
         "osds": {"num": 3, "up": 3, "in": 3}, "pgs": {}, "pools": [], "fs": [],
         "prometheus": {"url": "http://127.0.0.1:9095", "node": "127.0.0.1:9100",
                        "mgr": "127.0.0.1:9283"}}
    _print_status(s)
    out = capsys.readouterr().out
    assert "prom     http://127.0.0.1:9095 (scrapes node_exporter 127.0.0.1:9100" in out
    _print_status({**s, "prometheus": None})
    assert "started without its Prometheus" in capsys.readouterr().out
