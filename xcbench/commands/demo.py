"""xcbench demo: the embedded default: mini cluster + layouts/quick.yaml + report."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("demo", help="the embedded default: mini cluster + layouts/quick.yaml + report")


def run(args) -> int:
    raise XcbError("demo: not implemented yet")
