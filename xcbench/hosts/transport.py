"""How a command reaches a host: the same argv, run locally, in an emulated host's network
namespace (and CPU cgroup), or over the OpenSSH client (so users' ~/.ssh/config, agents and jump
hosts work as they always do).

    t = transport_for(host)
    t.run(["xrootd", "-v"])                       # proc.run(t.wrap(argv)), same keywords
    p = t.spawn(argv, name="xrootd", log=..., procs=procs)   # proc.stop(p) stops it ON the host

netns: the wrapper joins the host's cgroup BEFORE entering the namespace (``ip netns exec``
would remount /sys and hide /sys/fs/cgroup), and enters only the network namespace
(``nsenter --net``): the mounts (ceph-fuse, tmpfs) stay those of the root namespace.
ssh: a spawned command is tied to the ssh client's stdin: when the client dies or its stdin
closes, a watcher on the remote side stops the command's whole process group.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.hosts.inventory import Host
from xcbench.system import proc
from xcbench.system.cgroups import detect

NETNS_DIR = Path("/run/netns")
# ssh never prompts (a run must not hang on a password question) and never asks for a tty
SSH_DEFAULTS = ("-o", "BatchMode=yes", "-T")
# the gateway keyring and the run's CA key travel over ssh: the host's key is checked (known
# already: never accepted on first sight), and nothing of this machine is forwarded to it (no
# agent, no X11, no port forwardings: ssh_config's LocalForward etc. are cleared), whatever the
# user's ssh_config or the inventory's ssh_options say; first on the command line, as ssh keeps
# the first value it is given for each option
SSH_SAFE = ("-o", "StrictHostKeyChecking=yes", "-o", "ForwardAgent=no", "-o", "ForwardX11=no",
            "-o", "ClearAllForwardings=yes", "-o", "PermitLocalCommand=no")
# the remote side of a spawned ssh command ($1: grace seconds, $2: 1 to forward stdin): the
# command in its own process group; a watcher that copies the ssh channel (stdin) to the command
# (or to /dev/null) until EOF (the client stopped or died), closes the command's stdin, waits the
# grace, then stops that group (TERM, KILL after 3 s); the command's exit status is the session's
TIED = ('g=$1; f=$2; shift 2; exec 3<&0 0</dev/null; '
        'if [ "$f" = 1 ]; then d=$(mktemp -d) && mkfifo "$d/i" || exit 125; '
        'setsid "$@" <"$d/i" 3<&- & c=$!; exec 4>"$d/i"; rm -r "$d"; '
        'else setsid "$@" 3<&- & c=$!; exec 4>/dev/null; fi; '
        '( cat <&3 >&4; exec 4>&-; sleep $g; kill -s TERM -- -$c || kill -s TERM $c; sleep 3; '
        'kill -s KILL -- -$c ) >/dev/null 2>&1 & w=$!; '
        'exec 3<&- 4>&-; wait $c; rc=$?; exec 2>/dev/null; kill $w; exit $rc')
# a command reading its stdin (pipe=True) gets this long after EOF to end by itself
PIPE_GRACE = 5


def _env_argv(argv: Sequence[object], env: Mapping[str, object] | None) -> list[str]:
    args = [str(a) for a in argv]
    if not args:
        raise XcbError("transport: an empty command")
    if env:
        for k in env:
            if not k or "=" in k or not (k[0].isalpha() or k[0] == "_"):
                raise XcbError(f"transport: {k!r} is not an environment variable name")
        return ["env", *(f"{k}={v}" for k, v in env.items()), *args]
    return args


class Transport:
    """Runs commands on this machine (transport ``local``)."""

    kind = "local"
    shares_fs = True  # local and netns see the same files; an ssh host has its own

    def __init__(self, host: Host):
        self.host = host

    def wrap(self, argv: Sequence[object], env: Mapping[str, object] | None = None, *,
             tied: bool = False, stdin: bool = False) -> list[str]:
        """The argv that runs ``argv`` (with ``env`` added to its environment) on the host.
        ``tied`` (ssh): the remote command stops when the ssh client's stdin closes (``stdin``:
        it reads that stdin and gets PIPE_GRACE s after EOF to end by itself)."""
        return _env_argv(argv, env)

    def xcbench_argv(self) -> list[str]:
        """The argv that runs xcbench on the host (the inventory's ``xcbench:``, else this
        interpreter's for local and netns, ``xcbench`` on an ssh host's PATH)."""
        if self.host.xcbench:
            return list(self.host.xcbench)
        return ["xcbench"] if self.kind == "ssh" else [sys.executable, "-m", "xcbench"]

    def ready(self) -> None:
        """XcbError when the host cannot run commands now (an emulated host that is not up)."""

    def run(self, argv: Sequence[object], *, env: Mapping[str, object] | None = None,
            **kw: Any) -> proc.Completed:
        self.ready()
        return proc.run(self.wrap(argv, env), **kw)

    def spawn(self, argv: Sequence[object], *, name: str, log: str | os.PathLike | None = None,
              env: Mapping[str, object] | None = None, procs: proc.ProcessSet | None = None,
              pipe: bool = False, log_cap: int | None = None) -> proc.Proc:
        """Start ``argv`` on the host; ``proc.stop`` stops it there. ``pipe``: its stdin and
        stdout are pipes (``popen.stdin``/``popen.stdout``; stderr goes to ``log``, at most
        ``log_cap`` bytes of it: proc.spawn); closing stdin is its cue to end (ssh: it is
        stopped PIPE_GRACE s after that)."""
        self.ready()
        return proc.spawn(self.wrap(argv, env), name=name, log=log, procs=procs, pipe=pipe,
                          stdin=pipe, log_cap=log_cap)

    def put(self, local: str | os.PathLike, remote: str) -> None:
        """Copy a local file to ``remote`` on the host (its directory is made)."""
        _copy(Path(local), Path(remote))

    def get(self, remote: str, local: str | os.PathLike) -> None:
        _copy(Path(remote), Path(local))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.host.name}>"


def _copy(src: Path, dst: Path) -> None:
    try:
        if dst.exists() and os.path.samefile(src, dst):
            return
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    except OSError as e:
        raise XcbError(f"copy {src} -> {dst}: {e.strerror or e}") from None


class NetnsTransport(Transport):
    """An emulated host: its network namespace ``xcb-<name>`` and CPU cgroup (when it has cores)."""

    kind = "netns"

    def __init__(self, host: Host, cgroup_dir: Path | None = None):
        super().__init__(host)
        self._cgroup_dir = cgroup_dir

    @property
    def netns_path(self) -> Path:
        return NETNS_DIR / self.host.netns

    def cgroup_path(self) -> Path | None:
        """The host's cgroup directory (None: no CPU quota for this host)."""
        if self.host.cores is None:
            return None
        if self._cgroup_dir is None:
            self._cgroup_dir = detect().base
        return self._cgroup_dir / self.host.cgroup

    def wrap(self, argv: Sequence[object], env: Mapping[str, object] | None = None, *,
             tied: bool = False, stdin: bool = False) -> list[str]:
        inner = ["nsenter", f"--net={self.netns_path}", "--", *_env_argv(argv, env)]
        cg = self.cgroup_path()
        if cg is None:
            return inner
        # join the cgroup first (this shell's pid: what it execs stays in it), then the netns
        return ["sh", "-c", 'echo $$ > "$0" || exit 125; exec "$@"', str(cg / "cgroup.procs"),
                *inner]

    def ready(self) -> None:
        if not self.netns_path.exists():
            raise XcbError(f"host {self.host.name}: network namespace {self.host.netns} is not "
                           f"there (run `xcbench hosts up FILE` first)")
        cg = self.cgroup_path()
        if cg is not None and not cg.is_dir():
            raise XcbError(f"host {self.host.name}: cgroup {cg} is not there "
                           f"(run `xcbench hosts up FILE` first)")


