"""xcbench gateway: start/stop a cell's XRootD gateway for manual exploration."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("gateway", help="start/stop a cell's XRootD gateway for manual exploration")


def run(args) -> int:
    raise XcbError("gateway: not implemented yet")
