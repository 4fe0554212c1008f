"""Network baseline as sites measure it: iperf3 at 1-32 parallel streams, both directions.

RAL's gateway study (CHEP 2024) drew streams -> egress / ingress Gb/s between each client host
and each gateway host; this module measures the same table (loopback here, host pairs later).
Directions use the project's vocabulary, seen from the gateway:

    write   client -> gateway (iperf3's default: the client sends) = the gateway's ingress
    read    gateway -> client (``iperf3 -R``: the server sends)    = the gateway's egress

Each point is one BASELINE row (xcbench.store.tables): Gb/s as the receiver counted it
(``end.sum_received``), the sender's retransmits, and iperf3's CPU utilisation of the client
(``cpu_host``) and the gateway side (``cpu_remote``). The attribution uses the best point as the
ceiling nothing above the network can beat (verdict "network" when a cell runs close to it).

Commands go through a *pair runner* so that the same sweep can later run its client on one host and
its server on another: :class:`LocalPairRunner` runs both here, :class:`HostPairRunner` each on its
host of a run's inventory (client hosts x gateway hosts, xcbench.run.hostrun).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from xcbench.errors import XcbError
from xcbench.hosts import transport_for
from xcbench.network import tcpaudit
from xcbench.system import proc
from xcbench.system.ports import LOOPBACK, free_port, port_open

STREAMS = (1, 2, 4, 8, 12, 16, 24, 32)
MAX_STREAMS = 128  # iperf3 -P takes at most 128
DIRECTIONS = ("write", "read")
SECONDS = 2  # per point: 8 stream counts x 2 directions stay around 40 s on loopback
LOCAL_PAIRS = ((LOOPBACK, LOOPBACK),)
# iperf3 3.12's server takes one test at a time and resets the control connection of a client
# that arrives while it is still closing the previous test (seen here on a busy box): retry those.
TRANSIENT = ("control message", "server is busy", "Connection reset")
RETRIES = 2


class PairRunner(Protocol):
    """Runs commands on a host (an address of the pair). Local today; ssh with the hosts issue."""

    def run(self, host: str, cmd: Sequence[Any], *, timeout: float) -> proc.Completed: ...

    def spawn(self, host: str, cmd: Sequence[Any], *, name: str,
              procs: proc.ProcessSet | None) -> proc.Proc: ...

    def stop(self, host: str, p: proc.Proc) -> None: ...


class LocalPairRunner:
    """Every address of a pair is on this machine (loopback, or emulated hosts' addresses)."""

    def run(self, host: str, cmd: Sequence[Any], *, timeout: float) -> proc.Completed:
        return proc.run(cmd, timeout=timeout, check=False)

    def spawn(self, host: str, cmd: Sequence[Any], *, name: str,
              procs: proc.ProcessSet | None) -> proc.Proc:
        return proc.spawn(cmd, name=name, procs=procs)

    def stop(self, host: str, p: proc.Proc) -> None:
        proc.stop(p, timeout=3)


class HostPairRunner:
    """Addresses of an inventory's hosts (xcbench.hosts): each command through its host's
    transport, so iperf3's server runs on the gateway host and its client on the client host."""

    def __init__(self, hosts: Iterable[Any]):
        self.transports = {h.address: transport_for(h) for h in hosts}

    def _t(self, host: str) -> Any:
        try:
            return self.transports[host]
        except KeyError:
            raise XcbError(f"baseline: no host with address {host} in the inventory") from None

    def run(self, host: str, cmd: Sequence[Any], *, timeout: float) -> proc.Completed:
        return self._t(host).run(cmd, timeout=timeout, check=False)

    def spawn(self, host: str, cmd: Sequence[Any], *, name: str,
              procs: proc.ProcessSet | None) -> proc.Proc:
        return self._t(host).spawn(cmd, name=name, procs=procs)

    def stop(self, host: str, p: proc.Proc) -> None:
        proc.stop(p, timeout=3)


def parse_iperf3(text: str) -> dict[str, Any]:
    """The figures of one ``iperf3 -c ... -J`` result; XcbError for iperf3's own errors."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError) as e:
        raise XcbError(f"iperf3: no JSON result ({str(text or '').strip()[:120]!r})") from e
    if not isinstance(data, dict):
        raise XcbError("iperf3: JSON result is not an object")
    if data.get("error"):
        raise XcbError(f"iperf3: {data['error']}")
    end = data.get("end") or {}
    received = end.get("sum_received") or {}
    if "bits_per_second" not in received:
        raise XcbError("iperf3: JSON result has no end.sum_received (not a TCP test?)")
    test = (data.get("start") or {}).get("test_start") or {}
    cpu = end.get("cpu_utilization_percent") or {}
    return {"bits_per_second": float(received["bits_per_second"]),
            "sent_bits_per_second": (end.get("sum_sent") or {}).get("bits_per_second"),
            "retransmits": (end.get("sum_sent") or {}).get("retransmits"),
            "cpu_host": cpu.get("host_total"), "cpu_remote": cpu.get("remote_total"),
            "streams": test.get("num_streams"), "seconds": test.get("duration"),
            "direction": "read" if test.get("reverse") else "write",
            "congestion": end.get("sender_tcp_congestion")}


def client_cmd(client_addr: str, gateway_addr: str, port: int, streams: int, direction: str,
               seconds: int) -> list[Any]:
    cmd: list[Any] = ["iperf3", "-c", gateway_addr, "-B", client_addr, "-p", port, "-t", seconds,
                      "-P", streams, "-J"]
    return cmd + ["-R"] if direction == "read" else cmd


def _port(gateway_addr: str) -> int:
    """A free port when the gateway address is on this machine, else iperf3's own 5201."""
    try:
        return free_port(gateway_addr)
    except OSError:
        return 5201


def _wait_server(server: proc.Proc, gateway_addr: str, port: int) -> None:
    deadline = time.monotonic() + 10
    while not port_open(port, gateway_addr):
        if not server.alive() or time.monotonic() > deadline:
            raise XcbError(f"iperf3: server on {gateway_addr}:{port} did not start"
                           f"{': ' + server.tail(3) if server.log else ''}")
        time.sleep(0.05)


def sweep(pairs: Iterable[tuple[str, str]] | None = None, *, streams: Sequence[int] = STREAMS,
          directions: Sequence[str] = DIRECTIONS, seconds: int = SECONDS,
          pair_runner: PairRunner | None = None, procs: proc.ProcessSet | None = None,
          raw_dir: Path | None = None,
          on_point: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """iperf3 at each stream count and direction for each (client, gateway) address pair.

    One iperf3 server per pair, bound to the gateway address, started through ``pair_runner`` and
    stopped at the end (also on errors). A point that fails is a row with ``error`` set and no
    rate; the sweep goes on. ``raw_dir`` keeps iperf3's JSON of every point.
    """
    pair_runner = pair_runner or LocalPairRunner()
    bad = [d for d in directions if d not in DIRECTIONS]
    if bad or not directions:
        raise XcbError(f"baseline: directions: {bad or directions!r} (use {', '.join(DIRECTIONS)})")
    if not streams or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in streams):
        raise XcbError(f"baseline: streams: {list(streams)!r} must be integers >= 1")
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 1:
        raise XcbError(f"baseline: seconds: {seconds!r} must be an integer >= 1 (iperf3 -t)")
    rows: list[dict[str, Any]] = []
    # a set of our own when the caller has none: a recording set, so that after a kill -9 the
    # next command finds the server in this command's record and stops it
    own = procs is None
    procs = procs if procs is not None else proc.ProcessSet()
    try:
        for client_addr, gateway_addr in (pairs or LOCAL_PAIRS):
            port = _port(gateway_addr)
            server = pair_runner.spawn(gateway_addr, ["iperf3", "-s", "-B", gateway_addr, "-p", port],
                                       name=f"iperf3-server-{gateway_addr}", procs=procs)
            try:
                _wait_server(server, gateway_addr, port)
                for n in streams:
                    for direction in directions:
                        row = _point(pair_runner, client_addr, gateway_addr, port, n, direction,
                                     seconds, raw_dir)
                        rows.append(row)
                        if on_point:
                            on_point(row)
            finally:
                pair_runner.stop(gateway_addr, server)
                procs.discard(server)
    finally:
        # a signal that lands while the server starts is raised once it is in ``procs``, before
        # ``server`` is bound here: a set of our own is stopped whole (a caller's stops its own)
        if own:
            procs.stop_all()
    return rows


def _point(pair_runner: PairRunner, client_addr: str, gateway_addr: str, port: int, streams: int,
           direction: str, seconds: int, raw_dir: Path | None) -> dict[str, Any]:
    row: dict[str, Any] = {"kind": "iperf3", "wall": time.time(), "streams": streams,
                           "seconds": seconds, "bits_per_second": None, "retransmits": None,
                           "host": gateway_addr, "client": client_addr, "gateway": gateway_addr,
                           "direction": direction, "cpu_host": None, "cpu_remote": None,
                           "error": None}
    for attempt in range(RETRIES + 1):
        out = pair_runner.run(client_addr, client_cmd(client_addr, gateway_addr, port, streams,
                                                      direction, seconds), timeout=seconds + 30)
        if raw_dir is not None:
            raw_dir.mkdir(parents=True, exist_ok=True)
            (raw_dir / f"{client_addr}-{gateway_addr}-P{streams}-{direction}.json").write_text(out.stdout)
        try:
            got = parse_iperf3(out.stdout)
            break
        except XcbError as e:
            row["error"] = str(e) if out.stdout.strip() else f"{e}; stderr: {out.stderr.strip()[-200:]}"
            if attempt == RETRIES or not any(m in str(e) for m in TRANSIENT):
                return row
            time.sleep(0.5)  # the server was still closing the previous test
    row["error"] = None
    row.update({k: got[k] for k in ("bits_per_second", "retransmits", "cpu_host", "cpu_remote")})
    return row


def iperf3(pairs: Iterable[tuple[str, str]] | None = None, *, procs: proc.ProcessSet | None = None,
           run: Any = None, sink: Callable[[str, list[dict]], None] | None = None,
           seconds: int = SECONDS, streams: Sequence[int] = STREAMS,
           pair_runner: PairRunner | None = None, directions: Sequence[str] = DIRECTIONS) -> list[dict[str, Any]]:
    """A run's network baseline (runner.py): the host TCP audit into the run's manifest and
    findings, then the iperf3 sweep; returns the BASELINE rows. Raises XcbError only when no
    point at all measured a rate."""
    pairs = list(pairs or LOCAL_PAIRS)
    if run is not None:
        result = tcpaudit.audit(sorted({a for p in pairs for a in p}))
        run.state.extra["tcp_audit"] = tcpaudit.manifest_entry(result)  # a manifest key of its own
        run.save_manifest()
        if sink is not None:
            sink("findings", tcpaudit.findings(result))
    raw = run.path / "raw" / "iperf3" if run is not None else None
    rows = sweep(pairs, streams=streams, seconds=seconds, procs=procs, raw_dir=raw,
                 pair_runner=pair_runner, directions=directions)
    if not any(r["bits_per_second"] for r in rows):
        raise XcbError(f"iperf3: no point measured a rate ({rows[0]['error'] if rows else 'no pair'})")
    return rows
