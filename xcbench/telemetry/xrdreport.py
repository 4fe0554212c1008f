"""xrootd's ``xrd.report`` summary stream: a UDP listener and a parser of its XML.

With ``xrd.report 127.0.0.1:PORT every 1s all`` each xrootd (or cmsd) sends one datagram per
interval, e.g. (xrootd 5.5.3, captured here; see tests/data/xrd-report/)::

    <statistics tod="..." ver="v5.5.3" src="vm:21094" tos="..." pgm="xrootd" ins="cap" pid="10763"
      site=""><stats id="info">..</stats><stats id="buff">..</stats><stats id="link"><num>1</num>
      <maxn>1</maxn><tot>2</tot><in>67175212</in><out>..</out>..</stats><stats id="poll">..</stats>
      <stats id="proc"><usr><s>0</s><u>110745</u></usr><sys>..</sys></stats>
      <stats id="xrootd"><num>2</num><ops><open>2</open>..<wr>8</wr>..</ops>..</stats>
      <stats id="ofs">..<tpc><grnt>0</grnt>..</tpc></stats><stats id="oss" v="2">..</stats>
      <stats id="sched"><jobs>22</jobs><inq>0</inq><maxinq>2</maxinq><threads>6</threads>..</stats>
      <stats id="sgen">..</stats></statistics>

:func:`parse_report` flattens it to ``{"link.in": 67175212, "xrootd.ops.wr": 8, ...}``: a
``<stats id=X>`` block is named by X (nested ones too, e.g. ``oss.paths.0.free``), other
elements by their tag; ``<s>/<u>`` pairs (proc usr/sys) become float seconds. The link
counters are live: xrootd syncs open links into them before each report (measured: a 6 s
upload showed up 4 MiB per second, not at close).
"""

from __future__ import annotations

import collections
import ipaddress
import socket
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from xcbench.errors import XcbError

HEADER_INTS = ("tod", "tos", "pid")
MAX_QUEUED_BYTES = 16 << 20  # datagrams waiting for the sampler (one report is 2-4 KB)
MAX_SAVED = 100_000  # raw datagrams kept under save_dir (a day of one report a second)
PORTS_REFRESH = 0.5  # s between two looks at the gateways' UDP ports (an unknown port costs one)


@dataclass
class Report:
    """One parsed summary packet."""
    header: dict[str, str | int]  # tod tos pid (ints), ver src pgm ins site
    values: dict[str, float]  # flattened numeric values
    info: dict[str, str] = field(default_factory=dict)  # flattened non-numeric text (role, host)

    @property
    def source(self) -> str:
        """Who sent it: program, instance and pid (several gateways may share a listener)."""
        h = self.header
        return f"{h.get('pgm', '?')}:{h.get('ins', '?')}:{h.get('pid', '?')}"


def _number(text: str | None) -> float | int | None:
    if text is None:
        return None
    t = text.strip()
    if not t:
        return None
    try:
        return int(t)
    except ValueError:
        try:
            return float(t)
        except ValueError:
            return None


def _flatten(el: ET.Element, prefix: str, values: dict, info: dict) -> None:
    children = list(el)
    num = _number(el.text)
    if children and {c.tag for c in children} == {"s", "u"}:  # proc times: seconds + microseconds
        s = _number(el.findtext("s")) or 0
        u = _number(el.findtext("u")) or 0
        values[prefix] = s + u / 1e6
        return
    if num is not None:
        values[prefix] = num  # also a mixed "<paths>1<stats ...>" count
    elif not children and el.text and el.text.strip():
        info[prefix] = el.text.strip().strip('"')
    for c in children:
        sid = c.get("id")
        name = sid if c.tag == "stats" and sid is not None else c.tag
        _flatten(c, f"{prefix}.{name}" if prefix else name, values, info)


