"""Emulated hosts on one machine: a bridge, one network namespace per host joined to it by a
veth pair, the host's address, lo up, tc rate limits on both ends of its link and a CPU cgroup.

    up(inv)      # everything made is written to <state>/hosts-<bridge>.json BEFORE it is made
    down()       # removes everything every record lists (also after a kill -9 of `up`)

Private addresses only, inside namespaces made here; the root namespace's side is the bridge
address. No default route in a namespace, no NAT, no ip_forward change: traffic stays between
the namespaces and the root namespace's bridge address.

Names: netns and root-side veth ``xcb-<host>``, the veth end inside ``eth0``, cgroup
``xcb-xcbench-host-<host>``. Nothing is adopted: a name already taken stops `up` before it
makes anything.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.hosts.inventory import Host, Inventory, parse_time
from xcbench.hosts.transport import NETNS_DIR
from xcbench.system import proc, statedir
from xcbench.system.cgroups import CpuGroup, default_state_dir, detect, entry_problem, remove_group

PEER = "eth0"  # the veth end inside a host's namespace
RECORD_RE = re.compile(r"^hosts-[A-Za-z0-9_-]+\.json$")
OURS = re.compile(r"^xcb-[A-Za-z0-9_.-]+$")  # the only names `down` deletes
LINK_OURS = re.compile(r"^xcb[A-Za-z0-9_.-]{0,12}$")  # links: veths xcb-*, bridges xcb* (inventory)


def state_dir(path: str | Path | None = None) -> Path:
    return Path(path) if path is not None else default_state_dir().absolute()


def record_path(inv: Inventory, state: str | Path | None = None) -> Path:
    assert inv.bridge is not None
    return state_dir(state) / f"hosts-{inv.bridge.name}.json"


def tbf_args(rate_bits_per_s: float) -> list[str]:
    """A tbf for ``rate_bits_per_s``: a burst of 4 ms at that rate but at least 64 KiB (a GSO packet
    on a veth is up to 64 KiB; a smaller bucket would drop it) and 50 ms of queue."""
    burst = max(64 * 1024, int(rate_bits_per_s / 8 * 0.004))
    return ["tbf", "rate", f"{int(rate_bits_per_s)}bit", "burst", str(burst), "latency", "50ms"]


# ---- what this machine can do (asked before anything is made) --------------------------------
def netem_missing() -> str | None:
    """None if the kernel has netem, else tc's one-line reason. Tried in a namespace of its own
    that vanishes with the probe (``unshare --net``): nothing to clean up even after a crash."""
    out = proc.run(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                    "delay", "1ms"], check=False, timeout=30)
    if out.returncode == 0:
        return None
    lines = [ln.strip() for ln in (out.stderr or out.stdout).splitlines() if ln.strip()]
    return lines[-1] if lines else f"tc exit {out.returncode}"


def _netns_names() -> set[str]:
    try:
        return set(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return set()


def _link_names() -> set[str]:
    return set(os.listdir("/sys/class/net"))


def _addresses() -> list[ipaddress.IPv4Interface | ipaddress.IPv6Interface]:
    out = proc.run(["ip", "-o", "addr", "show"], timeout=30).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[2] in ("inet", "inet6"):
            try:
                found.append(ipaddress.ip_interface(parts[3]))
            except ValueError:
                pass
    return found


EMULATION_TOOLS = ("ip", "tc", "nsenter", "unshare")


def why_not(*tools: str) -> str | None:
    """Why emulated hosts (running ``tools``) cannot be made here, in one line; None: they can.
    What the tests and the self-test's network scenario skip on."""
    if os.geteuid() != 0:
        return "emulated hosts need root (network namespaces, veths, tc, cgroups)"
    try:
        for tool in EMULATION_TOOLS + tools:
            proc.which(tool)
        detect()
    except XcbError as e:
        return str(e)
    return None


def preflight(inv: Inventory) -> None:
    """Every reason `up` would fail, as one XcbError line, before anything is made."""
    where = inv.source
    hosts = inv.netns_hosts
    if not hosts or inv.bridge is None:
        raise XcbError(f"{where}: no host with transport netns: nothing to emulate")
    if os.geteuid() != 0:
        raise XcbError("hosts up: network namespaces, veths and tc need root")
    for tool in EMULATION_TOOLS:
        proc.which(tool)
    for h in hosts:
        if h.link and h.link.rtt:
            why = netem_missing()
            if why:
                raise XcbError(f"{where}: host {h.name}: link: rtt: {h.link.rtt} cannot be "
                               f"emulated here: this kernel has no netem qdisc (tc: {why}); "
                               f"rate limits (tbf) work: drop rtt")
            break
    if any(h.cores for h in hosts):
        try:
            detect()
        except XcbError as e:
            raise XcbError(f"{where}: cores: {e}") from None
    taken_ns, taken_links = _netns_names(), _link_names()
    if inv.bridge.name in taken_links:
        raise XcbError(f"{where}: bridge: name: {inv.bridge.name} exists already (emulated hosts "
                       f"up? `xcbench hosts down`; or another bridge name)")
    for h in hosts:
        if h.netns in taken_ns or h.veth in taken_links:
            raise XcbError(f"{where}: host {h.name}: {h.netns} exists already (emulated hosts "
                           f"up? `xcbench hosts down`; or another host name)")
    net = inv.bridge.network
    for a in _addresses():
        if a.version == net.version and a.network.overlaps(net) and not a.ip.is_loopback:
            raise XcbError(f"{where}: bridge: address: {net} overlaps {a} already on this "
                           f"machine: pick another private network")


