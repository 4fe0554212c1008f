"""Network baseline on this machine: the TCP audit reads the real sysctls, --tune-tcp puts every
old value back, and a short iperf3 sweep (real iperf3 on loopback) gives a row per point.
No Ceph cluster needed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xcbench.cli import main
from xcbench.network import baseline, tcpaudit
from xcbench.store.rundir import RunDir
from xcbench.system import proc

pytestmark = pytest.mark.integration

SYSCTLS = ("net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
           "net.core.default_qdisc", "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_mtu_probing")
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="setting sysctls needs root")


def proc_sys() -> dict[str, str]:
    """Read independently of xcbench: the files under /proc/sys, whitespace collapsed."""
    out = {}
    for name in SYSCTLS:
        with open("/proc/sys/" + name.replace(".", "/")) as fh:
            out[name] = " ".join(fh.read().split())
    return out


@pytest.fixture(scope="module", autouse=True)
def tools():
    for t in ("iperf3", "ip", "unshare", "tc"):
        if shutil.which(t) is None:
            pytest.skip(f"{t} not installed (iperf3: Debian iperf3; ip/tc: iproute2; unshare: util-linux)")


def test_audit_reports_this_machines_actual_sysctls():
    before = proc_sys()
    result = tcpaudit.audit(["127.0.0.1"])
    got = {c["key"]: c["value"] for c in result["checks"]}
    assert {k: got[k] for k in SYSCTLS} == before
    assert proc_sys() == before  # an audit only reads
    with open("/sys/class/net/lo/mtu") as fh:
        assert got["mtu lo"] == fh.read().strip()
    rmem = next(c for c in result["checks"] if c["key"] == "net.core.rmem_max")
    assert rmem["ok"] == (int(before["net.core.rmem_max"]) >= int(rmem["recommended"]))


def test_audit_says_whether_fq_exists_rather_than_assuming():
    probe = subprocess.run(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "fq"],
                           capture_output=True, text=True)
    q = next(c for c in tcpaudit.audit()["checks"] if c["key"] == "net.core.default_qdisc")
    if q["value"] == "fq":
        pytest.skip("this host already uses fq")
    if probe.returncode == 0:
        assert q["ok"] is False and q["fix"] == "sysctl -w net.core.default_qdisc=fq"
    else:  # e.g. this kernel: "Specified qdisc kind is unknown"
        assert q["ok"] is None and q["fix"] is None and "NO" in q["note"]
        assert all("default_qdisc=fq" not in f["fix"] for f in tcpaudit.findings(tcpaudit.audit()))


@root_only
def test_tune_tcp_sets_the_fixes_and_puts_every_old_value_back():
    before = proc_sys()
    result = tcpaudit.audit()
    with tcpaudit.TcpTuning(result) as t:
        during = proc_sys()
        for key, (old, new) in t.changed.items():
            assert before[key] == old and during[key] == " ".join(new.split())
    assert proc_sys() == before
    with pytest.raises(RuntimeError), tcpaudit.TcpTuning(tcpaudit.audit()):
        raise RuntimeError("fault")
    assert proc_sys() == before


@root_only
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_baseline_leaves_no_iperf3_server_and_no_tuned_sysctl(tmp_path, sig):
    """`xcbench baseline --tune-tcp` stopped mid-sweep: on SIGTERM through the command's own
    signal handling (its iperf3 server stopped, the sysctls put back); on SIGKILL by the next
    command (the recorded server stopped, the recorded sysctls restored)."""
    mark = f"XCB_TEST_MARK=baseline-{os.getpid()}-{sig}"
    before, servers = proc_sys(), _iperf3_servers(mark)
    env = {**os.environ, "XCBENCH_HOME": str(tmp_path / "home"), "XCB_TEST_MARK": mark}
    cmd = [sys.executable, "-m", "xcbench.cli", "baseline", "--tune-tcp", "--streams", "1",
           "--seconds", "60"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (_iperf3_servers(mark) - servers) and time.monotonic() < deadline:
            assert p.poll() is None, p.communicate()
            time.sleep(0.05)
        assert _iperf3_servers(mark) - servers, "the sweep never started its iperf3 server"
        p.send_signal(sig)
        rc = p.wait(timeout=60)
        assert rc != 0
        if sig == signal.SIGKILL:
            assert (tmp_path / "home" / "procs").is_dir()  # what it started is recorded
            nxt = subprocess.run([sys.executable, "-m", "xcbench.cli", "baseline", "--audit"],
                                 env=env, capture_output=True, text=True, timeout=120)
            assert nxt.returncode == 0, nxt.stderr
            assert "was killed" in nxt.stderr and "iperf3" in nxt.stderr
        deadline = time.monotonic() + 20
        while _iperf3_servers(mark) - servers and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _iperf3_servers(mark) - servers
        assert proc_sys() == before
    finally:
        if p.poll() is None:
            p.kill()


def _iperf3_servers(mark: str | None = None) -> set[int]:
    """iperf3 servers running (with ``mark``: only those started with it in their environment,
    not another engineer's)."""
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
                if cmd and cmd[0].endswith(b"iperf3") and b"-s" in cmd and (
                        mark is None or mark.encode() in (d / "environ").read_bytes()):
                    out.add(int(d.name))
            except OSError:
                continue
    return out


def test_short_sweep_has_a_row_per_point_with_positive_rates(tmp_path):
    servers = _iperf3_servers()
    procs = proc.ProcessSet()
    t0 = time.monotonic()
    rows = baseline.sweep(streams=[1, 4], seconds=1, procs=procs, raw_dir=tmp_path)
    assert time.monotonic() - t0 < 60
    assert [(r["streams"], r["direction"]) for r in rows] == [(1, "write"), (1, "read"),
                                                              (4, "write"), (4, "read")]
    for r in rows:
        assert r["error"] is None and r["bits_per_second"] > 0 and r["cpu_host"] > 0
        assert r["client"] == r["gateway"] == "127.0.0.1" and r["seconds"] == 1
    raw = sorted(p.name for p in tmp_path.glob("*.json"))
    assert raw == ["127.0.0.1-127.0.0.1-P1-read.json", "127.0.0.1-127.0.0.1-P1-write.json",
                   "127.0.0.1-127.0.0.1-P4-read.json", "127.0.0.1-127.0.0.1-P4-write.json"]
    assert baseline.parse_iperf3((tmp_path / raw[2]).read_text())["streams"] == 4
    assert not list(procs) and _iperf3_servers() <= servers  # our server is gone


def test_a_runs_baseline_records_audit_findings_and_points(tmp_path):
    run = RunDir.create(tmp_path, name="nb", fingerprint=False)
    found: dict[str, list] = {}
    rows = baseline.iperf3(run=run, sink=lambda t, r: found.setdefault(t, []).extend(r),
                           streams=[1, 2], seconds=1)
    assert len(rows) == 4 and all(r["bits_per_second"] > 0 for r in rows)
    audit = RunDir.open(run.path).manifest["tcp_audit"]
    assert {c["key"]: c["value"] for c in audit["checks"]}["net.core.rmem_max"] == \
        proc_sys()["net.core.rmem_max"]
    lows = [c["key"] for c in audit["checks"] if c["ok"] is False]
    assert sorted(f["what"].split(" ")[0] for f in found.get("findings", []) if f["severity"] == "warning") \
        == sorted(lows)
    assert len(list((run.path / "raw" / "iperf3").glob("*.json"))) == 4


def test_cli_audit_and_sweep(capsys):
    before = proc_sys()
    assert main(["baseline", "--audit"]) == 0
    out = capsys.readouterr().out
    assert f"net.core.rmem_max = {before['net.core.rmem_max']}" in out and "fasterdata" in out
    assert main(["baseline", "--streams", "1", "--seconds", "1"]) == 0
    assert "127.0.0.1" in capsys.readouterr().out
    assert main(["baseline", "--streams", "0"]) == 2
    assert main(["baseline", "--pair", "127.0.0.1"]) == 2
