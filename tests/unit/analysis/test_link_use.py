"""The shaped-link rule (analysis.verdicts.link_use) on constructed telemetry: a level moving >= 85 % of its
client link's shaped rate is "network" with the link's figures as evidence; a level well under
its link's rate is not; a link of a host the run's inventory does not name never counts."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pandas as pd

from xcbench.analysis.verdicts import link_use
from xcbench.analysis.verdicts.attribution import NEAR, decide
from xcbench.analysis.verdicts.samples import SampleIndex

MBIT = 1e6 / 8  # bytes/s of 1 Mbit/s
CELL = "c1"
WINDOW = [(110.0, 120.0)]


def _manifest(rate_bits_per_s: float | None = 200e6) -> dict:
    link = {"rate": "200mbit", "rate_bits_per_s": rate_bits_per_s, "rtt": None} if rate_bits_per_s else None
    return {"hosts": {"hosts": {"cl1": {"roles": ["client"], "transport": "netns", "link": link},
                                "gw1": {"roles": ["gateway", "redirector"], "transport": "netns",
                                        "link": None}}}}


def _rows(host: str, tx: float, rx: float, limit: float | None, roles: str = "client") -> list[dict]:
    lab = json.dumps({"host": host, "roles": roles})
    out = []
    for wall in range(100, 121):  # 1 s samples; the steady window is the last 10 s
        out += [{"cell_id": CELL, "wall": float(wall), "metric": "link.tx_bytes.rate", "value": tx,
                 "labels": lab},
                {"cell_id": CELL, "wall": float(wall), "metric": "link.rx_bytes.rate", "value": rx,
                 "labels": lab},
                {"cell_id": CELL, "wall": float(wall), "metric": "link.limit_bytes",
                 "value": math.nan if limit is None else limit, "labels": lab}]
    return out


def _rd(rows: list[dict], manifest: dict) -> SimpleNamespace:
    return SimpleNamespace(samples=SampleIndex(pd.DataFrame(rows)), manifest=manifest, run_id="r1")


def _ev(rate: float, **kw) -> dict:
    ev = {"rate": rate, "concurrency": 4, "mode": "push", "cores": 2.0, "gateway_cores": 0.3,
          "cpu": 0.15, "host_busy": 0.95, "network_bytes_per_s": math.nan, "starved_frac": 0.0,
          "backend": "tmpfs", "roles": {}, "sources": {}}
    ev.update(kw)
    return ev


def _verdict(rd, ev) -> tuple[str, str]:
    link_use.add_evidence(rd, CELL, WINDOW, ev)
    return link_use.decide_links(ev, *decide(ev), NEAR)


def test_saturated_shaped_link_is_network_with_the_link_evidence():
    rd = _rd(_rows("cl1", 192 * MBIT, 3 * MBIT, 200 * MBIT), _manifest())
    ev = _ev(190 * MBIT)
    verdict, reason = _verdict(rd, ev)
    assert verdict == "network", reason
    x = ev["links"]["cl1"]
    assert math.isclose(x["tx"], 192 * MBIT) and math.isclose(x["limit"], 200 * MBIT)
    assert math.isclose(x["use"], 0.96) and math.isclose(ev["link_use"], 0.96)
    assert x["samples"] == 11 and x["limit_source"] == "telemetry link.limit_bytes"
    assert "cl1" in reason and "192 Mb/s" in reason and "96 %" in reason and "200 Mb/s" in reason
    assert "links" in ev["sources"]
    json.dumps(ev)  # the evidence stays JSON


def test_a_received_stream_counts_too():
    rd = _rd(_rows("cl1", 2 * MBIT, 180 * MBIT, 200 * MBIT), _manifest())
    verdict, reason = _verdict(rd, _ev(175 * MBIT))
    assert verdict == "network" and "received 180 Mb/s" in reason


def test_a_level_well_under_its_link_is_not_network():
    rd = _rd(_rows("cl1", 100 * MBIT, 2 * MBIT, 200 * MBIT), _manifest())
    ev = _ev(100 * MBIT)
    verdict, reason = _verdict(rd, ev)
    assert verdict != "network", reason
    assert math.isclose(ev["link_use"], 0.5)  # the figures are still there


def test_just_under_the_threshold_is_not_network():
    rd = _rd(_rows("cl1", 0.8 * 200 * MBIT, 0.0, 200 * MBIT), _manifest())
    assert _verdict(rd, _ev(160 * MBIT))[0] != "network"


def test_an_unshaped_link_is_no_limit():
    rd = _rd(_rows("cl1", 900 * MBIT, 0.0, None), _manifest(rate_bits_per_s=None))
    ev = _ev(900 * MBIT)
    verdict, _ = _verdict(rd, ev)
    assert verdict != "network"
    assert ev["links"]["cl1"]["limit"] is None and math.isnan(ev["link_use"])


def test_the_inventory_rate_serves_when_no_limit_row():
    rows = [r for r in _rows("cl1", 190 * MBIT, 0.0, 200 * MBIT) if r["metric"] != "link.limit_bytes"]
    rd = _rd(rows, _manifest())
    ev = _ev(190 * MBIT)
    assert _verdict(rd, ev)[0] == "network"
    assert ev["links"]["cl1"]["limit_source"] == "inventory link.rate"


def test_a_host_of_another_run_never_counts():
    """The links device may see every emulated host up on the machine: only this run's
    client hosts (the manifest's inventory) are evidence."""
    rows = _rows("cl1", 50 * MBIT, 0.0, 200 * MBIT) + _rows("other9", 99 * MBIT, 0.0, 100 * MBIT)
    ev = _ev(50 * MBIT)
    verdict, _ = _verdict(_rd(rows, _manifest()), ev)
    assert verdict != "network" and set(ev["links"]) == {"cl1"}


def test_no_inventory_no_link_evidence():
    rd = _rd(_rows("cl1", 199 * MBIT, 0.0, 200 * MBIT), {})
    ev = _ev(199 * MBIT)
    _verdict(rd, ev)
    assert "links" not in ev and "link_use" not in ev


def test_the_gateway_hosts_link_is_not_a_client_link():
    rows = _rows("gw1", 199 * MBIT, 0.0, 200 * MBIT, roles="gateway,redirector")
    man = _manifest()
    man["hosts"]["hosts"]["gw1"]["link"] = {"rate": "200mbit", "rate_bits_per_s": 200e6}
    assert _verdict(_rd(rows, man), _ev(199 * MBIT))[0] != "network"
