"""xcbench cluster: embedded mini Ceph cluster: up | status | down | env."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("cluster", help="embedded mini Ceph cluster: up | status | down | env")


def run(args) -> int:
    raise XcbError("cluster: not implemented yet")
