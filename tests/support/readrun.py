"""Constructed runs with reads: tests.support.synthrun's run, then some cells turned into read or
mixed cells the way the read campaigns record them (TRANSFER/CAMPAIGN ``direction``, timeline
``bytes_read``/``bytes_written``), with fio read probes, pool read op/s, BlueStore read counters
and an iperf3 baseline in both directions as asked.

    path, ids = make_read_run(tmp_path, cells, directions={1: "read"}, read_probe={1: (bw, iops)})
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from tests.support.synthrun import SynthCell, make_run

OSD_METRICS = ("osd.perf.bluestore.bluestore_buffer_hit_bytes",
               "osd.perf.bluestore.bluestore_buffer_miss_bytes")


def _rw(p: Path, table: str) -> pd.DataFrame:
    return pd.read_parquet(p / f"{table}.parquet")


def make_read_run(store, cells: list[SynthCell], *, directions: dict[int, str],
                  read_share: float = 0.3, read_probe: dict[int, tuple[float, float]] | None = None,
                  write_probe: dict[int, float] | None = None, osd_amp: dict[int, float] | None = None,
                  network_read: float | None = None, network: float = 40e9 / 8,
                  ) -> tuple[Path, list[str]]:
    """``directions``: {cell index: read | mixed}; ``read_probe``: {index: (read bw, randread
    IOPS)}; ``write_probe``: {index: write bw} replacing the synthetic one; ``osd_amp``: {index:
    OSD bytes read per logical byte} (BlueStore counters on 3 OSDs); ``network_read``: B/s of an
    iperf3 -R row (the synthetic baseline row becomes the write direction)."""
    path, _ = make_run(store, cells, network=network)
    ids = [sc.cell().id for sc in cells]
    tr, tl, cp = _rw(path, "transfers"), _rw(path, "timeline"), _rw(path, "campaigns")
    pr, sm, bl = _rw(path, "probes"), _rw(path, "samples"), _rw(path, "baseline")
    tr["direction"], cp["direction"] = "write", "write"
    tl["bytes_read"], tl["bytes_written"] = 0.0, tl["bytes"]
    for i, d in directions.items():
        cid = ids[i]
        cp.loc[cp["cell_id"] == cid, "direction"] = d
        cp.loc[cp["cell_id"] == cid, "settings"] = json.dumps(
            {"access": {"pattern": "random", "size": 65536, "count": 16}})
        mine = tr["cell_id"] == cid
        if d == "read":
            tr.loc[mine, "direction"] = "read"
            sel = tl["cell_id"] == cid
            tl.loc[sel, "bytes_read"], tl.loc[sel, "bytes_written"] = tl.loc[sel, "bytes"], 0.0
        else:  # mixed: every third transfer reads; the buckets split by read_share
            idx = tr.index[mine]
            tr.loc[idx[::3], "direction"] = "read"
            sel = tl["cell_id"] == cid
            tl.loc[sel, "bytes_read"] = tl.loc[sel, "bytes"] * read_share
            tl.loc[sel, "bytes_written"] = tl.loc[sel, "bytes"] * (1 - read_share)
    for i, bw in (write_probe or {}).items():
        sel = (pr["cell_id"] == ids[i]) & (pr["rw"] == "write")
        pr.loc[sel, "bw"], pr.loc[sel, "iops"] = bw, bw / (4 << 20)
    for i in read_probe or {}:
        pr = pr[~((pr["cell_id"] == ids[i]) & (pr["rw"] == "read"))]
    rows = [pr]
    for i, (bw, iops) in (read_probe or {}).items():
        base = {c: None for c in pr.columns}
        base.update(cell_id=ids[i], host="127.0.0.1", iodepth=16, numjobs=1, lat_mean_us=500.0,
                    lat_p99_us=2000.0, runtime_s=10.0, errors=0)
        rows.append(pd.DataFrame([{**base, "job": "read", "rw": "read", "bs": "4M", "bw": bw,
                                   "iops": bw / (4 << 20)},
                                  {**base, "job": "randread", "rw": "randread", "bs": "64K",
                                   "bw": iops * 65536, "iops": iops}]))
    pr = pd.concat(rows, ignore_index=True)
    extra = []
    for i, amp in (osd_amp or {}).items():
        extra.append(_osd_counters(ids[i], tr, sm, amp))
    if network_read is not None:
        bl["direction"] = "write"
        bl = pd.concat([bl, bl.assign(direction="read", bits_per_second=network_read * 8)],
                       ignore_index=True)
    if extra:
        sm = pd.concat([sm, *extra], ignore_index=True)
    for name, df in (("transfers", tr), ("timeline", tl), ("campaigns", cp), ("probes", pr),
                     ("samples", sm), ("baseline", bl)):
        df.to_parquet(path / f"{name}.parquet", index=False)
    return path, ids


def _osd_counters(cid: str, tr: pd.DataFrame, sm: pd.DataFrame, amp: float) -> pd.DataFrame:
    """Cumulative BlueStore read counters of 3 OSDs: each read transfer's bytes x amp, spread
    over the OSDs (hits 1/4, misses 3/4), added at the transfer's finish."""
    walls = np.sort(sm.loc[sm["cell_id"] == cid, "wall"].unique())
    reads = tr[(tr["cell_id"] == cid) & (tr["direction"] == "read")]
    fin, moved = reads["finish_time"].to_numpy(), reads["transferred"].to_numpy(dtype=float)
    cum = np.array([moved[fin <= w].sum() for w in walls]) * amp
    out = []
    for osd in range(3):
        for metric, share in zip(OSD_METRICS, (0.25, 0.75), strict=True):
            out.append(pd.DataFrame({"cell_id": cid, "wall": walls, "mono": walls, "sampler": "ceph",
                                     "metric": metric, "value": 1e9 + cum * share / 3,
                                     "labels": json.dumps({"osd": osd})}))
    return pd.concat(out, ignore_index=True)
