"""`--help` reads the same in every command: a flag's metavar and default are one wherever it
appears, a time says its unit, no help names a Python module, `run` and `demo` take --quiet, and
every command with actions takes them as sub-actions (the old spellings keep working)."""

from __future__ import annotations

import argparse
import re
from collections import defaultdict

from xcbench.cli import build_parser

# flags whose value is a time: the metavar says the unit
TIMES = ("--timeout", "--seconds", "--baseline-seconds", "--runtime", "--timeout-per-mib")


def _commands(parser, name="xcbench"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for n, p in action.choices.items():
                yield from _commands(p, f"{name} {n}")


def _options():
    """(command, flag, metavar, help) of every visible option that takes a value."""
    for name, p in _commands(build_parser()):
        for a in p._actions:
            if a.help == argparse.SUPPRESS or not a.option_strings or a.nargs == 0:
                continue
            for flag in a.option_strings:
                if flag.startswith("--"):
                    yield name, flag, a.metavar or a.dest.upper(), a.help or ""


def test_a_flag_has_one_metavar_everywhere():
    seen: dict[str, set] = defaultdict(set)
    for _, flag, metavar, _ in _options():
        seen[flag].add(metavar)
    mixed = {f: m for f, m in seen.items() if len(m) > 1}
    assert mixed == {}


def test_the_ceph_id_has_one_default_everywhere():
    defaults = {name: re.findall(r"default:? ([\w-]+)", h) for name, flag, _, h in _options() if flag == "--id"}
    assert defaults and {tuple(v) for v in defaults.values()} == {("admin",)}, defaults


def test_a_time_says_its_unit():
    for name, flag, metavar, h in _options():
        if flag in TIMES:
            assert metavar in ("SECONDS", "S") or re.search(r"\bs(econds)?\b", h), (name, flag, metavar)
            assert metavar in ("SECONDS", "S"), (name, flag, metavar)


def test_no_help_names_a_python_module():
    for name, p in _commands(build_parser()):
        text = p.format_help()
        assert not re.search(r"\bxcbench\.[a-z_]+\.[a-z_.]+", text), (name, re.findall(r"xcbench\.[\w.]+", text))


def test_run_and_demo_take_quiet():
    p = build_parser()
    for cmd in (["run", "m.yaml"], ["demo"]):
        assert p.parse_args([*cmd, "--quiet"]).quiet is True
        assert p.parse_args([*cmd, "-q"]).quiet is True
        assert p.parse_args(cmd).quiet is False


def test_matrix_takes_sub_actions_and_the_old_forms():
    p = build_parser()
    help_ = p._subparsers._group_actions[0].choices["matrix"].format_help()
    assert "{check,show} file" not in help_
    for argv in (["matrix", "check", "f.yaml"], ["matrix", "show", "f.yaml", "--json"],
                 ["matrix", "--osds", "3", "check", "f.yaml"], ["matrix", "check", "f.yaml", "--osds", "3"]):
        ns = p.parse_args(argv)
        assert ns.action in ("check", "show") and ns.file == "f.yaml", argv
    assert p.parse_args(["matrix", "--osds", "3", "check", "f.yaml"]).osds == 3
    assert p.parse_args(["matrix", "check", "f.yaml", "--osds", "3"]).osds == 3
