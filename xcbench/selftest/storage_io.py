"""storage-bandwidth and storage-iops told apart: the OSDs' disk writes throttled (cgroup v1
blkio, xcbench.system.blkio) in bytes/s or in IOs/s, on the device their BlueStore block files are on.

- **storage-bandwidth**: large files (the self-test's size) through XrdCeph on the replicated
  pool; the OSDs' device write bytes/s throttled to ``fraction`` x the least steady rate the
  uncapped cell moved (the device sees at least the logical bytes, so it binds);
- **storage-iops**: small files (``SMALL``) through XrdCeph on the same pool; the device's write
  IOs/s throttled to ``fraction`` x the least pool write op/s the uncapped cell made (each client
  op costs the device at least one IO).

Both are rados cells: their fio probe (ioengine=rados) goes straight to the throttled OSDs, so
its figures are the ceilings under the throttle, as a run would have them (a buffered probe on
a ceph-fuse mount would measure the page cache). The capping hooks (capping.CapHooks) count the OSDs' device
writes (their blkio group: only the OSDs are in it) during each write job of the probe and
over each level, so the IOPS rule holds device IOs against device IOs (analysis.verdicts.rules): a
chain op (XrdCeph's lock/xattr ops, a 256 KiB write) costs the device another number of IOs
than fio's 4 KiB write, and compared in op counts the chain "beat" the probe. The expected answer comes from the device,
not from the rules: the group's write IOs and bytes per second over each level (blkio
counters) against the throttle. At >= MADE of it the throttle held the device and the verdict
must name its kind; below, the bottleneck was not made (the level is run once more, then
counts as a mismatch). Where the OSDs are not this host's, there is no blkio v1 hierarchy, or
their block files are on no block device, the scenarios are "not run" with the reason.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from xcbench.analysis.verdicts.rules import NEAR, VERDICTS
from xcbench.ceph.cluster import Cluster
from xcbench.selftest.registry import CellDef, Scenario, register, register_cell
from xcbench.system.blkio import device_of
from xcbench.system.blkio import why_not as blkio_why_not

SMALL = "256K"
MADE = 0.7  # the device's writes/s at >= this share of the throttle: the throttle held it
KIND = {"bandwidth": "storage-bandwidth", "iops": "storage-iops"}


def block_file(cluster: Cluster | None) -> Path | None:
    if cluster is None or not cluster.embedded or cluster.state_dir is None:
        return None
    return Path(cluster.state_dir) / "osd.0" / "block"


def why_not(cluster: Cluster | None) -> str | None:
    """Why the OSDs' device writes cannot be throttled here (None: they can)."""
    path = block_file(cluster)
    if path is None:
        return "the OSDs are not this host's embedded mini cluster"
    if not path.exists():
        return f"no BlueStore block file at {path} (memstore?)"
    return blkio_why_not(path)


def device(cluster: Cluster | None) -> str:
    path = block_file(cluster)
    assert path is not None
    return device_of(path)


def _least(evs: list[dict[str, Any]], key: str) -> float | None:
    vals = [float(e[key]) for e in evs if isinstance(e.get(key), (int, float)) and math.isfinite(e[key])]
    return min(vals) if vals and len(vals) == len(evs) else None


def least_of(s: Scenario, uncapped: list[dict[str, Any]]) -> float | None:
    """The least rate (bandwidth: B/s) or pool write op/s (iops) of the uncapped cell's levels."""
    return _least(uncapped, "rate" if s.io == "bandwidth" else "pool_write_ops")


def limit_of(s: Scenario, uncapped: list[dict[str, Any]], fraction: float) -> float | None:
    """The throttle: fraction x the least rate (bandwidth) or pool write op/s (iops) uncapped."""
    least = least_of(s, uncapped)
    if least is None or least <= 0:
        return None
    return max(1.0, round(fraction * least))


def add_device(ev: dict[str, Any], s: Scenario, limit: float, figures: dict[str, float] | None) -> None:
    """The device's measured writes/s against the throttle, into the level's evidence."""
    if not figures:
        ev["osd_device"] = {"io": s.io, "limit": limit, "note": "no device counters for this level"}
        return
    got = figures["bytes_per_s"] if s.io == "bandwidth" else figures["iops"]
    ev["osd_device"] = {"io": s.io, "limit": limit, **figures, "use": got / limit if limit else None}


def at_limit(ev: dict[str, Any]) -> bool:
    use = (ev.get("osd_device") or {}).get("use")
    return isinstance(use, (int, float)) and use >= MADE


