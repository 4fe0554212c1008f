"""The campaign agent: one client host's share of a campaign level, driven over a pipe.

``xcbench campaign-agent`` (a hidden command, started on each client host through the host's
transport by xcbench.scaleout.distributed) runs the same local driver as every campaign
(campaign.dispatch.Campaign) and streams what it records as JSON lines on stdout:

    {"hello": {"host", "clock", "pid", "version", "boot_id"}}   first, at once: the host's clock
                                                      at start, its kernel's boot id (one machine?)
    {"table": "transfers", "rows": [...]}            each flush of the driver (once a second)
    {"end": {"campaign": {...}}} or {"error": "..."} last

Its stdin gives one request line first (:func:`request`: spec, destination, source, cell),
then control lines: ``stop`` drains (a time-based level ends: transfers in flight finish and
nothing new starts; a file-count campaign starts no new file), ``cancel`` gives up the
transfers in flight too. Stdin's end is a ``stop`` (the coordinator or its ssh went away).
SIGTERM, SIGHUP, SIGINT cancel, flush and exit (xcbench.system.signals): nothing is left running.
Only the stream goes to stdout: anything a library prints there is sent to stderr instead.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import asdict, fields
from typing import IO, Any

from xcbench import __version__
from xcbench.campaign.dispatch import Campaign
from xcbench.campaign.endpoints import Endpoint, endpoint
from xcbench.campaign.reads import ReadCampaign
from xcbench.campaign.spec import CampaignSpec
from xcbench.errors import XcbError
from xcbench.scaleout.node_sampler import NodeSampler, boot_id, run_sampler
from xcbench.system.agentstream import Stream as AgentStream
from xcbench.system.agentstream import claim_stdout
from xcbench.system.signals import EXIT_CODE, StopFlag

ENDPOINT_FIELDS = tuple(f.name for f in fields(Endpoint) if f.name != "gateway")


# --- the request -------------------------------------------------------------------------
def encode_spec(spec: CampaignSpec) -> dict[str, Any]:
    """Every setting, secrets included (the pipe is the agent's own, never a record)."""
    d = asdict(spec)
    d["optimizer"] = asdict(spec.optimizer) if spec.optimizer else None
    return d


def encode_endpoint(x: Any, label: str) -> dict[str, Any] | None:
    if x is None:
        return None
    ep = endpoint(x, label)
    return {k: getattr(ep, k) for k in ENDPOINT_FIELDS}


def decode_endpoint(d: dict[str, Any] | None) -> Endpoint | None:
    if d is None:
        return None
    if not isinstance(d, dict) or set(d) - set(ENDPOINT_FIELDS):
        raise XcbError(f"campaign-agent: endpoint: {d!r} is not an endpoint")
    return Endpoint(**d)


def request(spec: CampaignSpec, *, dest: Any, source: Any = None, cell_id: str = "",
            host: str = "", address: str = "") -> str:
    """The agent's first stdin line (``address``: the host's, whose link it samples)."""
    return json.dumps({"spec": encode_spec(spec), "dest": encode_endpoint(dest, "destination"),
                       "source": encode_endpoint(source, "source"), "cell_id": cell_id,
                       "host": host, "address": address}, default=str) + "\n"


def parse_request(line: str) -> dict[str, Any]:
    try:
        req = json.loads(line)
    except ValueError as e:
        raise XcbError(f"campaign-agent: the request is not JSON ({e}; it began "
                       f"{line[:40]!r})") from None
    if not isinstance(req, dict) or not isinstance(req.get("spec"), dict) or not req.get("dest"):
        raise XcbError("campaign-agent: the request needs spec and dest")
    spec = req["spec"]
    unknown = set(spec) - set(CampaignSpec.field_names())
    if unknown:  # another xcbench version sent it (check_versions should have said so)
        raise XcbError(f"campaign-agent: spec: unknown settings {sorted(unknown)}")
    return {"spec": CampaignSpec(**spec), "dest": decode_endpoint(req["dest"]),
            "source": decode_endpoint(req.get("source")), "cell_id": str(req.get("cell_id") or ""),
            "host": str(req.get("host") or ""), "address": str(req.get("address") or "")}


# --- the stream --------------------------------------------------------------------------
class Stream(AgentStream):
    """The agent's stream; a reader gone cancels the campaign (nobody is left to record it)."""

    def rows(self, table: str, rows: list[dict]) -> None:  # the campaign's sink
        self.send({"table": table, "rows": rows})


def _drain(campaign: Any, started: float) -> None:
    """``stop``: a time-based level ends (in flight finish); a file-count one starts no more."""
    if campaign.rule is not None:
        campaign.levels.end("coordinator", time.time() - started)
    else:
        campaign.canceller.rest(time.time())
        with campaign.cond:
            campaign.cond.notify_all()


def _control(stdin: IO[str], campaign: Any, started: float, cancel: threading.Event) -> None:
    """Control lines until stdin ends (an end is a stop)."""
    try:
        for line in stdin:
            word = line.strip()
            if word == "cancel":
                cancel.set()
            elif word == "stop":
                _drain(campaign, started)
    except (OSError, ValueError):
        pass
    if not cancel.is_set():
        _drain(campaign, started)


def serve(stdin: IO[str], out: Stream, stop: threading.Event) -> int:
    """Read the request, run the campaign, stream its records; the exit code."""
    out.send({"hello": {"clock": time.time(), "pid": os.getpid(), "version": __version__,
                        "boot_id": boot_id()}})
    try:
        req = parse_request(stdin.readline())
        spec = req["spec"]
        if spec.direction == "write":
            campaign = Campaign(spec, req["dest"], req["source"], out.rows, req["cell_id"])
        else:  # read / mixed: the host reads (and writes its share of) its own dataset
            campaign = ReadCampaign(spec, req["dest"], out.rows, req["cell_id"])
    except XcbError as e:
        out.send({"error": str(e)})
        return e.exit_code
    started = time.time()
    threading.Thread(target=_control, args=(stdin, campaign, started, stop),
                     name="xcb-agent-control", daemon=True).start()
    sampled = threading.Event()  # the host's link and CPU while the campaign runs
    if req["address"]:
        run_sampler(NodeSampler(req["host"], req["address"]),
                    lambda rows: out.send({"table": "samples", "rows": rows}), sampled)
    try:
        row = campaign.run(progress=False, stop_event=stop)
    except XcbError as e:
        out.send({"error": str(e)})
        return e.exit_code
    except Exception as e:  # a bug: said on the stream, so the coordinator names this host
        out.send({"error": f"{type(e).__name__}: {e}"})
        return 1
    finally:
        sampled.set()
    out.send({"end": {"campaign": row, "stopped": stop.is_set()}})
    return 0


def main() -> int:
    """The command: stdout kept for the stream, signals turned into a cancel."""
    fh = claim_stdout()
    with StopFlag() as flag, flag.polite():
        # a reader gone: cancel as on a signal
        code = serve(sys.stdin, Stream(fh, flag.event.set), flag.event)
        signalled = flag.signum is not None
    try:
        fh.close()
    except OSError:
        pass
    return EXIT_CODE if signalled and code == 0 else code
