"""xcbench compare: compare two runs cell by cell."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("compare", help="compare two runs cell by cell")


def run(args) -> int:
    raise XcbError("compare: not implemented yet")