def _text(d: dict[str, Any]) -> str:
    if d.get("io") == "bandwidth":
        return (f"the OSDs' device writes {d['bytes_per_s'] / 1e6:.1f} MB/s of the {d['limit'] / 1e6:.1f} MB/s "
                f"throttle ({d['use'] * 100:.0f} %; {d['iops']:.0f} IO/s)")
    return (f"the OSDs' device writes {d['iops']:.0f} IO/s of the {d['limit']:.0f} IO/s throttle "
            f"({d['use'] * 100:.0f} %; {d['bytes_per_s'] / 1e6:.1f} MB/s)")


def expect(s: Scenario, ev: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    d = ev.get("osd_device") or {}
    if not isinstance(d.get("use"), (int, float)):
        return s.expected, d.get("note", "the uncapped run only: no throttle")
    if d["use"] >= MADE:
        return (KIND[s.io or "bandwidth"],), _text(d) + ": the throttle held the device"
    return s.expected, _text(d) + f": below {MADE * 100:.0f} % of it, the bottleneck was not made"


def add_twins(got: dict[tuple[str, int], dict[str, Any]]) -> None:
    """Into an EC cell's evidence: its replicated twin's measured raw/logical bytes and device
    figures at the same level (the same capped run holds both)."""
    for (_cid, lv), v in got.items():
        ev = v["evidence"]
        twin = got.get((ev.get("rep_cell"), lv)) if ev.get("rep_cell") else None
        if twin is not None:
            ev["rep_raw_per_logical"] = twin["evidence"].get("raw_per_logical")
            ev["rep_osd_device"] = twin["evidence"].get("osd_device")


def ec_expect(s: Scenario, ev: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """The EC cell against its replicated twin, both under one device-bytes throttle: the
    device's bytes are the ceiling, so the logical rate goes as 1 / raw-per-logical, and the
    EC cell is predicted at raw_rep / raw_ec of its twin, from the raw bytes the pools
    measured. ec-overhead where that is <= NEAR (and both devices held at the throttle);
    where the raw bytes predict no cost, ec-overhead must NOT be named. The twin itself is a
    storage-bandwidth cell like any other."""
    if not ev.get("rep_cell"):
        return expect(s, ev)
    raw, rep = ev.get("raw_per_logical"), ev.get("rep_raw_per_logical")
    if not (isinstance(raw, (int, float)) and isinstance(rep, (int, float))
            and all(math.isfinite(v) and v > 0 for v in (raw, rep))):
        return s.expected, f"raw/logical not measured (EC {raw}, replicated {rep}): no prediction"
    held = at_limit(ev) and at_limit({"osd_device": ev.get("rep_osd_device")})
    pred = rep / raw
    got = ev.get("ec_ratio")
    words = (f"raw/logical EC {raw:.2f}, replicated {rep:.2f}: predicted EC at {pred * 100:.0f} % of "
             f"its twin" + (f" (measured {got * 100:.0f} %)" if isinstance(got, (int, float)) else ""))
    if not held:
        return s.expected, words + "; a device was below its throttle: the bottleneck was not made"
    if pred <= NEAR:
        return ("ec-overhead",), words + ", both devices at the throttle"
    return tuple(v for v in VERDICTS if v != "ec-overhead"), words + ": no EC cost, must not be named"


register_cell(CellDef("rados-small", "rados", (("layouts", [{"stripe_unit": "4M", "stripe_count": 1,
                                                             "object_size": "4M"}]),
                                               ("pools", ["rep1"])), "rep1", file_size=SMALL))
register(Scenario("storage-bandwidth", "the OSDs' disk writes throttled in bytes/s (blkio), large files "
                  "through XrdCeph", ("storage-bandwidth",), ("rados-rep",), cap="osd", io="bandwidth",
                  expect=expect))
register(Scenario("storage-iops", f"the OSDs' disk writes throttled in IOs/s (blkio), {SMALL} files "
                  "through XrdCeph", ("storage-iops",), ("rados-small",), cap="osd", io="iops",
                  expect=expect))
register_cell(CellDef("rados-ec", "rados", (("layouts", [{"stripe_unit": "4M", "stripe_count": 1,
                                                          "object_size": "4M"}]),
                                            ("pools", ["ec2+1"])), "ec2+1", with_=("rados-rep",)))
register(Scenario("ec-overhead", "EC 2+1 and its replicated twin (XrdCeph, same layout, same OSDs) "
                  "under one throttle of the OSDs' device write bytes/s: the expected EC cost from "
                  "the raw bytes each pool measured", ("ec-overhead", "storage-bandwidth"),
                  ("rados-ec", "rados-rep"), cap="osd", io="bandwidth", expect=ec_expect))
