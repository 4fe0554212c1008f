"""Transports: the argv each one builds, and local/tied behaviour for real."""

import shlex
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.support.waits import gone
from xcbench.errors import XcbError
from xcbench.hosts import Host, transport_for
from xcbench.hosts.inventory import Link
from xcbench.hosts.transport import SSH_SAFE, TIED, NetnsTransport
from xcbench.system import proc

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
    assert t.xcbench_argv()[1:] == ["-m", "xcbench"]
    p = t.spawn(["sh", "-c", 'read x; echo "{\\"n\\": $N, \\"x\\": \\"$x\\"}"; sleep 30'],
                name="t", env={"N": 7}, pipe=True)
    try:
        p.popen.stdin.write(b"hi\n")
        p.popen.stdin.flush()
        assert p.popen.stdout.readline() == b'{"n": 7, "x": "hi"}\n'
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
    n = len(SSH_SAFE)
    assert argv[:1 + n] == ["ssh", *SSH_SAFE]  # first: ssh keeps the first value of an option
    assert argv[1 + n:7 + n] == ["-F", "cfg", "-p", "2222", "-o", "BatchMode=yes"]
    assert argv[-3:-1] == ["g2-alias", "--"]
    assert shlex.split(argv[-1]) == ["env", "X=1 2", "printf", "%s|", "a b", "it's", "$HOME", ";rm"]
    tied = shlex.split(t.wrap(["sleep", "1"], tied=True)[-1])
    assert tied[:6] == ["sh", "-c", TIED, "xcbench-tied", "0", "0"]
    assert tied[-2:] == ["sleep", "1"]
    assert t.xcbench_argv() == ["xcbench"]


def test_ssh_checks_the_host_key_and_forwards_nothing_whatever_the_config_says(tmp_path):
    """`ssh -G` prints the options ssh would use: a user's ssh_config and the inventory's
    ssh_options that forward the agent, X11 and ports and accept any host key lose to ours."""
    import shutil
    if shutil.which("ssh") is None:
        pytest.skip("no OpenSSH client")
    cfg = tmp_path / "cfg"
    cfg.write_text("Host *\n  ForwardAgent yes\n  ForwardX11 yes\n  StrictHostKeyChecking no\n"
                   "  LocalForward 2222 127.0.0.1:22\n  PermitLocalCommand yes\n  LocalCommand id\n")
    t = transport_for(Host("g9", ("gateway",), "ssh", "192.0.2.9", ssh="g9-alias",
                           ssh_options=("-F", str(cfg), "-o", "ForwardAgent=yes")))
    argv = t.wrap(["true"])
    opts = argv[1:argv.index("g9-alias")]
    got = subprocess.run(["ssh", "-G", *opts, "g9-alias"], capture_output=True, text=True,
                         timeout=30, check=True).stdout.splitlines()
    conf = dict(ln.split(" ", 1) for ln in got if " " in ln)
    assert (conf["stricthostkeychecking"], conf["forwardagent"], conf["forwardx11"],
            conf["clearallforwardings"], conf["permitlocalcommand"]) == ("true", "no", "no", "yes", "no")
    assert conf["batchmode"] == "yes"


def test_scp_options_port():
    from xcbench.hosts.transport import _scp_options
    assert _scp_options(["-F", "cfg", "-p", "2222"]) == ["-F", "cfg", "-P", "2222"]


def _tied(argv, grace=0, forward=0):
    return subprocess.Popen(["sh", "-c", TIED, "xcbench-tied", str(grace), str(forward), *argv],
                            stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, start_new_session=True)


def test_tied_stops_the_command_when_stdin_closes():
    """What sshd does when the ssh client dies: the remote command's stdin channel closes."""
    p = _tied(["sh", "-c", "echo up; sleep 60 & sleep 60"])
    assert p.stdout.readline() == b"up\n"
    kids = psutil.Process(p.pid).children(recursive=True)
    assert kids
    p.stdin.close()
    assert p.wait(10) != 0
    assert all(gone(k.pid, 5.0, 0.02) for k in kids)


def test_tied_passes_exit_status():
    p = _tied(["sh", "-c", "echo out; exit 3"])
    assert p.stdout.read() == b"out\n" and p.wait(10) == 3


def test_tied_forwards_stdin_and_lets_the_command_end_on_eof():
    p = _tied(["sh", "-c", "while read l; do echo got $l; done; echo eof"], grace=10, forward=1)
    p.stdin.write(b"a\nb\n")
    p.stdin.close()
    t0 = time.monotonic()
    assert p.stdout.read() == b"got a\ngot b\neof\n" and p.wait(10) == 0
    assert time.monotonic() - t0 < 5  # it ended by itself, not after the grace


def test_tied_forwarding_still_stops_a_command_that_ignores_eof():
    p = _tied(["sh", "-c", "echo up; sleep 60"], grace=0, forward=1)
    assert p.stdout.readline() == b"up\n"
    kids = psutil.Process(p.pid).children(recursive=True)
    p.stdin.close()
    assert p.wait(10) != 0 and all(gone(k.pid, 5.0, 0.02) for k in kids)
