"""This thread's transfer client of a kind (xrootd | gfal2 | http): gfal2 contexts and HTTP
connections are not shared between threads. Apart from :mod:`xcbench.clients.base` (the base
classes every client imports), so that the implementations and their factory form no cycle."""

from __future__ import annotations

import threading

from xcbench.clients.base import Client
from xcbench.clients.gfal2_client import Gfal2Client
from xcbench.clients.http_client import HttpClient
from xcbench.clients.xrootd_client import XrootdClient

KINDS: dict[str, type[Client]] = {"xrootd": XrootdClient, "gfal2": Gfal2Client, "http": HttpClient}
_local = threading.local()


def thread_client(kind: str) -> Client:
    """This thread's client of ``kind`` (xrootd | gfal2 | http): gfal2 contexts and HTTP
    connections are not shared between threads."""
    cache = getattr(_local, "clients", None)
    if cache is None:
        cache = _local.clients = {}
    c = cache.get(kind)
    if c is None:
        if kind not in KINDS:
            raise ValueError(f"unknown client {kind!r}")
        c = cache[kind] = KINDS[kind]()
    return c
