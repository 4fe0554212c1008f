"""`xcbench confirm` on a network verdict: a client host xcbench made (`hosts up`), its link
shaped well below what the chain does here, a run from it into a tmpfs gateway on a gateway host
says "network"; confirm replays the level from the same hosts, control at the link's rate and
changed at twice it (tc, recorded and restored after each run): the rate must rise (a link with
headroom, doubled, changes nothing: refuted). After it the link is back at its rate and the record says nothing is tightened; a
tightening an experiment left behind (a confirm killed) is restored by the next confirm.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from xcbench.hosts import reshape
from xcbench.hosts.emulate import free_network
from xcbench.selftest import network
from xcbench.store.rundir import RunDir
from xcbench.system import proc

WHY = network.why_not()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(WHY), reason=WHY or "-")]
TAG = f"{os.getpid() % 100000}"
RATE = 200e6  # bits/s: ~3 % of what the chain does here over a 20 Gb/s link (~7 Gb/s): it binds


def _tbf_rate(dev: str, ns: str | None = None) -> str:
    out = proc.run(["tc", *(["-n", ns] if ns else []), "qdisc", "show", "dev", dev]).stdout
    return out.split(" rate ", 1)[1].split()[0]


@pytest.mark.slow
def test_a_network_verdict_is_confirmed_by_doubling_the_link_xcbench_made(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_STATE", str(tmp_path / "state"))
    sizes = {**network.levels_of(quick=True), "file_size": "16M"}
    doc = network.inventory_doc(TAG, f"{RATE / 1e6:g}mbit", free_network())
    name = f"confirm-net-{int(time.time())}"
    with network.emulated(doc, tmp_path, name) as inv:
        run = network._run(network.matrix_doc(name, (2,), sizes), name, None, tmp_path / "r", tmp_path,
                           inv, False)
        (v,) = run.table("verdicts").to_dict("records")
        assert v["verdict"] == "network" and f"nc{TAG}" in v["reason"], v["reason"]
        client = inv.clients[0]
        assert _tbf_rate(client.veth) == "200Mbit"
        cp = subprocess.run([sys.executable, "-m", "xcbench", "confirm", str(run.path), "--json"],
                            capture_output=True, text=True, timeout=900)
        assert cp.returncode == 0, cp.stderr[-3000:]
        (x,) = json.loads(cp.stdout)["confirmations"]
        print(cp.stderr[-2000:])
        assert x["experiment"] == "relieve" and x["predicted"] == 2.0 and f"nc{TAG}" in x["what"]
        assert x["outcome"] == "confirmed", x["why"]
        assert 0.35 <= x["ratio"] <= 0.65  # the rate followed the link: half the rate, half the chain
        # each changed run saw the link at half its rate (telemetry's limit), each control at its rate
        for r in x["runs"]:
            ev = json.loads(RunDir.open(r["run"]).table("verdicts")["evidence"].iloc[0])
            limit = ev["links"][f"nc{TAG}"]["limit"] * 8
            assert limit == pytest.approx(RATE * 2 if r["arm"] == "changed" else RATE, rel=0.01)
        # restored: tc on both ends and the record
        assert _tbf_rate(client.veth) == "200Mbit" and _tbf_rate("eth0", client.netns) == "200Mbit"
        assert reshape.current_rates() == {} and reshape.shaped()[client.name]["rate_bits_per_s"] == RATE
        # an experiment killed mid-arm leaves its tightening recorded; the next confirm restores it
        left = reshape.tightened(reshape.shaped()[client.name]["record"], client.name, RATE / 4)
        left.__enter__()
        assert _tbf_rate(client.veth) == "50Mbit" and reshape.current_rates() == {client.name: RATE / 4}
        assert reshape.restore_left() == [client.name]
        left.__exit__(None, None, None)  # the experiment's own restore: nothing left to do
        assert _tbf_rate(client.veth) == "200Mbit" and _tbf_rate("eth0", client.netns) == "200Mbit"
        assert reshape.current_rates() == {}


@pytest.mark.slow
def test_a_link_with_headroom_doubled_refutes_network(tmp_path, monkeypatch):
    """The control: the same hosts with the link shaped far above what the chain does here
    (20 Gb/s against ~7 Gb/s measured here), the run's verdict tested as network (`--test network`): half
    the link still has headroom, the rate does not follow, so network is refuted."""
    monkeypatch.setenv("XCBENCH_STATE", str(tmp_path / "state"))
    sizes = {**network.levels_of(quick=True), "file_size": "16M"}
    doc = network.inventory_doc(TAG, "20000mbit", free_network())
    name = f"confirm-net-wide-{int(time.time())}"
    with network.emulated(doc, tmp_path, name) as inv:
        run = network._run(network.matrix_doc(name, (2,), sizes), name, None, tmp_path / "r", tmp_path,
                           inv, False)
        (v,) = run.table("verdicts").to_dict("records")
        assert v["verdict"] != "network", v["reason"]
        cp = subprocess.run([sys.executable, "-m", "xcbench", "confirm", str(run.path), "--json",
                             "--test", "network"], capture_output=True, text=True, timeout=900)
        print(cp.stderr[-2000:])
        assert cp.returncode == 1, cp.stderr[-3000:]  # a refuted verdict
        (x,) = json.loads(cp.stdout)["confirmations"]
        assert x["verdict"] == "network" and x["run_verdict"] == v["verdict"]
        assert x["experiment"] == "relieve" and "20000 -> 40000 Mb/s" in x["what"]
        assert x["outcome"] == "refuted", x["why"]
        assert _tbf_rate(inv.clients[0].veth) == "20Gbit" and reshape.current_rates() == {}
