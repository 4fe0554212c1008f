"""The README a newcomer reads: short, every command in it runs as written, the one command for a
site's cluster with a non-admin key is complete, and the two blocks xcbench prints (the closing
table of a stored run, `xcbench cluster caps`) are what the current code prints.

Commands are the lines of the README's ```sh blocks. `make demo` and `make test` are not run here:
each installs Debian packages and takes minutes to the better part of an hour (`make test` is this
suite); CI runs `make test` on every change and `make demo`'s run is the same code path as
`xcbench run` of layouts/quick.yaml, which the integration suite runs in its short shape
(tests/support/demorun.py). An `xcbench` command that starts a cluster or a measurement (LONG) is
parsed by xcbench's own argparse and its matrix checked; the others run as written, with a result
store holding the stored run (tests/data/runs) so that `latest` names it.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.support import readme
from xcbench.cli import build_parser

LINES = 220  # issue 46: a README read in two minutes
# subcommands that start a cluster, gateways or a measurement: parsed and their matrix checked
LONG = {"run", "demo", "selftest", "probe", "campaign", "baseline", "gateway", "smoke", "hosts"}
# `confirm RUN` replays a run's cells: parsed (a --help runs, whatever the command)
REPLAYS = {"confirm"}
MAKE = {"make demo", "make test"}  # exempt, see the module's docstring
SLURM = "salloc "  # its xcbench command is checked as any other (a long one: parsed)
# a command whose documented answer on the stored run (a demo on one box) is a one-line refusal
# (issue 44: `plan --calibrate` refuses a run unfit for sizing, exit 2): that line, nothing else
REFUSES = {"xcbench plan --target ska-aa4-mid --calibrate latest": "not fit for sizing"}
# documents other changes add (issue 45 the shared host's, 47 the Slurm site's, 44 the
# experiments'); the README keeps a one-line slot linking the first two
PENDING = {"docs/security.md", "docs/slurm.md", "docs/experiments.md"}


@pytest.fixture(scope="module")
def text() -> str:
    return readme.README.read_text()


@pytest.fixture(scope="module")
def commands(text) -> list[str]:
    return [c for b in readme.blocks(text) if b.lang == "sh" for c in readme.commands(b)]


def _xcbench_part(cmd: str) -> str:
    """`salloc -N 4 ... xcbench run ...` (Slurm's salloc runs the command in its allocation, which
    no test here has): the xcbench command it runs."""
    return cmd[cmd.index("xcbench "):] if cmd.startswith(SLURM) and " xcbench " in cmd else cmd


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A result store holding the stored run: `latest` is it."""
    s = tmp_path_factory.mktemp("store")
    shutil.copytree(readme.SAMPLE_RUN, s / readme.SAMPLE_RUN.name)
    return s


def test_the_readme_is_short(text):
    assert len(text.splitlines()) <= LINES


def test_every_command_is_in_a_block_xcbench_or_make(commands):
    assert commands, "no ```sh block"
    for c in commands:
        assert _xcbench_part(c).startswith("xcbench ") or c in MAKE, c
    assert MAKE <= set(commands)  # exactly the two set-up commands, both shown
    assert not [c for c in commands if c.startswith("make ") and c not in MAKE]


def _args(cmd: str) -> list[str]:
    return shlex.split(cmd)[1:]


def _parse(cmd: str) -> argparse.Namespace:
    """``cmd`` through xcbench's own argparse; a flag it does not know fails the test, naming it."""
    try:
        return build_parser().parse_args(_args(cmd))
    except SystemExit:
        pytest.fail(f"xcbench does not take {cmd!r} as written")


def test_every_command_runs_as_written(commands, store):
    for cmd in map(_xcbench_part, commands):
        if cmd in MAKE:
            continue
        args = _args(cmd)
        if "--help" in args:
            cp = readme.xcbench(*args)
            assert cp.returncode == 0 and "usage: xcbench" in cp.stdout, (cmd, cp.stderr)
            continue
        ns = _parse(cmd)
        if ns.command in LONG | REPLAYS:
            matrix = getattr(ns, "matrix", None)
            if matrix:
                cp = readme.xcbench("matrix", "check", matrix)
                assert cp.returncode == 0, (cmd, cp.stderr)
            continue
        cp = readme.xcbench(*args, env={"XCBENCH_STORE": str(store)})
        said = REFUSES.get(cmd)
        refused = said is not None and cp.returncode == 2 and len(cp.stderr.strip().splitlines()) == 1 \
            and said in cp.stderr
        assert cp.returncode == 0 or refused, (cmd, cp.returncode, cp.stderr[-2000:])
        assert "Traceback" not in cp.stderr, cmd


def test_inline_commands_parse(text):
    """`xcbench ...` in the prose: every flag one xcbench knows (placeholders in capitals)."""
    inline = re.findall(r"`(xcbench [^`]+)`", text)
    assert inline
    for cmd in inline:
        _parse(cmd)


def test_the_non_admin_run_is_one_complete_command(text):
    """The run on a site's cluster: one `xcbench run` naming the cluster's conf, the bench key
    and its keyring, the file system and the gateways' own key and keyring, each as
    `xcbench cluster caps` names them (the keys it grants, the keyrings it writes)."""
    runs = [c for b in readme.blocks(text) if b.lang == "sh" for c in readme.commands(b)
            if c.startswith("xcbench run ") and " --hosts " not in c]  # the Slurm lines aside
    assert len(runs) == 1, runs
    ns = _parse(runs[0])
    caps = _parse("xcbench " + " ".join(readme.CAPS))
    assert ns.matrix and Path(readme.ROOT / ns.matrix).is_file()
    assert ns.ceph_conf and ns.ceph_id and ns.keyring and ns.gateway_id and ns.gateway_keyring
    assert ns.ceph_id != "admin" and ns.gateway_id != ns.ceph_id
    assert ns.fs == caps.fs
    granted = readme.caps_lines()
    for key, keyring in ((ns.ceph_id, ns.keyring), (ns.gateway_id, ns.gateway_keyring)):
        assert f"ceph auth get-or-create client.{key} " in granted, key
        assert f" -o {keyring}\n" in granted, keyring


@pytest.mark.parametrize("name", ["closing-table", "cluster-caps"])
def test_the_blocks_xcbench_prints_are_what_it_prints(text, name):
    """Renew with `python -m tests.support.readme --write` when the code changes them."""
    shown = [b.body for b in readme.blocks(text) if b.mark == name]
    assert len(shown) == 1
    assert shown[0] == readme.made_by_xcbench()[name]


def _links(path: Path) -> list[tuple[str, str]]:
    """(file, anchor) of every relative link in ``path`` (file '' for an anchor of its own)."""
    return [(m[0], m[1]) for m in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", path.read_text())
            if not re.match(r"[a-z]+:", m[0])]


def test_links_lead_somewhere():
    docs = [readme.README, readme.ROOT / "CHANGELOG.md", *sorted((readme.ROOT / "docs").rglob("*.md"))]
    for doc in docs:
        for link, anchor in _links(doc):
            target = (doc.parent / link).resolve() if link else doc
            rel = target.relative_to(readme.ROOT).as_posix() if target.is_relative_to(readme.ROOT) else link
            where = f"{doc.relative_to(readme.ROOT)}: {link}#{anchor}"
            assert target.exists() or rel in PENDING, where
            if anchor and target.suffix == ".md" and target.exists():
                assert anchor in readme.anchors(target), where
