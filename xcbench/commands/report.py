"""xcbench report: render a report of one or more runs."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("report", help="render a report of one or more runs")


def run(args) -> int:
    raise XcbError("report: not implemented yet")
