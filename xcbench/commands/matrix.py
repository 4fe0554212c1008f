"""xcbench matrix: check or show a matrix file."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("matrix", help="check or show a matrix file")


def run(args) -> int:
    raise XcbError("matrix: not implemented yet")
