"""The ssh transport for real: an sshd started inside an emulated host (its own port, a
throwaway host key and client key in the test's tmp dir) reached through a private ssh_config
alias (`ssh -F cfg alias`, as users' ~/.ssh/config does it)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.support.emulated import emulated_hosts
from tests.support.sshd import sshd_alias, wait_answers, why_no_sshd
from tests.support.waits import gone
from xcbench.hosts import load_inventory, transport_for
from xcbench.hosts.emulate import free_network
from xcbench.system import proc

TAG = f"{os.getpid() % 10000}"
WHY = why_no_sshd("scp")
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY or "-")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """An emulated host running sshd, and an inventory naming it by an ssh alias."""
    d = tmp_path_factory.mktemp("ssh")
    net = free_network()
    addrs = list(net.hosts())
    name = f"sx{TAG}"
    with emulated_hosts(d, {
            "bridge": {"name": f"xcbs{TAG}", "address": f"{addrs[0]}/24"},
            "hosts": {name: {"roles": ["gateway"], "transport": "netns",
                             "address": str(addrs[9]), "cores": 1}}}, "emu.yaml") as (_, emu):
        host = emu.hosts[0]
        with sshd_alias(host, d, "g-alias") as cfg:
            inv_ssh = d / "ssh.yaml"
            inv_ssh.write_text(yaml.safe_dump({"hosts": {"g2": {
                "roles": ["gateway"], "transport": "ssh", "ssh": "g-alias",
                "ssh_options": ["-F", str(cfg)], "address": host.address,
                "xcbench": [sys.executable, "-m", "xcbench"]}}}))
            inv = load_inventory(inv_ssh)
            wait_answers(transport_for(inv.hosts[0]), d / "sshd.log")
            yield {"inv": inv, "emu": emu, "dir": d, "keys": d / "keys"}


def _ssh(site):
    return transport_for(site["inv"].hosts[0])


AWKWARD = ["a b", "it's", '"q"', "$HOME", "`id`", ";rm -rf /nonexistent", "*", "", "new\nline",
           "tab\there", "ü", "-n", "back\\slash", "%s"]


def test_run_quotes_awkward_arguments_and_passes_env(site):
    t = _ssh(site)
    out = t.run(["printf", "%s|", *AWKWARD])
    assert out.stdout == "".join(a + "|" for a in AWKWARD)
    out = t.run(["sh", "-c", 'printf %s "$XV"'], env={"XV": "a b $c 'd' `e`"})
    assert out.stdout == "a b $c 'd' `e`"
    # it ran on the emulated host: its address, not the root namespace's
    emu = site["emu"].hosts[0]
    addrs = t.run(["ip", "-o", "-4", "addr", "show"]).stdout
    assert f" {emu.address}/24 " in addrs and f" {site['emu'].bridge.ip}/" not in addrs
    bad = t.run(["sh", "-c", "echo oops >&2; exit 7"], check=False)
    assert bad.returncode == 7 and bad.stderr.strip() == "oops"


def test_round_trip(site):
    t = _ssh(site)
    times = []
    for _ in range(5):
        t0 = time.monotonic()
        t.run(["true"])
        times.append(time.monotonic() - t0)
    print(f"\nssh round trip (new connection each, `true`): median {sorted(times)[2] * 1e3:.0f} ms")


# the grace a piped remote command gets after its stdin's EOF, for these tests: what is tested is
# that it is given and then ended, whatever its length (xcbench.hosts.transport.PIPE_GRACE)
GRACE = 1


@pytest.fixture
def grace(monkeypatch):
    monkeypatch.setattr("xcbench.hosts.transport.PIPE_GRACE", GRACE)
    return GRACE


def _remote_pid(p) -> int:
    line = p.popen.stdout.readline()
    assert line.strip().isdigit(), line
    return int(line)


def test_spawn_stop_kills_the_remote_process(site, tmp_path, grace):
    t = _ssh(site)
    p = t.spawn(["sh", "-c", "echo $$; exec sleep 300"], name="sleeper", log=tmp_path / "log",
                pipe=True)
    pid = _remote_pid(p)  # same machine: the remote pid is visible here
    deadline = time.monotonic() + 10  # `echo $$` runs before the shell's exec of sleep
    while psutil.Process(pid).cmdline()[:2] != ["sleep", "300"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert psutil.Process(pid).cmdline()[:2] == ["sleep", "300"]
    t0 = time.monotonic()
    proc.stop(p)
    # it ignores its stdin's EOF: given the grace, then stopped
    assert gone(pid, grace + 5), "the remote sleep outlived proc.stop of its ssh client"
    waited = time.monotonic() - t0
    print(f"\nremote process gone {waited:.1f} s after proc.stop (grace {grace} s)")
    assert waited >= grace, "the remote command got no grace after its stdin's EOF"
    # a duration no other process on the host sleeps: the scan below finds this sleeper only
    mine = ["sleep", f"300.{os.getpid()}{time.monotonic_ns() % 1000:03d}"]
    p = t.spawn(mine, name="sleeper", log=tmp_path / "log")  # no pipe: no grace
    for _ in range(100):
        kids = [q for q in psutil.process_iter(["cmdline"]) if q.info["cmdline"] == mine]
        if kids:
            break
        time.sleep(0.05)
    assert kids
    t0 = time.monotonic()
    proc.stop(p)
    assert all(gone(k.pid, 15) for k in kids), _survivors(kids, site["dir"] / "sshd.log")
    print(f"remote process gone {time.monotonic() - t0:.1f} s after proc.stop (no pipe)")


def test_killed_ssh_client_leaves_no_remote_process(site, tmp_path, grace):
    t = _ssh(site)
    p = t.spawn(["sh", "-c", "echo $$; sleep 300 & exec sleep 301"], name="sleeper",
                log=tmp_path / "log", pipe=True)
    pid = _remote_pid(p)
    # `echo $$` runs before the shell forks its background sleep: wait for both to exist
    deadline = time.monotonic() + 10
    while True:
        group = [q.pid for q in psutil.process_iter() if _pgid(q.pid) == os.getpgid(pid)]
        if len(group) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(group) == 2
    os.kill(p.pid, signal.SIGKILL)  # the ssh client dies; nobody closes anything politely
    p.popen.wait()
    assert all(gone(g, grace + 5) for g in group), \
        "a remote process outlived its killed ssh client"


def _survivors(kids: list[psutil.Process], sshd_log: Path) -> str:
    """What a remote process that outlived its ssh client looked like: its session, group, parent
    (the tied wrapper's shell, or init when that shell was gone) and the sshd's last lines."""
    out = []
    for k in kids:
        with contextlib.suppress(psutil.Error, OSError):  # it may end while we look
            parent = k.parent()
            out.append(f"pid {k.pid} {k.cmdline()} status {k.status()} pgid {os.getpgid(k.pid)} "
                       f"sid {os.getsid(k.pid)} parent {parent.pid if parent else None} "
                       f"{parent.cmdline() if parent else ''}")
    tail = sshd_log.read_text(errors="replace").splitlines()[-15:] if sshd_log.exists() else []
    return "\n".join(["a remote process outlived proc.stop of its ssh client:", *out, "sshd:", *tail])


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def test_spawn_pipe_streams_both_ways_and_ends_on_eof(site):
    t = _ssh(site)
    p = t.spawn(["sh", "-c", 'while read l; do echo "{\\"got\\": \\"$l\\"}"; done; echo end'],
                name="agent", pipe=True)
    p.popen.stdin.write(b"one\ntwo\n")
    p.popen.stdin.flush()
    assert p.popen.stdout.readline() == b'{"got": "one"}\n'
    p.popen.stdin.close()
    assert p.popen.stdout.read() == b'{"got": "two"}\nend\n'
    assert p.popen.wait(timeout=10) == 0  # it ended by itself on EOF, well before the grace


def test_put_and_get(site, tmp_path):
    t = _ssh(site)
    src = tmp_path / "in.bin"
    src.write_bytes(os.urandom(300_000))
    remote = str(site["dir"] / "remote dir" / "copy.bin")
    t.put(src, remote)
    assert Path(remote).read_bytes() == src.read_bytes()  # same machine underneath
    t.get(remote, tmp_path / "back" / "out.bin")
    assert (tmp_path / "back" / "out.bin").read_bytes() == src.read_bytes()


def test_version_check_and_clock_offset_through_ssh(site):
    from xcbench.hosts.checks import check_versions, clock_offsets
    check_versions(site["inv"])
    off = clock_offsets(site["inv"])["g2"]
    assert abs(off["offset_s"]) < off["rtt_s"] / 2 + 0.01  # the same clock underneath
    print(f"\nclock offset through ssh: {off['offset_s'] * 1e3:+.2f} ms (rtt {off['rtt_s'] * 1e3:.1f} ms)")


def test_no_key_material_in_logs(site, tmp_path):
    t = _ssh(site)
    p = t.spawn(["sh", "-c", "echo hello; env; exit 0"], name="talker", log=tmp_path / "log")
    p.popen.wait(timeout=30)
    proc.stop(p)
    secrets = []
    for k in ("client", "host"):
        body = "".join(ln for ln in (site["keys"] / k).read_text().splitlines()
                       if "PRIVATE KEY" not in ln)
        secrets += [body[i:i + 40] for i in range(0, len(body) - 40, 40)]
    for f in [tmp_path / "log", site["dir"] / "sshd.log"]:
        text = f.read_text()
        assert not any(s in text for s in secrets), f"key material in {f}"
        assert "PRIVATE KEY" not in text
    argv = " ".join(t.wrap(["true"]))
    assert not any(s in argv for s in secrets)
