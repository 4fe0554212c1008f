"""The campaign agent process (`xcbench campaign-agent`): its protocol, and that a signal or a
stop ends it with its records flushed (no gateway: a destination that refuses connections)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from xcbench.campaign.endpoints import Endpoint
from xcbench.campaign.spec import CampaignSpec
from xcbench.errors import XcbError
from xcbench.scaleout.agent import parse_request, request
from xcbench.system.ports import free_port


def _spec(**kw) -> CampaignSpec:
    base = dict(files=2, file_size=1 << 16, concurrency=2, campaign_id="t-c2-r0.h1",
                delete_after_verify=True, retries=0, timeout=5, duration={"min": 60, "max": 60},
                steady={"rule": "none", "window": 2, "points": 2})
    return CampaignSpec(**{**base, **kw})


def test_request_round_trip_keeps_every_setting():
    spec = _spec(optimizer={"interval": 3}, extra={"token": "s3cr3t"})
    dest = Endpoint("destination", root_url="root://10.0.0.1:1094", backend="rados",
                    client_env={"XRD_CPUSEPGWRTRD": "0"}, name_prefix="/xcb-rados/x")
    req = parse_request(request(spec, dest=dest, cell_id="cell", host="h1"))
    assert req["spec"] == spec and req["dest"] == dest and req["source"] is None
    assert (req["cell_id"], req["host"]) == ("cell", "h1")


@pytest.mark.parametrize("line, why", [("nope", "not JSON"), ("{}", "needs spec and dest"),
                                      ('{"spec": {"bogus": 1}, "dest": {"label": "d"}}',
                                       "unknown settings")])
def test_bad_requests_are_one_line(line, why):
    with pytest.raises(XcbError, match=why):
        parse_request(line)


def _agent() -> subprocess.Popen:
    # the destination is dead: an attempt in flight waits out XrdCl's ConnectionWindow before
    # the agent can end, so the shell's value (which XrdCl keeps) makes it 2 s, not 10 s
    return subprocess.Popen([sys.executable, "-m", "xcbench", "campaign-agent"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "XRD_CONNECTIONWINDOW": "2"})


def _lines(p: subprocess.Popen, timeout: float = 60) -> list[dict]:
    if p.stdin is not None and p.stdin.closed:
        p.stdin = None  # communicate() would flush it
    try:
        out, _ = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return [json.loads(x) for x in out.decode().splitlines()]


def _dead_url() -> str:
    return f"root://127.0.0.1:{free_port('127.0.0.1')}"  # nothing listens there


def test_a_bad_request_is_an_error_line_and_exit_2():
    p = _agent()
    p.stdin.write(b'{"spec": {"files": 0}, "dest": {"label": "d", "root_url": "root://x:1"}}\n')
    p.stdin.close()
    lines = _lines(p)
    assert "hello" in lines[0] and "error" in lines[-1] and "files" in lines[-1]["error"]
    assert p.returncode == 2


@pytest.mark.parametrize("how", ["sigterm", "stop", "eof"])
def test_agent_ends_on_a_signal_a_stop_or_eof_with_its_records_flushed(how):
    p = _agent()
    p.stdin.write(request(_spec(), dest=_dead_url(), cell_id="cell", host="h1").encode())
    p.stdin.flush()
    hello = json.loads(p.stdout.readline())
    assert abs(hello["hello"]["clock"] - time.time()) < 30
    time.sleep(1.5)
    if how == "sigterm":
        p.send_signal(signal.SIGTERM)
        # stdin stays open until the agent has ended: an EOF before the signal is handled
        # would be a stop (the coordinator's), not the signal this case is about
        t0 = time.time()
        rest = p.stdout.read()
        p.wait(timeout=60)
        p.stdin.close()
        lines = [json.loads(x) for x in rest.decode().splitlines()]
    elif how == "stop":
        p.stdin.write(b"stop\n")
        p.stdin.flush()
    else:
        p.stdin.close()
    if how != "sigterm":
        t0 = time.time()
        lines = _lines(p, timeout=60)
    assert time.time() - t0 < 30
    assert "end" in lines[-1], lines[-3:]
    tables = {m["table"] for m in lines if "table" in m}
    assert {"campaigns", "timeline"} <= tables  # transfers: when an attempt ended by then
    row = [m for m in lines if m.get("table") == "campaigns"][-1]["rows"][0]
    assert row["campaign_id"] == "t-c2-r0.h1"
    level = json.loads(row["settings"])["level"]
    assert level["ended_by"] == ("stopped" if how == "sigterm" else "coordinator")
    assert p.returncode == (130 if how == "sigterm" else 0)
