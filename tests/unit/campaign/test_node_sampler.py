"""A campaign agent's samples of its own host (xcbench.scaleout.node_sampler): the link that holds
the host's address, its shaped rate (a real tbf in a network namespace of its own), the CPU; and
what the coordinator takes of them (xcbench.scaleout.agent_messages)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from xcbench.scaleout import agent_messages
from xcbench.scaleout.node_sampler import NodeSampler, interface_of, nic_speed, shaped_rate


def test_loopback_host_rows():
    s = NodeSampler("n1", "127.0.0.1")
    assert s.iface == interface_of("127.0.0.1") == "lo" and s.limit is None
    first = s.sample(100.0, 1.0)
    time.sleep(0.1)  # the CPU counters move in ticks (10 ms)
    rows = s.sample(101.0, 2.0)
    metrics = {r["metric"] for r in rows}
    assert {"link.tx_bytes", "link.tx_bytes.rate", "link.rx_bytes.rate", "link.limit_bytes",
            "node.cpu.busy", "node.cpu.cores", "node.cpu.limit_cores", "node.cpu.client_cores"} \
        <= metrics, metrics
    assert "node.cpu.busy" not in {r["metric"] for r in first}  # a share needs two readings
    busy = next(r for r in rows if r["metric"] == "node.cpu.busy")
    assert 0.0 <= busy["value"] <= 1.0 and busy["labels"] == {"host": "n1"}
    link = next(r for r in rows if r["metric"] == "link.tx_bytes")
    assert link["labels"] == {"host": "n1", "roles": "client"} and link["sampler"] == "node"
    for r in rows:  # every row it makes is one the coordinator takes
        assert agent_messages.check({"table": "samples", "rows": [r]}) is None, r
    assert NodeSampler("n1", "192.0.2.77").iface is None  # an address this host does not hold


SHAPED = r'''
import json, subprocess, sys
from xcbench.scaleout.node_sampler import NodeSampler, shaped_rate
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "200mbit", "burst",
                "65536", "latency", "50ms"], check=True)
s = NodeSampler("n1", "127.0.0.1")
print(json.dumps({"limit": s.limit, "direct": shaped_rate("lo"), "speed": s.speed}))
'''


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("tc") is None,
                    reason="a network namespace of its own needs root, unshare and tc")
def test_a_shaped_link_is_its_limit():
    out = subprocess.run(["unshare", "--net", sys.executable, "-c", SHAPED], capture_output=True,
                         text=True, timeout=60, check=True)
    got = json.loads(out.stdout)
    assert got["limit"] == got["direct"] == 25e6  # 200 Mbit/s in bytes/s, as tc -j says it
    assert got["speed"] is None  # lo has no speed


# two busy children for 1 s, reaped before the second sample: their CPU is the agent's
LIMITED = r'''
import json, subprocess, time
from xcbench.scaleout.node_sampler import NodeSampler
s = NodeSampler("n1", "127.0.0.1")
s.sample(1.0, time.monotonic())
subprocess.run(["sh", "-c", "yes >/dev/null & a=$!; yes >/dev/null & b=$!; sleep 1; kill $a $b; wait"],
               timeout=30)
rows = s.sample(2.0, time.monotonic())
print(json.dumps({r["metric"]: [r["value"], r["labels"]] for r in rows if r["metric"].startswith("node.cpu")}))
'''


@pytest.mark.skipif(shutil.which("taskset") is None or (os.cpu_count() or 1) < 2,
                    reason="needs taskset and two CPUs")
def test_the_client_roles_limit_and_what_it_used():
    """Pinned to one CPU (as a Slurm step is by task/affinity or a cpuset), the agent's limit is
    that CPU, said with its source, and what it and its children used stays within it."""
    out = subprocess.run(["taskset", "-c", "1", sys.executable, "-c", LIMITED], capture_output=True,
                         text=True, timeout=60, check=True)
    got = json.loads(out.stdout)
    value, labels = got["node.cpu.limit_cores"]
    assert value == 1.0 and labels == {"host": "n1", "source": "affinity 1"}, got
    assert got["node.cpu.cores"][0] == 1.0
    assert 0.0 < got["node.cpu.client_cores"][0] <= 1.05, got  # two busy children, one CPU


def test_nic_speed_only_when_sysfs_shows_this_interface(tmp_path, monkeypatch):
    import psutil
    d = tmp_path / "eth9"
    d.mkdir()
    (d / "speed").write_text("25000\n")
    (d / "address").write_text("02:00:00:00:00:09\n")
    addr = SimpleNamespace(family=psutil.AF_LINK, address="02:00:00:00:00:09")
    monkeypatch.setattr(psutil, "net_if_addrs", lambda: {"eth9": [addr]})
    assert nic_speed("eth9", tmp_path) == 25e9 / 8
    (d / "address").write_text("02:00:00:00:00:01\n")  # the root namespace's eth9, not ours
    assert nic_speed("eth9", tmp_path) is None
    assert shaped_rate("no-such-if0") is None


@pytest.mark.parametrize("row, why", [
    ({"wall": 1.0, "metric": "cpu.busy", "value": 1.0, "labels": {}}, "not a metric an agent sends"),
    ({"wall": 1.0, "metric": "link.tx_bytes", "value": 1.0, "labels": {"a": {"b": 1}}},
     "labels must be strings"),
    ({"wall": 1.0, "metric": "link.tx_bytes", "value": 1.0, "labels": {str(i): "x" for i in range(9)}},
     "at most 8 labels"),
    ({"wall": 1.0, "metric": "link.tx_bytes", "value": float("inf"), "labels": {}}, "value: not a plain value"),
    ({"metric": "link.tx_bytes", "value": 1.0, "labels": {}}, "wall: missing"),
    ({"wall": 1.0, "metric": "link.tx_bytes", "value": 1.0, "host": "x"}, "not a column of samples"),
])
def test_samples_an_agent_may_not_send(row, why):
    assert why in (agent_messages.check({"table": "samples", "rows": [row]}) or "")


def test_busy_is_over_the_cpus_the_agent_may_run_on(tmp_path):
    """A step given CPUs 1 and 3 of four is at its limit when those are busy, whatever 0 and 2 do."""
    from xcbench.scaleout.node_sampler import cpu_jiffies
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  400 0 0 400 0 0 0 0 0 0\n"
                    "cpu0 0 0 0 100 0 0 0 0 0 0\ncpu1 100 0 0 0 0 0 0 0 0 0\n"
                    "cpu2 0 0 0 100 0 0 0 0 0 0\ncpu3 90 0 0 5 5 0 0 0 0 0\nintr 1 2 3\n")
    assert cpu_jiffies({1, 3}, stat) == (10.0, 200.0)  # idle + iowait of 200 ticks: 95 % busy
    assert cpu_jiffies({0, 2}, stat) == (200.0, 200.0)
    assert cpu_jiffies({7}, stat) is None


def test_the_coordinator_labels_a_hosts_samples_with_its_machine():
    from xcbench.scaleout.distributed import machine_of
    from xcbench.scaleout.merge import correct_sample
    assert machine_of({"boot_id": "a"}, own="a") == "shared"
    assert machine_of({"boot_id": "b"}, own="a") == "own"
    assert machine_of({"clock": 1.0}, own="a") == machine_of(None, own="a") == "unknown"
    row = correct_sample({"wall": 10.0, "metric": "node.cpu.busy", "value": 0.5,
                          "labels": {"host": "liar", "machine": "own"}}, "n1", 2.0, "c1", "shared")
    assert row["labels"] == {"host": "n1", "machine": "shared"} and row["wall"] == 8.0
    assert agent_messages.check({"hello": {"clock": 1.0, "pid": 2, "version": "x",
                                           "boot_id": "0f6e"}}) is None
