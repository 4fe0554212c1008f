"""Emulated hosts on the real kernel (`xcbench hosts up/down`): 2 client and 2 gateway
namespaces on a bridge, one shaped link, a CPU quota; isolation, reachability, the shaped rate
held (iperf3), the quota held, and nothing left after `down` — also after `up` was killed -9.

The machine is shared: names carry this process's id and the network is a free 10.2xx.y.0/24.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from xcbench.errors import XcbError
from xcbench.hosts import load_inventory, transport_for
from xcbench.hosts.emulate import free_network, why_not
from xcbench.network.baseline import parse_iperf3
from xcbench.system import proc
from xcbench.system.cgroups import detect

RATE = "100mbit"
CORES = 0.25
TAG = f"{os.getpid() % 10000}"


def _why_not() -> str:
    return why_not("iperf3") or ""


pytestmark = pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "-")


def write_inventory(path: Path, names: dict[str, dict], net=None) -> Path:
    net = net or free_network()
    hosts = list(net.hosts())
    data = {"bridge": {"name": f"xcbh{TAG}{path.stem[:3]}"[:15], "address": f"{hosts[0]}/24"},
            "hosts": {}}
    for i, (name, spec) in enumerate(names.items()):
        data["hosts"][name] = {"transport": "netns", "address": str(hosts[10 + i]), **spec}
    path.write_text(yaml.safe_dump(data))
    return path


def cli(*args: str, state: Path, check: bool = True) -> subprocess.CompletedProcess:
    cp = subprocess.run([sys.executable, "-m", "xcbench", "hosts", "--state", str(state), *args],
                        capture_output=True, text=True, timeout=120)
    if check:
        assert cp.returncode == 0, cp.stderr
    return cp


def leftovers(inv) -> list[str]:
    """Every namespace, link, qdisc and cgroup of ``inv`` still on this machine."""
    left = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    cg = os.listdir(detect().base)
    for h in inv.netns_hosts:
        left += [f"netns {h.netns}" for ln in ns.splitlines() if ln.split()[:1] == [h.netns]]
        left += [f"link {h.veth}" for ln in links.splitlines() if f" {h.veth}@" in ln
                 or f" {h.veth}:" in ln]
        left += [f"qdisc on {h.veth}" for ln in qdiscs.splitlines() if f"dev {h.veth} " in ln]
        left += [f"cgroup {h.cgroup}" for c in cg if c == h.cgroup]
    left += [f"bridge {inv.bridge.name}" for ln in links.splitlines()
             if f" {inv.bridge.name}:" in ln]
    return left


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    d = tmp_path_factory.mktemp("hosts")
    state = d / "state"
    names = {f"c1x{TAG}": {"roles": ["client"], "cores": CORES, "link": {"rate": RATE}},
             f"c2x{TAG}": {"roles": ["client"]},
             f"g1x{TAG}": {"roles": ["gateway", "redirector"]},
             f"g2x{TAG}": {"roles": ["gateway"], "cores": 1}}
    f = write_inventory(d / "hosts.yaml", names)
    inv = load_inventory(f)
    up_s = cli("up", str(f), state=state).stdout.strip().splitlines()[-1]
    try:
        yield inv, state, up_s
    finally:
        cp = cli("down", state=state, check=False)
        print(f"\n{up_s}\n{cp.stdout.strip()}")
        assert cp.returncode == 0, cp.stderr
        assert leftovers(inv) == []


def test_each_host_sees_its_own_addresses_and_reaches_the_others(hosts, tmp_path):
    inv, _, _ = hosts
    for h in inv.netns_hosts:
        out = transport_for(h).run(["ip", "-o", "-4", "addr", "show"]).stdout
        addrs = sorted(ln.split()[3] for ln in out.splitlines())
        assert addrs == sorted(["127.0.0.1/8", f"{h.address}/24"]), (h.name, addrs)
        routes = transport_for(h).run(["ip", "route", "show", "default"]).stdout
        assert routes.strip() == "", f"{h.name} has a default route: {routes}"
    # every host reaches every other one over the bridge, and the root namespace's address
    server = tmp_path / "echo.py"
    server.write_text("import socket,sys\ns=socket.create_server((sys.argv[1],int(sys.argv[2])))\n"
                      "print('ready',flush=True)\n"
                      "while True:\n c,_=s.accept(); c.sendall(c.recv(64)+b'@'+sys.argv[1].encode());"
                      " c.close()\n")
    client = ("import socket,sys\nc=socket.create_connection((sys.argv[1],7777),timeout=5)\n"
              "c.sendall(b'hi'); print(c.recv(64).decode())")
    procs = proc.ProcessSet(record=False)
    try:
        for h in inv.netns_hosts:
            p = transport_for(h).spawn([sys.executable, str(server), h.address, "7777"],
                                       name="echo", procs=procs, pipe=True)
            assert p.popen.stdout.readline() == b"ready\n"
        for src in inv.netns_hosts:
            for dst in inv.netns_hosts:
                if dst is not src:
                    out = transport_for(src).run([sys.executable, "-c", client, dst.address])
                    assert out.stdout.strip() == f"hi@{dst.address}"
    finally:
        procs.stop_all()
    # the root namespace (the bridge address) is reachable from a host
    srv = socket.create_server((inv.bridge.ip, 0))
    port = srv.getsockname()[1]
    try:
        h = inv.clients[1]
        transport_for(h).run([sys.executable, "-c",
                              f"import socket; socket.create_connection(('{inv.bridge.ip}',"
                              f"{port}),timeout=5).sendall(b'x')"])
        conn, peer = srv.accept()
        assert peer[0] == h.address and conn.recv(1) == b"x"
        conn.close()
    finally:
        srv.close()


def test_transport_process_is_in_the_cgroup_and_netns_and_sees_root_mounts(hosts, tmp_path):
    inv, _, _ = hosts
    h = inv.clients[0]
    t = transport_for(h)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "xcbench-test", str(mnt)], check=True)
    try:
        (mnt / "seen").write_text("yes")
        p = t.spawn(["sh", "-c", f"cat {mnt}/seen; echo; cat /proc/self/cgroup; "
                     f"readlink /proc/self/ns/net; exec sleep 60"], name="probe", pipe=True)
        try:
            out = b""
            while out.count(b"net:[") == 0:
                line = p.popen.stdout.readline()
                assert line, out
                out += line
            text = out.decode()
            assert text.startswith("yes\n")
            assert any(ln.split(":")[1].split(",").__contains__("cpu") and
                       ln.endswith(f"/{h.cgroup}") for ln in text.splitlines() if ln.count(":") == 2)
            assert f"net:[{os.stat(f'/run/netns/{h.netns}').st_ino}]" in text
            assert p.pid in [int(x) for x in (detect().base / h.cgroup / "cgroup.procs")
                             .read_text().split()]
        finally:
            proc.stop(p)
        assert not proc.pid_alive(p.pid)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


class _Iperf3Server:
    """iperf3's server on ``host``. Ready for a test when its log says "Server listening" once more
    than the tests it has run: it prints that line once it has closed the previous test (a client
    that comes sooner is told "the server is busy", and iperf3 3.12 exits 0 with that error)."""

    def __init__(self, host, port: int, log: Path):
        self.host, self.port, self.log, self.tests = host, port, log, 0
        self.p = transport_for(host).spawn(["iperf3", "-s", "-B", host.address, "-p", str(port),
                                            "--forceflush"], name="iperf3", log=log)

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.log.read_text(errors="replace").count("Server listening") <= self.tests:
            assert self.p.alive(), f"iperf3 server ended: {self.p.tail(5)}"
            assert time.monotonic() < deadline, f"iperf3 server not ready: {self.p.tail(5)}"
            time.sleep(0.05)

    def measure(self, src, reverse: bool = False, seconds: int = 3) -> float:
        """bits/s that ``src`` measured sending to (or, reversed, receiving from) the server."""
        args = ["iperf3", "-c", self.host.address, "-p", str(self.port), "-t", str(seconds), "-J"]
        self.wait_ready()
        out = transport_for(src).run(args + (["-R"] if reverse else []), check=False,
                                     timeout=seconds + 30)
        self.tests += 1
        try:  # iperf3's error object (exit status 0 in 3.12) is an error, not a result
            return parse_iperf3(out.stdout)["bits_per_second"]
        except XcbError as e:
            raise AssertionError(f"iperf3 {src.name} -> {self.host.name}: {e}; {out.stderr[-300:]}") from e


def test_the_shaped_link_holds_its_rate(hosts, tmp_path):
    inv, _, _ = hosts
    shaped, free = inv.clients
    gw = inv.gateways[0]
    rate = shaped.link.rate_bits_per_s
    server = _Iperf3Server(gw, 5201, tmp_path / "iperf3-server.log")
    from xcbench.hosts.links import link_counters
    try:
        server.wait_ready()
        before, t0 = link_counters(shaped), time.monotonic()
        up = server.measure(shaped)
        sent = (link_counters(shaped)["tx_bytes"] - before["tx_bytes"]) * 8
        spent = time.monotonic() - t0
        down = server.measure(shaped, reverse=True)
        other = server.measure(free)
    finally:
        proc.stop(server.p)
    print(f"\nshaped {shaped.link.rate}: up {up / 1e6:.1f} Mbit/s, down {down / 1e6:.1f} Mbit/s; "
          f"unshaped: {other / 1e6:.1f} Mbit/s")
    # tbf lets one bucket (64 KiB) through at once: over 3 s that is far below 5 % of the rate
    assert up <= rate * 1.05 and down <= rate * 1.05
    assert up >= rate * 0.5 and down >= rate * 0.5  # shaped, not broken
    assert other > rate * 2
    # the links device's counters saw that traffic, and no more than the shaped rate allows
    assert up * 3 * 0.9 <= sent <= rate * spent * 1.05


def test_the_cpu_quota_holds(hosts):
    """A busy loop on the host uses its cores, no more; a busy loop outside any quota, run at
    the same time, says what the shared machine would have given it (others load it too)."""
    inv, _, _ = hosts
    h = inv.clients[0]
    busy = [sys.executable, "-c", "while True: pass"]
    p = transport_for(h).spawn(busy, name="busy")
    ref = proc.spawn(busy, name="busy-ref")
    try:
        ps, pr = psutil.Process(p.pid), psutil.Process(ref.pid)
        time.sleep(0.5)
        c0, r0, t0 = sum(ps.cpu_times()[:2]), sum(pr.cpu_times()[:2]), time.monotonic()
        time.sleep(3)
        dt = time.monotonic() - t0
        used = (sum(ps.cpu_times()[:2]) - c0) / dt
        free = (sum(pr.cpu_times()[:2]) - r0) / dt
        stat = dict(ln.split() for ln in
                    (detect().base / h.cgroup / "cpu.stat").read_text().splitlines())
    finally:
        proc.stop(p)
        proc.stop(ref)
    print(f"\nbusy loop on a {h.cores:g}-core host: {used:.3f} cores (throttled "
          f"{stat.get('nr_throttled')} times); unconfined beside it: {free:.3f} cores")
    assert used <= h.cores * 1.1 + 0.02
    if free < h.cores * 1.5:
        pytest.skip(f"the machine gave an unconfined busy loop only {free:.2f} cores: a "
                    f"{h.cores:g}-core quota cannot be seen binding (used {used:.2f})")
    assert used >= h.cores * 0.6  # it got its quota
    assert int(stat.get("nr_throttled", 0)) > 0


def test_down_after_up_was_killed_halfway(tmp_path):
    names = {f"k{i}x{TAG}": {"roles": ["client"], "cores": 0.2, "link": {"rate": "50mbit"}}
             for i in range(8)}
    f = write_inventory(tmp_path / "kill.yaml", names)
    inv = load_inventory(f)
    state = tmp_path / "state"
    third = Path("/run/netns") / inv.netns_hosts[2].netns
    cmd = [sys.executable, "-m", "xcbench", "hosts", "--state", str(state), "up", str(f)]
    up = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        t0 = time.monotonic()
        while not third.exists() and up.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.001)
        up.send_signal(signal.SIGKILL)
    finally:
        up.wait()
    assert up.returncode == -signal.SIGKILL, up.stderr.read()
    rec = json.loads(next(state.glob("hosts-*.json")).read_text())
    assert rec["complete"] is False
    made = leftovers(inv)
    assert made, "up was killed before it made anything"
    cli("down", state=state)
    assert leftovers(inv) == [], f"made before the kill: {made}"
    assert list(state.glob("hosts-*.json")) == []


def test_up_refuses_taken_names_and_bad_input_before_making_anything(hosts, tmp_path):
    inv, _, _ = hosts
    # the same host names again: refused, nothing made, the first hosts untouched
    taken = {h.name: {"roles": list(h.roles)} for h in inv.netns_hosts}
    f = write_inventory(tmp_path / "again.yaml", taken)
    cp = cli("up", str(f), state=tmp_path / "s", check=False)
    assert cp.returncode == 2 and "exists already" in cp.stderr and cp.stderr.count("\n") == 1
    bad = write_inventory(tmp_path / "bad.yaml", {f"b1x{TAG}": {"roles": ["client"], "cores": -1}})
    cp = cli("up", str(bad), state=tmp_path / "s", check=False)
    assert cp.returncode == 2 and f"host b1x{TAG}: cores:" in cp.stderr
    rtt = write_inventory(tmp_path / "rtt.yaml", {f"r1x{TAG}": {"roles": ["client"],
                                                             "link": {"rtt": "20ms"}}})
    cp = cli("up", str(rtt), state=tmp_path / "s", check=False)
    netem = subprocess.run(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                            "delay", "1ms"], capture_output=True).returncode == 0
    if not netem:
        assert cp.returncode == 2 and "no netem" in cp.stderr, cp.stderr
        assert not Path(f"/run/netns/xcb-r1x{TAG}").exists()
    else:
        cli("down", state=tmp_path / "s")
    assert not list((tmp_path / "s").glob("hosts-*.json"))


def test_versions_and_clocks_through_netns(hosts):
    from xcbench import __version__
    from xcbench.hosts.checks import check_versions, clock_offsets
    inv, _, _ = hosts
    assert set(check_versions(inv).values()) == {__version__}
    offs = clock_offsets(inv)
    assert set(offs) == {h.name for h in inv.hosts}
    for o in offs.values():
        assert abs(o["offset_s"]) <= o["rtt_s"] / 2 + 0.005  # one clock underneath