def parse_report(data: bytes | str) -> Report:
    """Parse one ``xrd.report`` XML datagram; XcbError if it is not one."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    text = text.rstrip("\x00\n ")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise XcbError(f"xrd.report: not XML ({e}): {text[:80]!r}") from e
    if root.tag != "statistics":
        raise XcbError(f"xrd.report: expected <statistics>, got <{root.tag}>")
    header: dict[str, str | int] = dict(root.attrib)
    for k in HEADER_INTS:
        n = _number(str(header.get(k, "")))
        if n is not None:
            header[k] = int(n)
    values: dict[str, float] = {}
    info: dict[str, str] = {}
    for st in root:
        sid = st.get("id") or st.tag
        _flatten(st, sid, values, info)
    return Report(header, values, info)


@dataclass
class Packet:
    wall: float
    mono: float
    data: bytes
    sender: tuple[str, int]


class ReportListener:
    """Receives ``xrd.report`` datagrams on 127.0.0.1 in a background thread.

    Pass ``listener.addr`` as the gateway's ``report_addr``. Packets queue up (bounded in count
    and bytes) until a GatewaySampler drains them; ``save_dir`` keeps each raw datagram as
    ``<n>.xml`` (at most MAX_SAVED; the raw data behind the gateway samples, and how
    tests/data/xrd-report was captured).

    Only its gateways' datagrams are taken: from this machine, only from a UDP socket of a
    process :meth:`expect` names (once one is running; their ports are looked up with psutil);
    from elsewhere, only from the ``remote`` addresses (the inventory's gateway hosts). Any
    other local user could otherwise feed the run's gateway figures. ``refused`` counts the
    rest.
    """

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1", maxlen: int = 3600,
                 save_dir: str | Path | None = None, remote: Iterable[str] = ()):
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.bind((host, port))
        except OSError as e:
            self._sock.close()
            raise XcbError(f"telemetry: cannot listen for xrd.report on {host}:{port}: {e}") from e
        self._sock.settimeout(0.2)  # how fast stop() is noticed
        self.host, self.port = self._sock.getsockname()[:2]
        self._queue: collections.deque[Packet] = collections.deque(maxlen=maxlen)
        self._queued_bytes = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.save_dir = Path(save_dir) if save_dir else None
        self.received = 0
        self.refused = 0
        self.last_mono: float | None = None
        self.started_mono: float | None = None
        self.remote = {str(a) for a in remote}
        self._pid_sources: list[Callable[[], Iterable[int]]] = []
        self._ports: set[int] = set()
        self._ports_at = -PORTS_REFRESH
        self._checked = False  # the last look found gateway processes to check against

    def expect(self, pids: Callable[[], Iterable[int]]) -> None:
        """Take local datagrams only from the UDP sockets of these processes (added to those
        named before: one listener may serve several gateways)."""
        with self._lock:
            self._pid_sources.append(pids)
            self._ports_at = -PORTS_REFRESH

    def accepts(self, sender: tuple[str, int]) -> bool:
        """Is a datagram from ``sender`` one of its gateways'?"""
        addr, port = sender[0], sender[1]
        try:
            local = ipaddress.ip_address(addr).is_loopback or addr == self.host
        except ValueError:
            return False
        if not local:
            return addr in self.remote
        if port in self._ports:
            return True
        now = time.monotonic()
        if now - self._ports_at >= PORTS_REFRESH:
            self._ports_at = now
            with self._lock:
                sources = list(self._pid_sources)
            pids = {pid for src in sources for pid in src()}
            self._checked = bool(pids)
            self._ports = _udp_ports(pids)
        # no gateway process named (a bare listener, tests): any local sender
        return port in self._ports or not self._checked

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> ReportListener:
        if self._thread is None:
            if self.save_dir:
                self.save_dir.mkdir(parents=True, exist_ok=True)
            self.started_mono = time.monotonic()
            self._thread = threading.Thread(target=self._recv_loop, daemon=True,
                                            name=f"xcb-xrdreport-{self.port}")
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        self._sock.close()

    close = stop

    def __enter__(self) -> ReportListener:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _recv_loop(self) -> None:
        while not self._stop.is_set():
            try:
                data, sender = self._sock.recvfrom(65536)
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                continue
            if not self.accepts(sender):
                self.refused += 1
                continue
            p = Packet(time.time(), time.monotonic(), data, sender)
            with self._lock:
                while self._queue and (len(self._queue) == self._queue.maxlen or
                                       self._queued_bytes + len(data) > MAX_QUEUED_BYTES):
                    self._queued_bytes -= len(self._queue.popleft().data)
                self._queue.append(p)
                self._queued_bytes += len(data)
                self.received += 1
                self.last_mono = p.mono
                n = self.received
            if self.save_dir and n <= MAX_SAVED:
                try:
                    (self.save_dir / f"{n:06d}.xml").write_bytes(data)
                except OSError:
                    pass  # raw copies are a convenience; never stop receiving for them

    def drain(self) -> list[Packet]:
        """Every packet received since the last drain, oldest first."""
        with self._lock:
            out = list(self._queue)
            self._queue.clear()
            self._queued_bytes = 0
        return out

    def wait(self, n: int = 1, timeout: float = 10.0) -> bool:
        """Block until ``n`` packets in total have arrived (for tests and start-up)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.received >= n:
                return True
            time.sleep(0.05)
        return self.received >= n


def _udp_ports(pids: Iterable[int]) -> set[int]:
    """The local ports of the UDP sockets of ``pids`` (gone or unreadable ones: none)."""
    ports: set[int] = set()
    for pid in set(pids):
        try:
            conns = psutil.Process(int(pid)).net_connections(kind="udp")
        except (psutil.Error, ValueError, TypeError):
            continue
        ports.update(c.laddr.port for c in conns if c.laddr)
    return ports
