"""xcbench gateway-agent: one gateway host's part of a gateway (hidden; started over the host's
transport by xcbench.gateway.remote, see xcbench.gateway.agent for the protocol)."""

from __future__ import annotations

from xcbench.gateway import agent


def add_parser(sub):
    return sub.add_parser("gateway-agent", help="(internal) a gateway's daemons on this gateway host",
                          description="Run one gateway host's part of a gateway: one request on "
                          "stdin, JSON lines (ready, samples, end) on stdout.")


def main(args) -> int:
    return agent.main()
