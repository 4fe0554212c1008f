"""Run a server on pre-bound listening sockets (systemd socket-activation protocol).

XRootD 5.5 binds its ports to the wildcard address and has no directive to bind one address,
but its XrdInet::BindSD takes listening sockets handed over the systemd way (LISTEN_FDS /
LISTEN_PID, fds from 3) when their port matches ``xrd.port`` / ``xrd.protocol``. This shim
binds ``ADDR:PORT`` sockets, puts them at fds 3.., sets the variables for its own pid and execs
the server, so the pid stays the same and nothing listens on another interface.

    python -m xcbench.system.sdlisten --listen 127.0.0.1:1094 --listen 127.0.0.1:8080 -- xrootd -c ...

Exit status 98 (with a message on stderr) when a port cannot be bound.
"""

from __future__ import annotations

import os
import socket
import sys

SD_LISTEN_FDS_START = 3
EXIT_BIND = 98


def _parse(argv: list[str]) -> tuple[list[tuple[str, int]], list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m xcbench.system.sdlisten --listen ADDR:PORT ... -- CMD ARGS")
    cut = argv.index("--")
    opts, cmd = argv[:cut], argv[cut + 1:]
    addrs = []
    for i, a in enumerate(opts):
        if a == "--listen":
            host, _, port = opts[i + 1].rpartition(":")
            addrs.append((host, int(port)))
    if not cmd or not addrs:
        raise SystemExit("sdlisten: need at least one --listen and a command")
    return addrs, cmd


def main(argv: list[str] | None = None) -> None:
    addrs, cmd = _parse(sys.argv[1:] if argv is None else argv)
    high = []
    for host, port in addrs:
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            s.listen(255)
        except OSError as e:
            print(f"sdlisten: cannot listen on {host}:{port}: {e.strerror}", file=sys.stderr)
            sys.exit(EXIT_BIND)
        # keep a duplicate above the target range so dup2 below never clobbers a live socket
        high.append(os.dup(s.fileno()))
        s.close()
    for i, fd in enumerate(high):
        os.dup2(fd, SD_LISTEN_FDS_START + i)
        os.set_inheritable(SD_LISTEN_FDS_START + i, True)
        if fd >= SD_LISTEN_FDS_START + len(high):
            os.close(fd)
    os.environ["LISTEN_FDS"] = str(len(high))
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.environ.pop("LISTEN_FDNAMES", None)
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        print(f"sdlisten: cannot run {cmd[0]}: {e.strerror}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main()
