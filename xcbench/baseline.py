"""Network/host baseline: iperf3 between the client and the gateway host (loopback here).

It is the ceiling nothing above the network can beat: the attribution compares every cell's
steady rate with it (verdict "network" when a cell runs close to it).
"""

from __future__ import annotations

import json
import time
from typing import Any

from xcbench import proc
from xcbench.errors import XcbError
from xcbench.net import LOOPBACK, free_port, port_open


def iperf3(host: str = LOOPBACK, *, seconds: int = 3, streams: int = 1,
           procs: proc.ProcessSet | None = None) -> dict[str, Any]:
    """Run an iperf3 server on ``host`` (loopback unless told otherwise) and a client against
    it; return a BASELINE row (bits/s received, retransmits)."""
    port = free_port(host)
    server = proc.spawn(["iperf3", "-s", "-B", host, "-p", port], name="iperf3-server",
                        procs=procs)
    try:
        deadline = time.monotonic() + 10
        while not port_open(port, host):
            if not server.alive() or time.monotonic() > deadline:
                raise XcbError(f"iperf3: server on {host}:{port} did not start")
            time.sleep(0.05)
        out = proc.run(["iperf3", "-c", host, "-p", port, "-t", seconds, "-P", streams, "-J"],
                       timeout=seconds + 30, check=False)
        try:
            data = json.loads(out.stdout)
        except json.JSONDecodeError as e:
            raise XcbError(f"iperf3: no JSON result ({out.stderr.strip()[:200]})") from e
        if "error" in data:
            raise XcbError(f"iperf3: {data['error']}")
        end = data["end"]
        return {"kind": "iperf3", "wall": time.time(), "streams": streams, "seconds": seconds,
                "bits_per_second": end["sum_received"]["bits_per_second"],
                "retransmits": end.get("sum_sent", {}).get("retransmits"), "host": host}
    finally:
        proc.stop(server, timeout=3)
        if procs is not None:
            procs.discard(server)
