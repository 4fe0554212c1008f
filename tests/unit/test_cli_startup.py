"""A command line imports the module of the command it names, not every command's: `hosts`,
`--version` and the agents other hosts start are not slowed by a run's pandas and plots."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from xcbench.cli import COMMANDS, _needed, build_parser


def _sub(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_a_named_command_needs_its_module_only_help_and_typos_need_all():
    assert _needed(["hosts", "up", "x.yaml"]) == ("hosts",)
    assert _needed(["gateway-agent"]) == ("gateway-agent",)
    assert _needed(["--version"]) == ()
    assert _needed([]) == COMMANDS and _needed(["--help"]) == COMMANDS
    assert _needed(["hots", "up"]) == COMMANDS  # the one-line error lists the choices


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_parsed_alone_has_the_same_help_as_among_all(name):
    def helps(p: argparse.ArgumentParser, path: str) -> dict[str, str]:
        out = {path: p.format_help()}
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for k, q in a.choices.items():
                    out.update(helps(q, f"{path} {k}"))
        return out
    assert helps(_sub(build_parser((name,))).choices[name], name) == \
        helps(_sub(build_parser()).choices[name], name)


def test_version_hosts_and_the_agents_import_no_pandas():
    prog = ("import sys\nfrom xcbench.cli import main\n"
            "for argv in (['--version'], ['hosts', '--help'], ['campaign-agent', '--help'],\n"
            "             ['gateway-agent', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stdout + out.stderr


def test_node_clean_imports_no_matrix_machinery(tmp_path):
    """It runs on every node when a Slurm run ends: nothing of a run's engine in its start-up."""
    prog = ("import sys\nfrom xcbench.cli import main\nmain(['node-clean'])\n"
            "print(sorted(m for m in sys.modules if m.startswith(('xcbench.campaign', 'xcbench.run', "
            "'scipy', 'pandas'))))")
    env = {"XCBENCH_SCRATCH_TAG": "0123456789abcdef", "XCBENCH_HOME": str(tmp_path / "home"),
           "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
    assert '"node-clean": {"host": ' in out.stdout