def _scp_options(opts: Sequence[str]) -> list[str]:
    """ssh's options as scp takes them (the port is -P there)."""
    out, it = [], iter(opts)
    for o in it:
        out.append("-P" if o == "-p" else o)
    return out


class SshTransport(Transport):
    """A real host through the OpenSSH client (``ssh: alias`` and optional ``ssh_options``)."""

    kind = "ssh"
    shares_fs = False

    def _ssh(self) -> list[str]:
        return ["ssh", *SSH_SAFE, *self.host.ssh_options, *SSH_DEFAULTS]

    def wrap(self, argv: Sequence[object], env: Mapping[str, object] | None = None, *,
             tied: bool = False, stdin: bool = False) -> list[str]:
        remote = _env_argv(argv, env)
        if tied:
            grace = PIPE_GRACE if stdin else 0
            remote = ["sh", "-c", TIED, "xcbench-tied", str(grace), str(int(stdin)), *remote]
        # ssh joins its arguments with spaces for the remote shell: hand it one quoted string
        return [*self._ssh(), str(self.host.ssh), "--", shlex.join(remote)]

    def run(self, argv: Sequence[object], *, env: Mapping[str, object] | None = None,
            **kw: Any) -> proc.Completed:
        cmd = self.wrap(argv, env)
        if kw.get("input") is None:
            cmd.insert(1, "-n")  # never read our own stdin (a terminal)
        return proc.run(cmd, **kw)

    def spawn(self, argv: Sequence[object], *, name: str, log: str | os.PathLike | None = None,
              env: Mapping[str, object] | None = None, procs: proc.ProcessSet | None = None,
              pipe: bool = False, log_cap: int | None = None) -> proc.Proc:
        return proc.spawn(self.wrap(argv, env, tied=True, stdin=pipe), name=name, log=log,
                          procs=procs, pipe=pipe, stdin=True, log_cap=log_cap)

    def _scp(self, src: str, dst: str) -> None:
        proc.run(["scp", "-q", *SSH_SAFE, *_scp_options(self.host.ssh_options), "-o", "BatchMode=yes",
                  src, dst], timeout=600)

    def put(self, local: str | os.PathLike, remote: str) -> None:
        parent = os.path.dirname(remote)
        if parent:
            self.run(["mkdir", "-p", parent], timeout=60)
        self._scp(str(local), f"{self.host.ssh}:{remote}")

    def get(self, remote: str, local: str | os.PathLike) -> None:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        self._scp(f"{self.host.ssh}:{remote}", str(local))


# transport name -> class; xcbench.hosts.steps adds "slurm" (job steps) when the package loads
KINDS: dict[str, type[Transport]] = {"local": Transport, "netns": NetnsTransport, "ssh": SshTransport}


def transport_for(host: Host) -> Transport:
    """The transport of ``host`` (by its ``transport`` field)."""
    return KINDS[host.transport](host)
