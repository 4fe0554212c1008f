"""The gfal2 client path of a campaign against a real tmpfs gateway: transfers run concurrently
(root:// streamed pushes and http:// file copies), a stop cancels the copies in flight, and the
driver records its own CPU and limit."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.support.campaign_rows import Rows, finals, max_overlap
from tests.support.gwcheck import tmpfs_gateways
from xcbench.campaign import CampaignSpec, run_campaign

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with tmpfs_gateways(tmp_path_factory.mktemp("gfal2"), ("gfal2-dst",), size=1 << 30) as gws:
        yield gws[0]


def in_flight(rows, step: float = 0.005) -> int:
    """Most transfers in flight at the sampled instants (every ``step`` s over the campaign)."""
    spans = [(r["start_time"], r["finish_time"]) for r in rows if r["start_time"]]
    t, end, best = min(s for s, _ in spans), max(f for _, f in spans), 0
    while t <= end:
        best = max(best, sum(1 for s, f in spans if s <= t < f))
        t += step
    return best


@pytest.mark.parametrize("via", ["root", "http"])
def test_gfal2_transfers_run_concurrently(gateway, via):
    rows = Rows()
    spec = CampaignSpec(files=12, file_size="16M", client="gfal2", concurrency=4, checksum="both",
                        timeout=120, delete_after_verify=True)
    dest = gateway if via == "root" else gateway.http_url
    summary = run_campaign(spec, dest=dest, sink=rows, cell_id="gfal2-conc")
    ts = rows["transfers"]
    assert (summary["finished"], summary["failed"]) == (12, 0), [r["reason"] for r in ts]
    assert all(r["checksum_source"] == r["checksum_dest"] and r["client"] == "gfal2" for r in ts)
    assert all(r["destination"].startswith(f"{via}://") for r in ts)
    assert in_flight(ts) == 4 and max_overlap(ts) == 4  # reaches the limit, never above it
    assert not list(Path(gateway.target.path).iterdir())  # deleted after verification
    # the driver's CPU and its limit, over the campaign and in every timeline bucket
    assert summary["driver_cpu_cores"] > 0 and summary["driver_cpu_limit_cores"] > 0
    assert summary["driver_cpu_limit_source"]
    assert all(r["driver_cpu_limit_cores"] == summary["driver_cpu_limit_cores"]
               for r in rows["timeline"])


def test_a_stop_cancels_gfal2_copies_in_flight(gateway):
    """Large files at concurrency 2: the stop comes while a copy is writing; the copies in
    flight end CANCELED (with a start time), the rest CANCELED without one, nothing is lost."""
    rows = Rows()
    stop = threading.Event()
    spec = CampaignSpec(files=6, file_size="160M", client="gfal2", concurrency=2,
                        checksum="none", timeout=120)
    root = Path(gateway.target.path)

    def stop_when_writing() -> None:
        deadline = time.time() + 60
        while time.time() < deadline and not stop.is_set():
            if any(p.stat().st_size > 16 << 20 for p in root.iterdir() if p.is_file()):
                stop.set()
            time.sleep(0.01)

    watcher = threading.Thread(target=stop_when_writing, daemon=True)
    watcher.start()
    summary = run_campaign(spec, dest=gateway, sink=rows, stop_event=stop)
    stop.set()
    watcher.join()
    last = finals(rows["transfers"])
    assert sorted(last) == list(range(6))
    cancelled = [r for r in last.values() if r["file_state"] == "CANCELED"]
    started = [r for r in cancelled if r["start_time"]]
    assert started, [(r["file_state"], r["reason"]) for r in last.values()]
    assert all(0 < r["transferred"] < r["file_size"] or r["transferred"] == 0 for r in started)
    assert summary["finished"] + summary["failed"] == 6 and summary["failed"] >= 1
    assert not list(root.iterdir())  # a canceled copy's partial file is removed (FTS cleanup)
