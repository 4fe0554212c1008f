"""The storage-network known-answer scenario: the mini cluster's OSDs in an
emulated storage host, a node_exporter inside it scraped over the bridge. Unshaped, no level may
say storage-network; its link shaped to a tenth of the unshaped chain, every level must say
storage-network, naming that host and its NIC, with the figures from Prometheus. Nothing of
either setup is left behind."""

import os
import time
from pathlib import Path

import psutil
import pytest

from xcbench.selftest import storagenet
from xcbench.selftest.scenarios import QUICK
from xcbench.system import proc

WHY = storagenet.why_not()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(WHY), reason=WHY or "-")]
TAG = f"{os.getpid() % 100000}"


def _leftovers(work: Path) -> list[str]:
    left = []
    if f"xcb-st{TAG}" in proc.run(["ip", "netns", "list"]).stdout:
        left.append(f"netns xcb-st{TAG}")
    if f" xcbv{TAG}:" in proc.run(["ip", "-o", "link", "show"]).stdout:
        left.append(f"bridge xcbv{TAG}")
    for p in psutil.process_iter(["pid", "cmdline"]):
        if str(work) in " ".join(p.info["cmdline"] or []) and p.pid != os.getpid():
            left.append(f"process {p.pid} {(p.info['cmdline'] or ['?'])[0]}")
    left += [f"cluster dir {d}" for d in work.glob("*-cluster")]
    return left


# slow (make slow): the quick self-test in test_selftest.py runs this scenario in the default suite
@pytest.mark.slow
def test_shaped_storage_host_link_is_storage_network_at_every_level(tmp_path):
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    work = tmp_path / "work"
    result = storagenet.run_storage_network(None, quick=True, out=tmp_path / "results",
                                            workdir=work, stamp=stamp, log=print)
    checks = result["checks"]
    for c in checks:
        print(c.level, c.ok, c.verdict, c.reason, "|", c.note)
    unshaped = [c for c in checks if c.note.startswith("unshaped")]
    shaped = [c for c in checks if c.note.startswith("shaped")]
    assert [c.level for c in unshaped] == list(QUICK.levels) == [c.level for c in shaped]
    assert all(c.verdict != "storage-network" for c in unshaped)
    fig = result["figures"]
    for c in shaped:
        assert c.ok and c.verdict == "storage-network", (c.level, c.reason, c.note)
        nic = c.evidence["storage_nic"]
        assert nic["host"] == f"st{TAG}" and nic["device"] == "eth0" and nic["way"] == "received"
        assert nic["speed"] * 8 == pytest.approx(int(fig["shaped_rate"].removesuffix("mbit")) * 1e6)
        assert "shaped" in nic["speed_source"] and nic["use"] >= 0.85
        assert c.evidence["rate"] < 0.5 * fig["unshaped_bytes_per_s"]  # the cause: slower than unshaped
        assert f"storage host st{TAG}'s NIC eth0" in c.reason
    assert all(c.ok for c in checks)
    assert not _leftovers(work)