# ---- the record -----------------------------------------------------------------------------
# the hosts' keys an earlier xcbench wrote -> today's (a link's rate in bits/s, its name says so)
RECORD_RENAMED = {"rate_bps": "rate_bits_per_s", "reshaped_bps": "reshaped_bits_per_s"}


class Record:
    """``hosts-<bridge>.json``: what `up` made, each item written before it is made."""

    def __init__(self, path: Path, source: str = ""):
        self.path = path
        self.data: dict[str, Any] = {"owner": os.getpid(), "source": source,
                                     "created": time.time(), "complete": False, "items": [],
                                     "host": statedir.HOST, "uid": os.geteuid()}

    @classmethod
    def load(cls, path: Path) -> Record:
        r = cls(path)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise XcbError(f"{path}: unreadable record of emulated hosts ({e})") from None
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            raise XcbError(f"{path}: not a record of emulated hosts")
        for h in (data.get("hosts") or {}).values() if isinstance(data.get("hosts"), dict) else ():
            for old, new in RECORD_RENAMED.items():  # a record an earlier xcbench wrote
                if isinstance(h, dict) and old in h:
                    h.setdefault(new, h.pop(old))
        r.data = data
        return r

    @property
    def items(self) -> list[dict[str, Any]]:
        return self.data["items"]

    def add(self, **item: Any) -> None:
        self.items.append(item)
        self.save()

    def save(self) -> None:
        statedir.write_private(self.path, json.dumps(self.data, indent=1))

    def problem(self) -> str | None:
        """Why this record may not be acted on (None: it may): ours, of this host."""
        return statedir.record_problem(self.path) or statedir.host_problem(self.data) or \
            (None if self.data.get("uid") == os.geteuid() else
             f"written by uid {self.data.get('uid')!r}, not by this user")


def records(state: str | Path | None = None) -> list[Path]:
    d = state_dir(state)
    return sorted(p for p in d.glob("hosts-*.json") if RECORD_RE.match(p.name)) if d.is_dir() else []


