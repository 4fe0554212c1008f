"""The IOPS ceiling in device IOs: where the storage device's write IOs were counted during the
IOPS probe and during the level, storage-iops compares those (like with like), not the chain's
client op/s with fio's 4 KiB op/s (a chain op costs the device another number of IOs)."""

from __future__ import annotations

import math

import pandas as pd

from xcbench.analysis.verdicts.attribution import NEAR, decide
from xcbench.analysis.verdicts.probes import level_device, probe_ceilings, probe_jobs

GIB = float(1 << 30)


def _ev(**kw):
    # the self-test's storage-iops level under a device IO/s throttle (figures of a real run:
    # 256 KiB files through XrdCeph, 220 pool op/s, fio 4 KiB randwrite 103 IOPS)
    ev = {"rate": 5.2e6, "concurrency": 16, "mode": "push", "cores": 2.0, "gateway_cores": 0.06,
          "cpu": 0.03, "host_busy": 0.4, "network_bytes_per_s": 2.8e9, "starved_frac": 0.0, "pool": "xcb-rep1",
          "pool_write_ops": 220.0, "fio_iops": 103.0, "fio_iops_job": "randwrite", "fio_bw": 33.5e6}
    ev.update(kw)
    return ev


def test_client_op_counts_beat_the_probe_and_drop_it():
    # without device counts: ops of another size than fio's 4 KiB job are not compared at all
    v, reason = decide(ev := _ev(fio_iops_bs=4096))
    assert v != "storage-iops" and "storage-iops" not in ev["utilisation"]
    assert "ops average 23 KiB, fio's IOPS job moves 4 KiB an IO: not the same IO size" in reason
    # an IOPS job of the chain's op size that the chain beats: that probe is no ceiling
    v, _ = decide(ev := _ev(fio_iops_bs=32 << 10))
    assert v != "storage-iops" and ev["not_ceilings"] == ["storage-iops"]


def test_device_ios_at_the_probes_device_ios_name_storage_iops():
    ev = _ev(device_write_iops=600.0, fio_device_iops=606.0)
    v, reason = decide(ev)
    assert v == "storage-iops"
    assert math.isclose(ev["utilisation"]["storage-iops"], 600 / 606)
    assert "600 write IO/s" in reason and "606 IO/s" in reason and "220 pool write op/s" in reason


def test_a_device_nearer_its_bytes_ceiling_is_held_by_bytes_not_ios():
    # an EC cell under a device-bytes throttle (a real self-test level): fio's 4 KiB job was
    # held by bytes too, so its IO/s are no IO-count ceiling; the bytes are the nearer limit
    ev = _ev(rate=9.0e6, pool_write_ops=60.0, fio_bw=10.8e6, device_write_iops=475.0, fio_device_iops=533.0,
             device_write_bytes_per_s=14.7e6, fio_device_bytes_per_s=15.4e6)
    v, _ = decide(ev)
    assert "storage-iops" not in ev["utilisation"] and v != "storage-iops"
    assert ev["device_use"]["bytes"] > ev["device_use"]["ios"] >= NEAR


def test_a_device_at_its_io_count_with_bytes_to_spare_is_storage_iops():
    ev = _ev(device_write_iops=309.0, fio_device_iops=310.0, device_write_bytes_per_s=3.3e6, fio_device_bytes_per_s=17.0e6)
    v, reason = decide(ev)
    assert v == "storage-iops" and "its bytes at 19 % of their ceiling" in reason


def test_device_ios_well_below_the_probes_are_no_iops_cap():
    # the same op counts, but the device does a third of the IOs fio made it do
    ev = _ev(device_write_iops=200.0, fio_device_iops=606.0)
    v, _ = decide(ev)
    assert v != "storage-iops" and ev["utilisation"]["storage-iops"] < NEAR


