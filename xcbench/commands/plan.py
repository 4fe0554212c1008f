"""xcbench plan: capacity planning and gateway sizing."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("plan", help="capacity planning and gateway sizing")


def run(args) -> int:
    raise XcbError("plan: not implemented yet")
