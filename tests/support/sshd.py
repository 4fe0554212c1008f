"""An sshd inside an emulated host, reached through a private ssh_config alias (`ssh -F cfg
alias`, as a user's ~/.ssh/config does it): throwaway host and client keys, its own port in the
host's network namespace."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from xcbench.hosts import transport_for
from xcbench.hosts.emulate import why_not
from xcbench.system import proc

SSHD = "/usr/sbin/sshd"
PRIVSEP = Path("/run/sshd")  # sshd refuses to start without its privilege separation dir
PORT = 2222  # in the emulated host's own network namespace: no clash with the machine's sshd


def why_no_sshd(*tools: str) -> str:
    """Why an sshd cannot be started and reached here ('' when it can), with ``tools`` too."""
    if not os.path.exists(SSHD):
        return "sshd is not installed (Debian package openssh-server)"
    return why_not("ssh", "ssh-keygen", *tools) or ""


@contextlib.contextmanager
def _privsep() -> Iterator[None]:
    made = not PRIVSEP.exists()
    PRIVSEP.mkdir(mode=0o755, exist_ok=True)
    try:
        yield
    finally:
        # another sshd (the machine's, another test session's) may still need it
        if made and not any(p.info["name"] == "sshd" for p in psutil.process_iter(["name"])):
            with contextlib.suppress(OSError):
                PRIVSEP.rmdir()


@contextlib.contextmanager
def sshd_alias(host, d: Path, alias: str) -> Iterator[Path]:
    """sshd in emulated ``host``'s network namespace, listening on its address (keys in
    ``d``/keys, its log ``d``/sshd.log); yields an ssh_config naming it ``alias`` (user root,
    these keys only, its host key the only one known). Stopped after."""
    keys = d / "keys"
    keys.mkdir(parents=True, mode=0o700)
    for k in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "xcbench-test",
                        "-f", str(keys / k)], check=True)
    (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
    (d / "sshd_config").write_text(
        f"Port {PORT}\nListenAddress {host.address}\nHostKey {keys / 'host'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPidFile none\nStrictModes no\n"
        "UsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nSubsystem sftp /usr/lib/openssh/sftp-server\n")
    procs = proc.ProcessSet(record=False)
    with _privsep():
        try:
            transport_for(host).spawn([SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
                                      name="sshd", log=d / "sshd.log", procs=procs)
            host_pub = " ".join((keys / "host.pub").read_text().split()[:2])
            (keys / "known_hosts").write_text(f"[{host.address}]:{PORT} {host_pub}\n")
            cfg = d / "ssh_config"
            cfg.write_text(f"Host {alias}\n  HostName {host.address}\n  Port {PORT}\n"
                           f"  User root\n  IdentityFile {keys / 'client'}\n  IdentitiesOnly yes\n"
                           f"  UserKnownHostsFile {keys / 'known_hosts'}\n"
                           "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n")
            yield cfg
        finally:
            procs.stop_all()


def wait_answers(transport, log: Path, seconds: float = 30) -> None:
    """Until ``transport`` (over ssh) runs `true`; the sshd's log tail if it never does."""
    deadline = time.monotonic() + seconds
    while transport.run(["true"], check=False, timeout=10).returncode != 0:
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.1)
