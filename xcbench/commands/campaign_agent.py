"""xcbench campaign-agent: one client host's share of a campaign level (hidden; started by
`xcbench run --hosts` on each client host, see xcbench.scaleout.agent for the protocol)."""

from __future__ import annotations

from xcbench.scaleout import agent


def add_parser(sub):
    # no help=: argparse leaves a subcommand without help out of `xcbench --help`
    return sub.add_parser("campaign-agent", help="(internal) one client host's share of a campaign",
                          description="Run one client host's share of a "
                          "campaign level: a request on stdin, JSON lines of records on stdout.")


def main(args) -> int:
    return agent.main()
