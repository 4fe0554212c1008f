"""A compromised gateway host's agent (its stream read by the coordinator, often root): names
that are paths, lines without end, values of the wrong type. What it may not say fails its part
in one line; nothing is written outside the gateway's kept dir; never a traceback. Plus a
Hypothesis fuzz of gateway-agent replies through everything the coordinator does with them."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xcbench import __version__
from xcbench.errors import XcbError
from xcbench.gateway import agent_replies
from xcbench.gateway.remote import Part, RemoteGateway, _ready, _urls

FUZZ = settings(deadline=None, derandomize=True, database=None, max_examples=200,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
HELLO = {"hello": {"version": __version__, "pid": 7, "clock": 1.7e9, "host": "g1"}}
SERVER = {"daemon": "xrootd", "role": "standalone", "name": "gw", "port": 1094, "http_port": 8443,
          "pid": 11, "config": "gw-xrootd.cfg", "log": "gw-xrootd.log"}
READY = {"ready": {"servers": [SERVER], "manager": None, "configs": {"gw-xrootd.cfg": "all.role x"},
                   "tls_cert": "PEM", "made": ["/var/tmp/xcb-gwagent-1"], "storage": {"kind": "tmpfs"},
                   "seconds": 1.5}}
SAMPLE = {"sample": {"seq": 1, "wall": 1.7e9, "servers": {"gw-xrootd": {"pid": 11, "cpu_s": 2.5,
                                                                          "wchar": 10, "rss": 5}},
                     "cores": 0.5, "rss": 5, "limit": {"cores": 2.0, "source": "cgroup"}}}
END = {"end": {"logs": {"gw-xrootd.log": "a tail"}}}


def _part(keep: Path) -> Part:
    keep.mkdir(parents=True, exist_ok=True)
    slot = SimpleNamespace(host=SimpleNamespace(name="g1", address="127.0.0.1"), addr="127.0.0.1")
    return Part("standalone", 0, slot, keep / "agent-standalone-g1.jsonl")  # type: ignore[arg-type]


def _gateway(keep: Path) -> RemoteGateway:
    keep.mkdir(parents=True, exist_ok=True)
    target = SimpleNamespace(client_env={}, cell_id="c1")
    return RemoteGateway("gw", target, keep, [], None)


def _read(part: Part, stream) -> Part:
    part.p = SimpleNamespace(popen=SimpleNamespace(stdout=stream))  # type: ignore[assignment]
    part._read()
    part.p = None
    return part


def _lines(*msgs) -> io.BytesIO:
    return io.BytesIO(b"".join((m if isinstance(m, bytes) else json.dumps(m).encode()) + b"\n"
                               for m in msgs))


def _outside(root: Path, keep: Path) -> set[Path]:
    return {p for p in root.rglob("*") if keep not in (p, *p.parents)}


def _use(gw: RemoteGateway, part: Part) -> None:
    """Everything the coordinator does with an agent's replies: start, measure, stop."""
    try:
        _ready(gw, part, 0.1)
        _urls(gw)
    except XcbError as e:
        assert "\n" not in str(e) and len(str(e)) < 4000, str(e)[:200]
    gw.parts.append(part)
    gw.server_counters(gw.servers)
    gw.agent_role_sample()
    gw.agent_of(gw.servers[0]) if gw.servers else None
    gw.state()
    gw.stop()


def test_good_replies_are_taken(tmp_path):
    keep = tmp_path / "keep"
    gw = _gateway(keep)
    part = _read(_part(keep), _lines(HELLO, READY, SAMPLE, END))
    assert part.error is None and set(part.msgs) == {"hello", "ready", "sample", "end"}
    _use(gw, part)
    assert gw.root_url.endswith(":1094") and gw.servers[0].port == 1094
    assert {p.name for p in keep.iterdir()} >= {"gw-xrootd.cfg", "gw-xrootd.log", "tls-cert.pem"}


def test_file_names_that_are_paths_fail_the_part_and_write_nothing_outside(tmp_path):
    keep = tmp_path / "run" / "keep"
    gw = _gateway(keep)
    bad = [{"ready": {**READY["ready"], "configs": {"../../pwned": "x"}}},
           {"ready": {**READY["ready"], "servers": [{**SERVER, "config": "/etc/passwd"}]}},
           {"end": {"logs": {"..": "x"}}}]
    for msg in bad:
        part = _read(_part(keep), _lines(HELLO, msg, SAMPLE))
        assert part.error and "does not take" in part.error and "\n" not in part.error
        with pytest.raises(XcbError, match="host g1: the gateway agent sent a message"):
            _ready(gw, part, 0.1)
    assert _outside(tmp_path, keep) == {tmp_path / "run"}
    # a file named as the coordinator's own record of the front's certificate is not kept
    part = _read(_part(keep), _lines(HELLO, {"ready": {**READY["ready"], "tls_cert": "PEM",
                                                       "configs": {"tls-cert.pem": "x"}}}, SAMPLE))
    _ready(gw, part, 0.1)
    assert (keep / "tls-cert.pem").read_text() == "PEM"


