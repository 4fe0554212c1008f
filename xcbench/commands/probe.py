"""xcbench probe: fio probes of a matrix's cells."""

from xcbench.errors import XcbError


def add_parser(sub):
    return sub.add_parser("probe", help="fio probes of a matrix's cells")


def run(args) -> int:
    raise XcbError("probe: not implemented yet")
