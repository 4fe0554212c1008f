"""xcbench runs: list or show runs in the result store."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("runs", help="list or show runs in the result store")


def run(args) -> int:
    raise XcbError("runs: not implemented yet")