def recorded_hosts(state: str | Path | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, entry) of every host of every readable record (an unreadable one is skipped)."""
    for path in records(state):
        try:
            rec = Record.load(path)
        except XcbError:
            continue
        for name, h in (rec.data.get("hosts") or {}).items():
            if isinstance(h, dict):
                yield name, h


# ---- up ---------------------------------------------------------------------------------------
def _ip(*args: object) -> None:
    proc.run(["ip", *args], timeout=60)


def up(inv: Inventory, state: str | Path | None = None, *, log=None) -> Record:
    """Make the emulated hosts of ``inv``; on a failure everything made so far is removed."""
    preflight(inv)
    assert inv.bridge is not None
    path = record_path(inv, state)
    if path.exists():
        raise XcbError(f"{path}: emulated hosts on bridge {inv.bridge.name} are recorded as up "
                       f"(`xcbench hosts down` first)")
    rec = Record(path, inv.source)
    rec.data["bridge"] = {"name": inv.bridge.name, "address": inv.bridge.address}
    rec.data["hosts"] = {h.name: {"netns": h.netns, "veth": h.veth, "address": h.address,
                                  "roles": list(h.roles),
                                  "cores": h.cores, "rate_bits_per_s": h.link.rate_bits_per_s if h.link else None,
                                  "rtt": h.link.rtt if h.link else None}
                         for h in inv.netns_hosts}
    try:
        br = inv.bridge.name
        rec.add(kind="link", name=br)
        _ip("link", "add", br, "type", "bridge")
        _ip("addr", "add", inv.bridge.address, "dev", br)
        _ip("link", "set", br, "up")
        mech = detect() if any(h.cores for h in inv.netns_hosts) else None
        for h in inv.netns_hosts:
            _make_host(h, inv, rec, mech)
            if log:
                log(f"host {h.name}: {h.netns} {h.address}"
                    + (f", {h.cores:g} cores" if h.cores else "")
                    + (f", link {h.link.rate}" if h.link and h.link.rate else ""))
    except BaseException:
        teardown(rec)
        raise
    rec.data["complete"] = True
    rec.save()
    return rec


def _make_host(h: Host, inv: Inventory, rec: Record, mech) -> None:
    assert inv.bridge is not None
    rec.add(kind="netns", name=h.netns)
    _ip("netns", "add", h.netns)
    rec.add(kind="link", name=h.veth)  # deleting the namespace deletes the pair too
    _ip("link", "add", h.veth, "type", "veth", "peer", "name", PEER, "netns", h.netns)
    _ip("link", "set", h.veth, "master", inv.bridge.name, "up")
    _ip("-n", h.netns, "addr", "add", f"{h.address}/{inv.bridge.prefixlen}", "dev", PEER)
    _ip("-n", h.netns, "link", "set", "lo", "up")
    _ip("-n", h.netns, "link", "set", PEER, "up")
    if h.link:
        # both directions: egress of the root-side end (towards the host) and of the host's end
        for ns, dev in ((None, h.veth), (h.netns, PEER)):
            proc.run(["tc", *(["-n", ns] if ns else []), "qdisc", "add", "dev", dev, "root",
                      *_qdisc(h)], timeout=60)
    if h.cores:
        g = CpuGroup(mech, h.cgroup, h.cores)
        rec.add(kind="cgroup", path=str(g.path))
        g.make()


def _qdisc(h: Host) -> list[str]:
    assert h.link is not None
    if h.link.rtt:  # only reached where netem exists (preflight); half the RTT each way
        delay = f"{parse_time(h.link.rtt) / 2 * 1e3:g}ms"
        rate = ["rate", h.link.tc_rate] if h.link.rate else []
        return ["netem", "delay", delay, *rate]
    return tbf_args(h.link.rate_bits_per_s)


# ---- down -------------------------------------------------------------------------------------
def netns_pids(name: str) -> list[int]:
    out = proc.run(["ip", "netns", "pids", name], check=False, timeout=30)
    return [int(x) for x in out.stdout.split() if x.isdigit()]


def teardown(rec: Record) -> list[str]:
    """Remove what ``rec`` lists (last made first); returns what could not be removed. The
    processes still running in a namespace (started through its transport) are stopped."""
    left = []
    for item in reversed(rec.items):
        kind = item.get("kind")
        if kind == "netns" and OURS.match(str(item.get("name"))):
            name = item["name"]
            if (NETNS_DIR / name).exists():
                pids = netns_pids(name)
                if pids:
                    proc.stop_pids({p: 5.0 for p in pids})
                proc.run(["ip", "netns", "delete", name], check=False, timeout=60)
            if (NETNS_DIR / name).exists():
                left.append(f"netns {name}")
        elif kind == "link" and LINK_OURS.match(str(item.get("name"))):
            name = item["name"]
            if Path("/sys/class/net", name).exists():
                proc.run(["ip", "link", "delete", name], check=False, timeout=60)
            if Path("/sys/class/net", name).exists():
                left.append(f"link {name}")
        elif kind == "cgroup" and entry_problem({"path": str(item.get("path")), "owner": 0,
                                                  "host": statedir.HOST}) is None:
            if not remove_group(Path(item["path"])):
                left.append(f"cgroup {item['path']}")
    if not left:
        rec.path.unlink(missing_ok=True)
    return left


def down(state: str | Path | None = None, inv: Inventory | None = None) -> tuple[list[str], list[str]]:
    """Tear down the emulated hosts of ``inv`` (or of every record in the state dir).
    Returns (records removed, what is left)."""
    paths = [record_path(inv, state)] if inv is not None and inv.bridge else records(state)
    done, left = [], []
    for path in paths:
        if not path.exists():
            continue
        rec = Record.load(path)
        why = rec.problem()
        if why is not None:  # another user's, another host's: named and left alone
            statedir.warn_skipped(path, why)
            left.append(f"record {path}")
            continue
        leftover = teardown(rec)
        left += leftover
        if not leftover:
            done.append(str(path))
    return done, left


def status(state: str | Path | None = None) -> list[dict[str, Any]]:
    """Each record's hosts and whether their namespace, link and cgroup are there."""
    out = []
    for path in records(state):
        rec = Record.load(path)
        hosts = []
        for name, h in (rec.data.get("hosts") or {}).items():
            cg = next((i["path"] for i in rec.items if i.get("kind") == "cgroup"
                       and i["path"].endswith(f"-host-{name}")), None)
            hosts.append({"name": name, "address": h.get("address"),
                          "netns": (NETNS_DIR / h["netns"]).exists(),
                          "link": Path("/sys/class/net", h["veth"]).exists(),
                          "cgroup": cg is not None and Path(cg).is_dir(), "cores": h.get("cores"),
                          "rate_bits_per_s": h.get("rate_bits_per_s"), "reshaped_bits_per_s": h.get("reshaped_bits_per_s")})
        out.append({"record": str(path), "source": rec.data.get("source"),
                    "complete": rec.data.get("complete"), "bridge": rec.data.get("bridge"),
                    "hosts": hosts})
    return out


def free_network(rng=None) -> ipaddress.IPv4Network:
    """A private /24 (10.200-249.x.0) no address on this machine is in: for tests and demos
    that make emulated hosts beside others' (pick unique host and bridge names too)."""
    import random
    rng = rng or random.Random()
    used = [a.network for a in _addresses() if a.version == 4]
    for _ in range(200):
        net = ipaddress.IPv4Network(f"10.{rng.randrange(200, 250)}.{rng.randrange(256)}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise XcbError("no free private /24 under 10.200.0.0/13 on this machine")
