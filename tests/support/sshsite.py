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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml

from xcbench.hosts.emulate import why_not
from xcbench.system import proc

SSHD = "/usr/sbin/sshd"
PORT = 2222


def why_no_ssh_site() -> str:
    """Why an ssh site cannot be made here ('' when it can)."""
    if not os.path.exists(SSHD):
        return "sshd is not installed (Debian package openssh-server)"
    return why_not("xrootd", "cmsd", "ssh", "ssh-keygen") or ""


def reachable_tempdir(prefix: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(d, 0o755)  # the xrootd user reaches the gateway dirs below it
    return d


@contextlib.contextmanager
def ssh_site(letter: str, tag: str, agent_env: dict[str, str] | None = None):
    from xcbench.hosts import load_inventory, transport_for
    from xcbench.hosts.emulate import down, free_network, up
    d = reachable_tempdir("xcb-test-gwagent-")
    net = list(free_network().hosts())
    c, g = f"{letter}c{tag}", f"{letter}g{tag}"
    emu_data = {"bridge": {"name": f"xcb{letter}{tag}", "address": f"{net[0]}/24"},
                "hosts": {c: {"roles": ["client"], "transport": "netns", "address": str(net[10]),
                              "cores": 1.0},
                          g: {"roles": ["gateway", "redirector"], "transport": "netns",
                              "address": str(net[20]), "cores": 1.0}}}
    (d / "emu.yaml").write_text(yaml.safe_dump(emu_data))
    emu = load_inventory(d / "emu.yaml")
    state = d / "hosts-state"
    up(emu, state)
    procs = proc.ProcessSet(record=False)
    made_privsep = not Path("/run/sshd").exists()
    try:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd refuses to start without it
        keys = d / "keys"
        keys.mkdir(mode=0o700)
        for k in ("host", "client"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "xcbench-test",
                            "-f", str(keys / k)], check=True)
        (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
        gh = next(h for h in emu.hosts if h.name == g)
        (d / "sshd_config").write_text(
            f"Port {PORT}\nListenAddress {gh.address}\nHostKey {keys / 'host'}\n"
            f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPidFile none\nStrictModes no\n"
            "UsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n")
        transport_for(gh).spawn([SSHD, "-D", "-e", "-f", d / "sshd_config"], name="sshd",
                                log=d / "sshd.log", procs=procs)
        host_pub = " ".join((keys / "host.pub").read_text().split()[:2])
        (keys / "known_hosts").write_text(f"[{gh.address}]:{PORT} {host_pub}\n")
        cfg = d / "ssh_config"
        cfg.write_text(f"Host g-alias\n  HostName {gh.address}\n  Port {PORT}\n  User root\n"
                       f"  IdentityFile {keys / 'client'}\n  IdentitiesOnly yes\n"
                       f"  UserKnownHostsFile {keys / 'known_hosts'}\n"
                       "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n")
        home = d / "g-home"  # the agent's state home on g
        data = yaml.safe_load((d / "emu.yaml").read_text())
        extra = [f"{k}={v}" for k, v in (agent_env or {}).items()]
        data["hosts"][g] = {"roles": ["gateway", "redirector"], "transport": "ssh",
                            "ssh": "g-alias", "ssh_options": ["-F", str(cfg)],
                            "address": gh.address,
                            "xcbench": ["env", f"XCBENCH_HOME={home}", *extra, sys.executable,
                                        "-m", "xcbench"]}
        (d / "ssh.yaml").write_text(yaml.safe_dump(data))
        inv = load_inventory(d / "ssh.yaml")
        t = transport_for(next(h for h in inv.hosts if h.name == g))
        deadline = time.monotonic() + 30
        while t.run(["true"], check=False, timeout=10).returncode != 0:  # until sshd answers
            assert time.monotonic() < deadline, (d / "sshd.log").read_text()[-2000:]
            time.sleep(0.1)
        yield {"dir": d, "inv": inv, "inv_file": d / "ssh.yaml", "emu": emu, "g": gh,
               "home": home, "netns": gh.netns}
    finally:
        procs.stop_all()
        down(state, emu)
        if made_privsep and not any(p.info["name"] == "sshd" for p in psutil.process_iter(["name"])):
            with contextlib.suppress(OSError):
                Path("/run/sshd").rmdir()
        shutil.rmtree(d, ignore_errors=True)