def test_a_refused_message_stops_the_stream_from_counting(tmp_path):
    keep = tmp_path / "keep"
    part = _read(_part(keep), _lines(HELLO, {"sample": {"seq": "1"}}, READY, SAMPLE))
    assert "sample: seq: not a count" in part.error
    assert "ready" not in part.msgs and "sample" not in part.msgs  # nothing after it is taken


def test_a_line_without_end_costs_the_cap_not_memory(tmp_path):
    keep = tmp_path / "keep"
    script = f"""
        import sys
        print({json.dumps(json.dumps(HELLO))}, flush=True)
        chunk = "x" * (1 << 20)
        for _ in range(40):  # 40 MiB without a newline, then more messages
            sys.stdout.write(chunk)
        sys.stdout.write("\\n" + {json.dumps(json.dumps(END))} + "\\n")
    """
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE)
    part = _read(_part(keep), p.stdout)
    p.wait(30)
    assert part.error and "longer than 8 MiB" in part.error
    assert (keep / "agent-standalone-g1.jsonl").stat().st_size < 1 << 10


def test_an_agents_error_and_stderr_tail_are_one_line(tmp_path):
    keep = tmp_path / "keep"
    part = _read(_part(keep), _lines(HELLO, {"error": "bad\n\x1b[2Jthing\r\n" + "x" * 10_000}))
    assert part.error == "bad [2Jthing " + "x" * (agent_replies.MAX_ERROR - 15)
    with pytest.raises(XcbError) as e:
        part.wait("ready", 0.1)
    assert "\n" not in str(e.value)


def test_a_ready_without_a_front_xrootd_is_one_line(tmp_path):
    keep = tmp_path / "keep"
    gw = _gateway(keep)
    cmsd = {**SERVER, "daemon": "cmsd", "role": "manager"}
    part = _read(_part(keep), _lines(HELLO, {"ready": {**READY["ready"], "servers": [cmsd]}}, SAMPLE))
    _ready(gw, part, 0.1)
    with pytest.raises(XcbError, match="no gateway agent named a front xrootd"):
        _urls(gw)


# --- the fuzz ------------------------------------------------------------------------------
KEYS = ["hello", "ready", "sample", "cluster", "end", "error", "version", "pid", "clock", "host",
        "servers", "manager", "configs", "tls_cert", "made", "storage", "seconds", "daemon",
        "role", "name", "port", "http_port", "config", "log", "seq", "wall", "cpu_s", "wchar",
        "rss", "cores", "limit", "source", "logs", "logged_in", "gw-xrootd", "xrootd", "cmsd",
        "standalone", "manager", "../x", "/etc/x", "..", "tls-cert.pem", "gw-xrootd.cfg"]
VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 70_000) | st.integers() | st.floats()
    | st.sampled_from(KEYS) | st.text(max_size=12),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6),
                                                        c, max_size=5),
    max_leaves=30)
# a good message with one field replaced by anything, or anything at all
MUTANT = st.tuples(st.sampled_from([HELLO, READY, SAMPLE, END, {"cluster": {"logged_in": 2}}]),
                   st.sampled_from(KEYS), VALUE).map(
    lambda t: {k: ({**v, t[1]: t[2]} if isinstance(v, dict) else v) for k, v in t[0].items()})
MESSAGE = MUTANT | st.dictionaries(st.sampled_from(KEYS), VALUE, max_size=2)
_RUNS = itertools.count()


@FUZZ
@given(st.lists(MESSAGE, min_size=1, max_size=4), st.booleans())
def test_fuzz_gateway_agent_replies_one_line_or_taken_never_a_traceback(tmp_path, msgs, base):
    root = tmp_path / f"r{next(_RUNS)}"
    keep = root / "keep"
    gw = _gateway(keep)
    lines = [HELLO, READY, SAMPLE, *msgs] if base else list(msgs)
    part = _read(_part(keep), _lines(*lines))
    if part.error is not None:
        assert "\n" not in part.error
    for m in msgs:
        why = agent_replies.check(m)
        assert why is None or isinstance(why, str)
    _use(gw, part)
    assert _outside(root, keep) == set()
