"""The network known-answer scenario on emulated hosts: the
client host's link shaped to a fraction of what the unshaped chain did here, the campaign driven
from the client host into a tmpfs gateway on the gateway host. Every level must read "network",
with the link's measured bytes against its shaped rate in the evidence; afterwards no namespace,
link, qdisc, cgroup or process of it is left.

Quick: 2 levels, time-based (the self-test's QUICK rule: 8-14 s each, a 6 s steady window of
1 s link samples).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest

from xcbench.selftest import network
from xcbench.system import proc

WHY = network.why_not()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(WHY), reason=WHY or "-")]
TAG = f"{os.getpid() % 100000}"


def _leftovers(stamp: str) -> list[str]:
    """This test's namespaces, links, qdiscs, cgroups and processes still there."""
    left = []
    ns = proc.run(["ip", "netns", "list"]).stdout
    links = proc.run(["ip", "-o", "link", "show"]).stdout
    qdiscs = proc.run(["tc", "qdisc", "show"]).stdout
    for h in (f"nc{TAG}", f"ng{TAG}"):
        left += [f"netns xcb-{h}"] if f"xcb-{h}" in ns else []
        left += [f"qdisc of {h}"] if f"{h}" in qdiscs else []
        left += [f"cgroup {p}" for p in Path("/sys/fs/cgroup/cpu").glob(f"*{h}*")]
    left += [f"bridge xcbn{TAG}"] if f" xcbn{TAG}:" in links else []
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if stamp in cmd and p.pid != os.getpid():  # xrootd, cmsd, agents, iperf3 of the runs
            left.append(f"process {p.pid} {p.info['name']}")
    left += [f"scratch {d}" for d in Path("/var/tmp").glob(f"xcbench-*{stamp}*")]
    return left


# slow (make slow): the quick self-test in test_selftest.py runs this scenario in the default suite
@pytest.mark.slow
def test_shaped_client_link_is_network_at_every_level(tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_STATE", str(tmp_path / "state"))
    stamp = f"t{TAG}-{int(time.time())}"
    result = network.run_network(None, quick=True, out=tmp_path / "results", stamp=stamp, log=print)
    fig = result["figures"]
    print(fig)
    for c in result["checks"]:
        print(c.level, c.verdict, c.note, c.reason)
    levels = network.levels_of(quick=True)["levels"]
    assert [c.level for c in result["checks"]] == list(levels)
    shaped = fig["shaped_bytes_per_s"]
    assert shaped == pytest.approx(network.FRACTION * fig["unshaped_bytes_per_s"], rel=0.05, abs=1e6 / 8)
    for c in result["checks"]:
        assert c.verdict == "network", (c.level, c.reason, c.note)
        assert c.ok
        links = c.evidence["links"]
        client = links[f"nc{TAG}"]
        # the link's own figures: bytes it moved over the steady window vs its shaped rate
        assert client["limit"] == pytest.approx(shaped, rel=0.01)
        assert client["use"] >= 0.85 and client["samples"] >= 3
        assert max(client["tx"], client["rx"]) <= 1.1 * shaped  # tbf holds the rate
        assert c.evidence["link_use"] == pytest.approx(client["use"])
        assert f"nc{TAG}" in c.reason and "shaped" in c.reason
        assert {"client", "gateway"} <= set(c.roles)  # role CPU beside the link, as in every check
    # the iperf3 baseline over the shaped link agrees with the shaped rate
    assert fig["iperf3_bits_per_s"] / 8 == pytest.approx(shaped, rel=0.2)
    assert not _leftovers(stamp), _leftovers(stamp)
