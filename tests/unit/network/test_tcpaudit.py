"""The TCP audit's rules on a fake /proc/sys tree, and TcpTuning's restore on every exit path."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from xcbench.errors import XcbError
from xcbench.network import tcpaudit

HOST = {"net.core.rmem_max": "4194304", "net.core.wmem_max": "212992",
        "net.ipv4.tcp_rmem": "4096\t131072\t6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304",
        "net.core.default_qdisc": "pfifo_fast", "net.ipv4.tcp_congestion_control": "cubic",
        "net.ipv4.tcp_available_congestion_control": "reno cubic htcp",
        "net.ipv4.tcp_mtu_probing": "0"}


def fake_root(tmp_path: Path, values: dict[str, str]) -> Path:
    root = tmp_path / "sys"
    for k, v in values.items():
        p = tcpaudit.sysctl_path(k, root)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(v + "\n")
    return root


@pytest.fixture
def no_probe(monkeypatch):
    monkeypatch.setattr(tcpaudit, "route_dev", lambda a: None)
    monkeypatch.setattr(tcpaudit, "qdisc_available", lambda kind="fq": (False, "test: no fq"))


def checks(result):
    return {c["key"]: c for c in result["checks"]}


def test_values_below_the_tier_are_findings_with_the_sysctl_line(tmp_path, no_probe):
    r = tcpaudit.audit(["127.0.0.1"], target_gbps=10, root=fake_root(tmp_path, HOST))
    c = checks(r)
    assert r["tier_gbps"] == 10
    assert c["net.core.rmem_max"]["ok"] is False
    assert c["net.core.rmem_max"]["fix"] == "sysctl -w net.core.rmem_max=67108864"
    assert c["net.ipv4.tcp_rmem"]["value"] == "4096 131072 6291456"
    assert c["net.ipv4.tcp_rmem"]["fix"] == "sysctl -w net.ipv4.tcp_rmem='4096 87380 33554432'"
    assert c["net.ipv4.tcp_congestion_control"]["fix"] == \
        "sysctl -w net.ipv4.tcp_congestion_control=htcp"  # bbr is not available here
    rows = tcpaudit.findings(r, host="gw1")
    warn = {f["what"].split(" ")[0]: f for f in rows if f["severity"] == "warning"}
    assert set(warn) == {"net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem",
                         "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control",
                         "net.ipv4.tcp_mtu_probing"}
    assert all(f["fix"].startswith("sysctl -w ") and f["cell_id"] == "host:gw1" for f in warn.values())


def test_values_at_or_above_the_recommendation_are_not_findings(tmp_path, no_probe):
    good = {**HOST, "net.core.rmem_max": "2147483647", "net.core.wmem_max": "2147483647",
            "net.ipv4.tcp_rmem": "4096 131072 2147483647", "net.ipv4.tcp_wmem": "4096 16384 1073741824",
            "net.core.default_qdisc": "fq", "net.ipv4.tcp_congestion_control": "bbr",
            "net.ipv4.tcp_mtu_probing": "1"}
    r = tcpaudit.audit(["127.0.0.1"], root=fake_root(tmp_path, good))
    assert r["tier_gbps"] == tcpaudit.DEFAULT_TIER and "assumed" in r["tier_how"]
    assert tcpaudit.findings(r) == []


def test_an_unavailable_qdisc_is_said_and_never_recommended(tmp_path, no_probe):
    r = tcpaudit.audit(["127.0.0.1"], root=fake_root(tmp_path, HOST))
    q = checks(r)["net.core.default_qdisc"]
    assert q["ok"] is None and q["fix"] is None and q["sysctl"] is False and "NO" in q["note"]
    info = [f for f in tcpaudit.findings(r) if "default_qdisc" in f["what"]]
    assert len(info) == 1 and info[0]["severity"] == "info" and "sysctl" not in info[0]["fix"]
    assert "default_qdisc" not in tcpaudit.TcpTuning(r, root=Path("/nonexistent")).plan


def test_tier_follows_the_nic_speed(tmp_path, monkeypatch):
    net = tmp_path / "net" / "eth9"
    net.mkdir(parents=True)
    (net / "speed").write_text("40000\n")
    (net / "mtu").write_text("1500\n")
    monkeypatch.setattr(tcpaudit, "NET_ROOT", tmp_path / "net")
    monkeypatch.setattr(tcpaudit, "route_dev", lambda a: "eth9")
    r = tcpaudit.audit(["10.0.0.1"], root=fake_root(tmp_path, HOST), probe_qdisc=False)
    c = checks(r)
    assert r["tier_gbps"] == 40 and "40 Gb/s" in r["tier_how"]
    assert c["speed eth9"]["value"] == "40 Gb/s"
    assert c["mtu eth9"]["ok"] is False and "mtu 9000" in c["mtu eth9"]["fix"]


def test_tuning_sets_the_fixes_and_puts_every_old_value_back(tmp_path, no_probe):
    root = fake_root(tmp_path, HOST)
    before = {k: tcpaudit.read_sysctl(k, root) for k in HOST}
    r = tcpaudit.audit(root=root)
    with tcpaudit.TcpTuning(r, root=root) as t:
        assert tcpaudit.ACTIVE is t
        assert tcpaudit.read_sysctl("net.core.rmem_max", root) == "2147483647"
        assert tcpaudit.read_sysctl("net.ipv4.tcp_congestion_control", root) == "htcp"
        assert tcpaudit.read_sysctl("net.core.default_qdisc", root) == "pfifo_fast"
        assert tcpaudit.manifest_entry(r)["tuned"]["net.ipv4.tcp_mtu_probing"] == {"was": "0", "set": "1"}
        tuned = [f for f in tcpaudit.findings(tcpaudit.audit(root=root)) if "tuned for this run" in f["what"]]
        assert len(tuned) == len(t.changed) == 6 and all(f["severity"] == "info" for f in tuned)
    assert {k: tcpaudit.read_sysctl(k, root) for k in HOST} == before
    assert tcpaudit.ACTIVE is None and "tuned" not in tcpaudit.manifest_entry(r)


def test_tuning_restores_on_exceptions_and_on_sigterm(tmp_path, no_probe):
    root = fake_root(tmp_path, HOST)
    before = {k: tcpaudit.read_sysctl(k, root) for k in HOST}
    with pytest.raises(RuntimeError), tcpaudit.TcpTuning(tcpaudit.audit(root=root), root=root):
        raise RuntimeError("a fault in the run")
    assert {k: tcpaudit.read_sysctl(k, root) for k in HOST} == before
    # SIGTERM goes through the command's own signal handling (xcbench.system.signals), which the
    # tuning keeps: the stop unwinds through the tuning, which puts the old values back
    from xcbench.system.signals import StopFlag
    old = signal.getsignal(signal.SIGTERM)
    with StopFlag() as flag:
        commands = signal.getsignal(signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt), \
                tcpaudit.TcpTuning(tcpaudit.audit(root=root), root=root):
            assert signal.getsignal(signal.SIGTERM) == commands
            assert tcpaudit.read_sysctl("net.core.wmem_max", root) == "2147483647"
            os.kill(os.getpid(), signal.SIGTERM)
        assert flag.signum == signal.SIGTERM
    assert {k: tcpaudit.read_sysctl(k, root) for k in HOST} == before
    assert signal.getsignal(signal.SIGTERM) is old


def test_a_value_that_cannot_be_set_restores_what_was_already_set(tmp_path, no_probe, monkeypatch):
    root = fake_root(tmp_path, HOST)
    before = {k: tcpaudit.read_sysctl(k, root) for k in HOST}
    r = tcpaudit.audit(root=root)
    real = tcpaudit.write_sysctl

    def refuse_mtu_probing(name, value, root=tcpaudit.SYSCTL_ROOT):
        if name == "net.ipv4.tcp_mtu_probing" and value == "1":  # the kernel says EPERM/EINVAL
            raise XcbError(f"--tune-tcp: cannot set {name} = {value} (Operation not permitted)")
        real(name, value, root)
    monkeypatch.setattr(tcpaudit, "write_sysctl", refuse_mtu_probing)
    with pytest.raises(XcbError, match="cannot set net.ipv4.tcp_mtu_probing"):
        with tcpaudit.TcpTuning(r, root=root):
            pass
    assert {k: tcpaudit.read_sysctl(k, root) for k in HOST} == before
    assert tcpaudit.ACTIVE is None


def test_tuned_is_a_no_op_unless_asked():
    with tcpaudit.tuned(False) as t:
        assert t is None and tcpaudit.ACTIVE is None


def test_run_tune_tcp_wraps_the_whole_run_and_restores_after_a_fault(monkeypatch):
    import contextlib

    from xcbench.cli import build_parser
    from xcbench.commands import run as run_cmd
    events = []

    @contextlib.contextmanager
    def fake_tuned(enabled, addresses=("127.0.0.1",)):
        events.append(("tuned", enabled))
        try:
            yield
        finally:
            events.append(("restored", enabled))

    def fake_run_matrix(*a, **kw):
        events.append(("run",))
        raise RuntimeError("a fault inside the run")
    # patched where the command looks them up (it imports them at its top)
    monkeypatch.setattr(run_cmd, "tuned", fake_tuned)
    monkeypatch.setattr(run_cmd, "run_matrix", fake_run_matrix)
    args = build_parser().parse_args(["run", "layouts/quick.yaml", "--tune-tcp"])
    opts = run_cmd.options(args)
    assert opts.extra["tune_tcp"] is True
    with pytest.raises(RuntimeError):
        run_cmd.execute(None, None, opts)
    assert events == [("tuned", True), ("run",), ("restored", True)]
    assert run_cmd.options(build_parser().parse_args(["run", "x.yaml"])).extra["tune_tcp"] is False
