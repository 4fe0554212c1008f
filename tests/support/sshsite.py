"""An emulated site with a gateway host reached over real ssh, for gateway-agent tests.

    with ssh_site("a", tag) as site:       # client host c (netns), gateway host g (netns + sshd)
        site["inv"], site["g"], site["home"], site["netns"], site["dir"], site["inv_file"]

The gateway host runs sshd on its own address (throwaway keys, a private ssh_config alias); the
inventory reaches it over ssh, as root, with xcbench run there as ``env XCBENCH_HOME=<home>
[agent_env...] python -m xcbench`` (its state home is the test's: its records and reaps stay
out of the machine's). ``letter`` keeps the bridge and host names of two sites apart.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

from tests.support.emulated import emulated_hosts
from tests.support.sshd import SSHD, sshd_alias, wait_answers, why_no_sshd
from xcbench.hosts import load_inventory, transport_for
from xcbench.hosts.emulate import free_network

__all__ = ["SSHD", "reachable_tempdir", "ssh_site", "why_no_ssh_site"]


def why_no_ssh_site() -> str:
    """Why an ssh site cannot be made here ('' when it can)."""
    return why_no_sshd("xrootd", "cmsd")


def reachable_tempdir(prefix: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(d, 0o755)  # the xrootd user reaches the gateway dirs below it
    return d


@contextlib.contextmanager
def ssh_site(letter: str, tag: str, agent_env: dict[str, str] | None = None):
    d = reachable_tempdir("xcb-test-gwagent-")
    net = list(free_network().hosts())
    c, g = f"{letter}c{tag}", f"{letter}g{tag}"
    emu_data = {"bridge": {"name": f"xcb{letter}{tag}", "address": f"{net[0]}/24"},
                "hosts": {c: {"roles": ["client"], "transport": "netns", "address": str(net[10]),
                              "cores": 1.0},
                          g: {"roles": ["gateway", "redirector"], "transport": "netns",
                              "address": str(net[20]), "cores": 1.0}}}
    try:
        with emulated_hosts(d, emu_data, "emu.yaml") as (_, emu):
            gh = next(h for h in emu.hosts if h.name == g)
            with sshd_alias(gh, d, "g-alias") as cfg:
                home = d / "g-home"  # the agent's state home on g
                data = yaml.safe_load((d / "emu.yaml").read_text())
                extra = [f"{k}={v}" for k, v in (agent_env or {}).items()]
                data["hosts"][g] = {"roles": ["gateway", "redirector"], "transport": "ssh",
                                    "ssh": "g-alias", "ssh_options": ["-F", str(cfg)],
                                    "address": gh.address,
                                    "xcbench": ["env", f"XCBENCH_HOME={home}", *extra,
                                                sys.executable, "-m", "xcbench"]}
                (d / "ssh.yaml").write_text(yaml.safe_dump(data))
                inv = load_inventory(d / "ssh.yaml")
                wait_answers(transport_for(next(h for h in inv.hosts if h.name == g)),
                             d / "sshd.log")
                yield {"dir": d, "inv": inv, "inv_file": d / "ssh.yaml", "emu": emu, "g": gh,
                       "home": home, "netns": gh.netns}
    finally:
        shutil.rmtree(d, ignore_errors=True)
