"""`xcbench` command line: one module per subcommand in xcbench/commands/ (asv-style).

Each command module defines ``add_parser(subparsers)`` (returning its parser) and
``main(args) -> int``. User errors are XcbError: one line, exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Sequence

from xcbench import __version__
from xcbench.commands.options import apply_ceph_name
from xcbench.errors import XcbError
from xcbench.hosts import slurm_sweep
from xcbench.system import cgroups, orphans, statedir, sysctlrec
from xcbench.system.signals import EXIT_CODE, Interrupted, StopFlag

# commands that start processes: they stop on SIGINT/SIGTERM/SIGHUP (xcbench.system.signals), record
# what they start (xcbench.system.orphans) and first stop what a killed earlier command left behind
STARTS_PROCESSES = ("cluster", "gateway", "probe", "campaign", "run", "demo", "selftest", "confirm",
                    "baseline", "gateway-agent")
COMMANDS = ("cluster", "matrix", "gateway", "probe", "campaign", "run", "demo", "runs",
            "report", "compare", "plan", "telemetry", "baseline", "selftest", "confirm", "hosts",
            "campaign-agent", "smoke", "gateway-agent", "node-clean")


HIDDEN = ("campaign-agent", "gateway-agent", "node-clean")  # started by xcbench on other hosts, not by users
# commands that never load a matrix: node-clean runs on every node of a Slurm run when it ends,
# and the matrix sections' imports (the campaign engine, scipy) were nine tenths of its start-up
NO_MATRIX = ("node-clean",)
PROG = "xcbench"


class _Parser(argparse.ArgumentParser):
    """argparse with the one-line error every other user error has (usage stays in --help)."""

    def error(self, message: str):
        self.exit(2, error_line(self, message))


def error_line(parser: argparse.ArgumentParser, message: str) -> str:
    """``xcbench: error: run: MESSAGE (see `xcbench run --help`)``: the prefix once, the
    command named, and for a mistyped flag the one it resembles."""
    import difflib
    message = " ".join(message.split())
    words = message.split(": ", 1)[1].split() if message.startswith("unrecognized arguments:") else []
    flags = [o for a in parser._actions if a.help != argparse.SUPPRESS for o in a.option_strings
             if o.startswith("--")]
    hints = [m[0] for w in words if w.startswith("--")
             for m in [difflib.get_close_matches(w.split("=")[0], flags, n=1, cutoff=0.6)] if m]
    cmd = parser.prog.removeprefix(PROG).strip()
    return (f"{PROG}: error: {cmd + ': ' if cmd else ''}{message}"
            f"{'; did you mean ' + ' or '.join(hints) + '?' if hints else ''} "
            f"(see `{parser.prog} --help`)\n")


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The parser of ``commands`` (all of them unless told: --help lists them all)."""
    parser = _Parser(
        prog=PROG,
        description="Measure XRootD gateways into Ceph and attribute what caps them.")
    parser.add_argument("--version", action="version", version=f"xcbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_Parser)
    for name in commands:
        mod = importlib.import_module(f"xcbench.commands.{name.replace('-', '_')}")
        p = mod.add_parser(sub)
        p.set_defaults(_main=mod.main)
    _describe(parser)
    _own_parser(parser)
    sub._choices_actions[:] = [a for a in sub._choices_actions if a.dest not in HIDDEN]
    return parser


def _own_parser(parser: argparse.ArgumentParser) -> None:
    """Each parser leaves itself in the namespace (the innermost one's default wins), so an
    argument no parser took is reported against the (sub)command it was given to."""
    parser.set_defaults(_parser=parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for p in action.choices.values():
                _own_parser(p)


def _describe(parser: argparse.ArgumentParser) -> None:
    """Every (sub)command's --help opens with a description: its own, else its one-line help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, p in action.choices.items():
                if not p.description and helps.get(name):
                    h = str(helps[name])
                    p.description = h[0].upper() + h[1:] + ("" if h.endswith(".") else ".")
                _describe(p)


def _needed(argv: Sequence[str]) -> Sequence[str]:
    """The commands whose modules a command line needs: the one it names first (its module alone
    is imported: a run's pandas and plots are no start-up cost of `hosts`, `--version` or an
    agent, which other hosts start many times), none for a bare --version, else all (--help,
    a mistyped command: the choices are listed)."""
    if list(argv) == ["--version"]:
        return ()
    return (argv[0],) if argv and argv[0] in COMMANDS else COMMANDS


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(_needed(sys.argv[1:] if argv is None else argv))
    args, extra = parser.parse_known_args(argv)
    if extra:
        args._parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command not in NO_MATRIX:  # every other command may load a matrix: its sections
        importlib.import_module("xcbench.run.matrix_sections")
    try:
        apply_ceph_name(args)
        if args.command in STARTS_PROCESSES:
            return _guarded(args)
        return int(args._main(args) or 0)
    except XcbError as e:
        print(f"xcbench: error: {e}", file=sys.stderr)
        return e.exit_code
    except (KeyboardInterrupt, Interrupted):
        print("xcbench: interrupted", file=sys.stderr)
        return EXIT_CODE
    except BrokenPipeError:  # `xcbench ... | head`: the reader left, that is not an error
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _guarded(args) -> int:
    """Run a command that starts processes: orphans of a killed earlier command stopped first,
    what this one starts recorded, signals turned into a clean stop."""
    import faulthandler
    import signal

    # `kill -USR1 <pid>` prints every thread's stack to stderr: what a command that does not
    # stop is waiting for (the tests ask for it before they give up on one)
    with contextlib.suppress(AttributeError, ValueError, OSError):  # a stderr without a file
        faulthandler.register(signal.SIGUSR1, all_threads=True)       # (main() called in-process)
    statedir.ensure()  # a state home that is not ours: one line, exit 2, before anything runs
    with StopFlag():
        try:
            said = orphans.reap()
        except Exception as e:  # noqa: BLE001 - what a killed command left costs one line, never this one
            said = f"xcbench: warning: what earlier commands left was not reaped ({type(e).__name__}: {e})"
        if said:
            print(said, file=sys.stderr, flush=True)
        _sweep_host_changes()
        orphans.start()
        try:
            return int(args._main(args) or 0)
        finally:
            orphans.stop()  # the record goes, unless something it names is still there


def _sweep_host_changes() -> None:
    """Undo what a killed earlier command changed on the host beyond processes and mounts:
    its CPU-quota cgroups (``cores``; emulated hosts' quotas are swept by `hosts down`), the
    sysctls ``--tune-tcp`` set, its Slurm job steps and its nodes' scratch
    (xcbench.hosts.slurm_sweep.sweep)."""
    try:
        removed = cgroups.sweep_stale()
        restored = sysctlrec.restore_stale()
    except XcbError as e:  # a state dir that is not ours: said, and nothing acted on
        print(f"xcbench: warning: {e}", file=sys.stderr, flush=True)
        return
    if removed:
        print(f"xcbench: an earlier xcbench was killed and left cgroups behind: removed "
              f"{', '.join(removed)[:300]}", file=sys.stderr, flush=True)
    if restored:
        print(f"xcbench: an earlier xcbench was killed with --tune-tcp in effect: "
              f"{'; '.join(restored)[:400]}", file=sys.stderr, flush=True)
    said = slurm_sweep.sweep()  # its job steps, an allocation it asked for, its nodes' scratch
    if said:
        print(said, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
