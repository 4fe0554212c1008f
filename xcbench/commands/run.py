"""xcbench run: run a matrix: probes, campaigns, telemetry, verdicts, report."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("run", help="run a matrix: probes, campaigns, telemetry, verdicts, report")


def run(args) -> int:
    raise XcbError("run: not implemented yet")
