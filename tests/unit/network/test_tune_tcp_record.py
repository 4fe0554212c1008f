"""--tune-tcp writes each old sysctl value down before it sets the key: a kill -9 of the command
leaves the record, and the next command puts the old values back (only values xcbench set,
only keys --tune-tcp sets, only from records that prove they are ours)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from xcbench.network import tcpaudit
from xcbench.system import statedir, sysctlrec

KEYS = {"net.core.rmem_max": ("212992", "67108864"), "net.ipv4.tcp_rmem": ("4096 131072 6291456",
                                                                          "4096 87380 33554432")}


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A sysctl tree of its own (never the host's), and a state home."""
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    root = tmp_path / "sys"
    for key, (old, _new) in KEYS.items():
        p = root / key.replace(".", "/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(old + "\n")
    return root


def _result() -> dict:
    return {"checks": [{"key": k, "recommended": new, "ok": False, "sysctl": True,
                        "fix": f"sysctl -w {k}='{new}'"} for k, (_old, new) in KEYS.items()]}


def _values(root) -> dict[str, str]:
    return {k: sysctlrec.read(k, str(root)) for k in KEYS}


DRIVER = textwrap.dedent("""
    import json, os, signal, sys
    from pathlib import Path
    from xcbench.network import tcpaudit
    result = json.loads(sys.argv[2])
    with tcpaudit.TcpTuning(result, root=Path(sys.argv[1])) as t:
        print(len(t.changed), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
""")


def test_after_kill_9_the_next_command_puts_the_old_values_back(fake, capsys):
    before = _values(fake)
    cp = subprocess.run([sys.executable, "-c", DRIVER, str(fake), json.dumps(_result())],
                        capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert cp.returncode == -signal.SIGKILL and cp.stdout.strip() == "2", cp.stderr
    assert _values(fake) == {k: new for k, (_o, new) in KEYS.items()}  # left changed
    [rec] = (statedir.home() / "sysctl").glob("*.json")
    said = sysctlrec.restore_stale(str(fake))
    assert _values(fake) == before and len(said) == 2 and not rec.exists()
    assert sysctlrec.restore_stale(str(fake)) == []


def test_a_value_changed_since_by_someone_else_is_left(fake):
    cp = subprocess.run([sys.executable, "-c", DRIVER, str(fake), json.dumps(_result())],
                        capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert cp.returncode == -signal.SIGKILL
    sysctlrec.write("net.core.rmem_max", "1234", str(fake))  # the operator's own choice since
    said = sysctlrec.restore_stale(str(fake))
    assert sysctlrec.read("net.core.rmem_max", str(fake)) == "1234"
    assert sysctlrec.read("net.ipv4.tcp_rmem", str(fake)) == KEYS["net.ipv4.tcp_rmem"][0]
    assert any("left at 1234" in s for s in said)


def test_a_normal_exit_leaves_no_record(fake):
    with tcpaudit.TcpTuning(_result(), root=fake) as t:
        assert len(t.changed) == 2 and len(list((statedir.home() / "sysctl").glob("*"))) == 1
    assert not list((statedir.home() / "sysctl").glob("*.json"))


def test_tuning_keeps_the_commands_signal_handlers(fake):
    mine = signal.getsignal(signal.SIGTERM)
    with tcpaudit.TcpTuning(_result(), root=fake):
        assert signal.getsignal(signal.SIGTERM) is mine  # main: its own handler replaced it


@pytest.mark.parametrize("change,why", [
    ({"kernel.core_pattern": {"was": "core", "set": "|/tmp/x"}}, "not a sysctl --tune-tcp sets"),
    ({"net.core.rmem_max": {"was": "1\nnet.core.x=1", "set": "2"}}, "not sysctl values"),
])
def test_a_forged_sysctl_record_is_left_alone(fake, capsys, change, why):
    d = statedir.ensure(statedir.home() / "sysctl")
    f = d / "999999.json"
    statedir.write_private(f, json.dumps({"host": statedir.HOST, "uid": os.geteuid(),
                                          "root": str(fake), "owner": {"pid": 999999},
                                          "changed": change}))
    before = _values(fake)
    assert sysctlrec.restore_stale(str(fake)) == []
    assert _values(fake) == before and f.exists() and why in capsys.readouterr().err