def test_large_ops_stay_bandwidth_bound_even_with_device_counts():
    # 16 MiB files: a mean op >= 1 MiB is held by bytes, whatever the device's IO count says
    ev = _ev(rate=60e6, pool_write_ops=20.0, fio_bw=62e6, device_write_iops=990.0, fio_device_iops=1000.0)
    v, _ = decide(ev)
    assert "storage-iops" not in ev["utilisation"] and v == "storage-bandwidth"


def test_read_points_keep_op_counts():
    ev = _ev(direction="read", pool_read_ops=100.0, device_write_iops=600.0, fio_device_iops=606.0,
             fio_iops_bs=64 << 10)
    decide(ev)
    assert math.isclose(ev["utilisation"]["storage-iops"], 100 / 103)


def _probes(dev, dev_b=(3e6, 17e6)):
    return pd.DataFrame([
        {"cell_id": "c1", "job": "randwrite", "host": "local", "rw": "randwrite", "bs": 4096, "iodepth": 4,
         "iops": 103.0, "bw": 421888, "lat_mean_us": 1.0, "lat_p99_us": 2.0, "device_write_iops": dev,
         "device_write_bytes_per_s": dev_b[0]},
        {"cell_id": "c1", "job": "write", "host": "local", "rw": "write", "bs": 4 << 20, "iodepth": 4,
         "iops": 8.0, "bw": 33554432, "lat_mean_us": 1.0, "lat_p99_us": 2.0, "device_write_iops": 40.0,
         "device_write_bytes_per_s": dev_b[1]},
    ])


def test_the_probe_ceiling_carries_the_iops_jobs_device_ios_and_their_source():
    pc = probe_ceilings(probe_jobs(_probes(606.0)), "r1")
    row = pc.loc["c1"]
    assert row["write_device_iops"] == 606.0 and row["write_iops_job"] == "randwrite"
    assert row["write_iops_bs"] == 4096  # the IOPS job's IO size, for like-with-like
    labelled = _probes(606.0).assign(bs=["4K", "4M"])  # runs stored before: fio's label
    assert probe_ceilings(probe_jobs(labelled), "r1").loc["c1", "write_iops_bs"] == 4096
    assert row["device_iops_source"]["column"] == "device_write_iops"
    assert "randwrite" in row["device_iops_source"]["query"]
    # the device's bytes ceiling: the most any write job made it write (here the bandwidth job)
    assert row["write_device_bytes_per_s"] == 17e6 and 'job == "write"' in row["device_bytes_per_s_source"]["query"]


def test_no_device_counts_no_device_ceiling():
    row = probe_ceilings(probe_jobs(_probes(math.nan, (math.nan, math.nan))), "r1").loc["c1"]
    assert math.isnan(row["write_device_iops"]) and row["device_iops_source"] is None
    assert math.isnan(row["write_device_bytes_per_s"]) and row["device_bytes_per_s_source"] is None
    # an old run's probes table has no such column at all
    old = probe_ceilings(probe_jobs(_probes(1.0).drop(columns=["device_write_iops", "device_write_bytes_per_s"])),
                         "r1").loc["c1"]
    assert math.isnan(old["write_device_iops"]) and math.isnan(old["write_device_bytes_per_s"])


def test_a_levels_device_writes_are_the_mean_of_its_repeats():
    cp = pd.DataFrame({"cell_id": ["c1", "c1", "c1", "c2"], "concurrency": [8, 8, 16, 8],
                       "device_write_iops": [590.0, 610.0, 700.0, 1.0],
                       "device_write_bytes_per_s": [1e6, 3e6, 5e6, 1.0]})
    ios, nb, src = level_device(cp, "r1", "c1", 8)
    assert (ios, nb) == (600.0, 2e6) and src is not None and src["table"] == "campaigns"
    assert math.isnan(level_device(cp.drop(columns="device_write_iops"), "r1", "c1", 8)[0])
    assert math.isnan(level_device(cp.assign(device_write_iops=None), "r1", "c1", 8)[0])
    assert math.isnan(level_device(cp.drop(columns="device_write_bytes_per_s"), "r1", "c1", 8)[1])
