"""xcbench campaign: an FTS-style transfer campaign into a gateway."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("campaign", help="an FTS-style transfer campaign into a gateway")


def run(args) -> int:
    raise XcbError("campaign: not implemented yet")
