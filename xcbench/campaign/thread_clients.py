"""This thread's transfer client of a kind (xrootd | gfal2 | http): gfal2 contexts and HTTP
connections are not shared between threads. Apart from :mod:`xcbench.campaign.clients` (the base
classes every client imports), so that the implementations and their factory form no cycle."""

from __future__ import annotations

import threading

from xcbench.campaign.clients import Client

_local = threading.local()


def thread_client(kind: str) -> Client:
    """This thread's client of ``kind`` (xrootd | gfal2 | http): gfal2 contexts and HTTP
    connections are not shared between threads."""
    cache = getattr(_local, "clients", None)
    if cache is None:
        cache = _local.clients = {}
    c = cache.get(kind)
    if c is None:
        cls: type[Client]
        if kind == "xrootd":
            from xcbench.campaign.client_xrootd import XrootdClient as cls
        elif kind == "gfal2":
            from xcbench.campaign.client_gfal2 import Gfal2Client as cls
        elif kind == "http":
            from xcbench.campaign.client_http import HttpClient as cls
        else:
            raise ValueError(f"unknown client {kind!r}")
        c = cache[kind] = cls()
    return c
