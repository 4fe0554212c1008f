"""Transports: the argv each one builds, and local/tied behaviour for real."""

import shlex
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from xcbench import proc
from xcbench.errors import XcbError
from xcbench.hosts import Host, transport_for
from xcbench.hosts.inventory import Link
from xcbench.hosts.transport import TIED, NetnsTransport

LOCAL = Host("l", ("client",), "local", "127.0.0.1")
NETNS = Host("c1", ("client",), "netns", "10.77.0.11", cores=0.5, link=Link("1gbit", 1e9))
SSH = Host("g2", ("gateway",), "ssh", "10.77.0.22", ssh="g2-alias",
           ssh_options=("-F", "cfg", "-p", "2222"))


def test_local_wrap_and_run(tmp_path):
    t = transport_for(LOCAL)
    assert t.shares_fs and t.wrap(["echo", "x"]) == ["echo", "x"]
    assert t.wrap(["echo"], {"A": 1}) == ["env", "A=1", "echo"]
    out = t.run(["sh", "-c", 'printf %s "$XCB_T"'], env={"XCB_T": "a b 'c'"})
    assert out.stdout == "a b 'c'"
    with pytest.raises(XcbError):
        t.wrap(["x"], {"A=B": 1})
    src = tmp_path / "a"
    src.write_text("hello")
    t.put(src, str(tmp_path / "d" / "b"))
    assert (tmp_path / "d" / "b").read_text() == "hello"
    t.get(str(tmp_path / "d" / "b"), tmp_path / "c")
    assert (tmp_path / "c").read_text() == "hello"
    t.put(src, str(src))  # the same file: nothing to do


def test_local_spawn_pipe():
    t = transport_for(LOCAL)
    p = t.spawn(["sh", "-c", 'echo "{\\"n\\": $N}"; sleep 30'], name="t", env={"N": 7}, pipe=True)
    try:
        assert p.popen.stdout.readline() == b'{"n": 7}\n'
    finally:
        proc.stop(p)
    assert not p.alive()


def test_netns_wrap_joins_cgroup_before_netns():
    t = NetnsTransport(NETNS, cgroup_dir=Path("/sys/fs/cgroup/cpu"))
    argv = t.wrap(["xrootd", "-c", "x y"], {"K": "v"})
    assert argv[:2] == ["sh", "-c"]
    assert argv[3] == "/sys/fs/cgroup/cpu/xcb-xcbench-host-c1/cgroup.procs"
    assert argv[4:] == ["nsenter", "--net=/run/netns/xcb-c1", "--", "env", "K=v", "xrootd", "-c",
                        "x y"]
    nocg = NetnsTransport(Host("c2", ("client",), "netns", "10.77.0.12"))
    assert nocg.wrap(["true"]) == ["nsenter", "--net=/run/netns/xcb-c2", "--", "true"]
    assert nocg.shares_fs


def test_netns_not_up_says_so():
    t = NetnsTransport(Host("zz9", ("client",), "netns", "10.77.0.99"))
    with pytest.raises(XcbError, match="host zz9: network namespace xcb-zz9 is not there"):
        t.run(["true"])


def test_ssh_wrap_quotes_one_remote_string():
    t = transport_for(SSH)
    assert not t.shares_fs
    argv = t.wrap(["printf", "%s|", "a b", "it's", "$HOME", ";rm"], {"X": "1 2"})
    assert argv[:7] == ["ssh", "-F", "cfg", "-p", "2222", "-o", "BatchMode=yes"]
    assert argv[-3:-1] == ["g2-alias", "--"]
    assert shlex.split(argv[-1]) == ["env", "X=1 2", "printf", "%s|", "a b", "it's", "$HOME", ";rm"]
    tied = shlex.split(t.wrap(["sleep", "1"], tied=True)[-1])
    assert tied[:3] == ["sh", "-c", TIED] and tied[-2:] == ["sleep", "1"]


def test_scp_options_port():
    from xcbench.hosts.transport import _scp_options
    assert _scp_options(["-F", "cfg", "-p", "2222"]) == ["-F", "cfg", "-P", "2222"]


def _tied(argv):
    return subprocess.Popen(["sh", "-c", TIED, "xcbench-tied", *argv], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, start_new_session=True)


def _gone(pid, timeout=5.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not proc.pid_alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_tied_stops_the_command_when_stdin_closes():
    """What sshd does when the ssh client dies: the remote command's stdin channel closes."""
    p = _tied(["sh", "-c", "echo up; sleep 60 & sleep 60"])
    assert p.stdout.readline() == b"up\n"
    kids = psutil.Process(p.pid).children(recursive=True)
    assert kids
    p.stdin.close()
    assert p.wait(10) != 0
    assert all(_gone(k.pid) for k in kids)


def test_tied_passes_exit_status():
    p = _tied(["sh", "-c", "echo out; exit 3"])
    assert p.stdout.read() == b"out\n" and p.wait(10) == 3
