"""YAML aliases cost linear time (a bomb is one line, exit 2, at once), a cell's traceback in
raw/errors/ carries no secret, and the xrd.report listener takes only its gateways' datagrams."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from xcbench import cli
from xcbench.run.runner import Runner, RunOptions
from xcbench.store.rundir import RunDir
from xcbench.system import secrets
from xcbench.telemetry.xrdreport import MAX_QUEUED_BYTES, ReportListener

REPORT = b'<statistics tod="1" pid="1" pgm="xrootd" ins="x"><stats id="link"><in>1</in></stats></statistics>'


def _bomb(levels: int) -> str:
    """``levels`` anchors of 9 aliases each: 9**levels values from a few hundred bytes."""
    out, prev = 'name: b\nx0: &x0 ["s","s","s","s","s","s","s","s","s"]\n', "x0"
    for i in range(1, levels):
        out += f"x{i}: &x{i} [{', '.join([f'*{prev}'] * 9)}]\n"
        prev = f"x{i}"
    return out


def test_a_yaml_alias_bomb_is_one_line_exit_2_at_once(tmp_path, capsys):
    f = tmp_path / "m.yaml"
    f.write_text(_bomb(9))  # 9**9 = 387 million values once expanded, 330 bytes written
    t0 = time.monotonic()
    assert cli.main(["matrix", "check", str(f)]) == 2
    took = time.monotonic() - t0
    out, err = capsys.readouterr()
    lines = (err or out).strip().splitlines()
    assert len(lines) == 1 and "aliases expand to more than 100,000 values" in lines[0], lines
    assert str(f) in lines[0] and took < 10  # seconds; unbounded (hours) before


def test_a_recursive_alias_is_refused(tmp_path, capsys):
    f = tmp_path / "m.yaml"
    f.write_text("name: r\nloop: &l [1, *l]\n")
    assert cli.main(["matrix", "check", str(f)]) == 2
    out, err = capsys.readouterr()
    assert "refers to a value that holds it" in (err or out)


def test_aliases_within_the_budget_still_work(tmp_path):
    from xcbench.system.userfiles import parse_yaml
    assert parse_yaml("a: &a {k: 1}\nb: *a\nc: {<<: *a, j: 2}\n", "x") == \
        {"a": {"k": 1}, "b": {"k": 1}, "c": {"k": 1, "j": 2}}
    assert len(parse_yaml(_bomb(4), "x")["x3"]) == 9  # 9**4 = 6,561 values


def test_a_cells_traceback_is_scrubbed_of_secrets(tmp_path):
    secrets.register("registered-s3cret-value")
    run = RunDir.create(tmp_path, name="r")
    r = object.__new__(Runner)
    r.run, r.view, r.opts = run, None, RunOptions()

    def measure(cell, stack):
        raise RuntimeError("GET failed: headers {'Authorization': 'Bearer eyJhbGciOi.abc.def'} "
                           "with registered-s3cret-value")
    r._measure = measure
    r._cell(SimpleNamespace(id="c1", label="c1"))
    text = (run.path / "raw" / "errors" / "c1.txt").read_text()
    assert "Traceback" in text and "RuntimeError" in text
    assert "registered-s3cret-value" not in text and "eyJhbGciOi" not in text


def _sender(n: int) -> tuple[subprocess.Popen, int]:
    """A process with one UDP socket: it says its port, then on a line from us sends ``n``
    reports to the port we give, then waits for its stdin to end."""
    code = ("import socket,sys,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            "s.bind(('127.0.0.1',0))\nprint(s.getsockname()[1],flush=True)\n"
            "port=int(sys.stdin.readline())\n"
            f"for _ in range({n}):\n    s.sendto({REPORT!r},('127.0.0.1',port)); time.sleep(0.02)\n"
            "sys.stdin.read()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


def test_the_xrd_report_listener_takes_only_its_gateways_datagrams():
    with ReportListener() as lst:
        gateway, gw_port = _sender(20)
        stranger, _ = _sender(20)  # the xrootd user's other process, say
        lst.expect(lambda: [gateway.pid])
        try:
            for p in (gateway, stranger):
                p.stdin.write(f"{lst.port}\n")
                p.stdin.flush()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # this process: not named
                s.sendto(REPORT, ("127.0.0.1", lst.port))
            deadline = time.monotonic() + 10
            while lst.received + lst.refused < 41 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            for p in (gateway, stranger):
                p.communicate("", timeout=10)
        got = lst.drain()
    assert got and {p.sender[1] for p in got} == {gw_port}  # the gateway's, and only its
    assert lst.refused >= 21  # every one of the stranger's and ours


def test_the_xrd_report_queue_is_capped_in_bytes():
    big = b"<statistics>" + b" " * 60_000 + b"</statistics>"
    with ReportListener() as lst, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        n = MAX_QUEUED_BYTES // len(big) + 50
        for _ in range(n):
            s.sendto(big, ("127.0.0.1", lst.port))
            time.sleep(0.0005)
        lst.wait(n - 60, timeout=20)
        kept = lst.drain()
    assert sum(len(p.data) for p in kept) <= MAX_QUEUED_BYTES


def test_remote_datagrams_only_from_the_inventorys_gateway_hosts():
    lst = ReportListener(remote=["10.77.0.12"])
    try:
        assert lst.accepts(("10.77.0.12", 40000)) and not lst.accepts(("10.77.0.13", 40000))
        assert lst.accepts(("127.0.0.1", 5))  # no gateway process named yet
    finally:
        lst.stop()


@pytest.fixture(autouse=True)
def _forget():
    yield
    secrets.forget_all()
