"""An xrootd config rendered for a target, as lines (the gateway config tests)."""

from __future__ import annotations

from xcbench.gateway import render_config


def xrootd(target, role="standalone", **kw):
    kw.setdefault("http_port", 1094)
    return lines(render_config("xrootd", role=role, name="xcb", target=target, port=1094,
                               adminpath="/run/x", **kw))



def lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


