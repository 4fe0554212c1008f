"""Telemetry samples as the analysis needs them: a few named quantities per cell and window.

The SAMPLE table is long-format (cell_id, wall, sampler, metric, value, labels). Names are the
telemetry's (xcbench/telemetry/{ceph,gateway,host}.py). Quantities (values in the unit on the
left):

  gateway_cores           cores busy in the gateway's processes, summed over pids
                          proc.cpu_seconds.rate [pid, name]
  host_busy               fraction of the host's CPU busy (0..1)
                          cpu.busy [cpu="all"]
  pool_write_ops          client write ops/s of the cell's pool
                          pool.client_write_ops_per_s [pool]
  pool_write_bytes_per_s  client write bytes/s of the cell's pool
                          pool.client_write_bytes_per_s [pool]
  pool_read_ops           client read ops/s of the cell's pool (pool_read_bytes_per_s: bytes/s)
                          pool.client_read_ops_per_s [pool]  (pool.client_read_bytes_per_s)
  pool_raw                raw bytes the pool uses on the OSDs (`df detail` bytes_used)
                          pool.bytes_used [pool]
  pool_stored             logical bytes stored in the pool (`df detail` stored)
                          pool.stored [pool]
  gateway_in_bytes_per_s  bytes/s the gateway received from clients
                          xrd.link.in.rate [gateway, pgm, pid]
  net_rx_bytes_per_s      bytes/s received by the host's interfaces
                          net.rx_bytes.rate [iface]

Labels are matched as a subset: {"pool": "xcb-ec2-1"} matches a row labelled with that pool
whatever else it carries.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from xcbench.figures.stats import mean_rel_se


@dataclass(frozen=True)
class Source:
    metric: str
    labels: tuple[tuple[str, str], ...] = ()  # fixed labels; ("pool", "{pool}") is filled in
    agg: str = "sum"  # across label sets at one wall time: sum (per-process) | mean (per-cpu)


QUANTITIES: dict[str, tuple[Source, ...]] = {
    "gateway_cores": (Source("proc.cpu_seconds.rate"),),
    "host_busy": (Source("cpu.busy", (("cpu", "all"),), "mean"),),
    "pool_write_ops": (Source("pool.client_write_ops_per_s", (("pool", "{pool}"),)),),
    "pool_write_bytes_per_s": (Source("pool.client_write_bytes_per_s", (("pool", "{pool}"),)),),
    "pool_read_ops": (Source("pool.client_read_ops_per_s", (("pool", "{pool}"),)),),
    "pool_read_bytes_per_s": (Source("pool.client_read_bytes_per_s", (("pool", "{pool}"),)),),
    "pool_raw": (Source("pool.bytes_used", (("pool", "{pool}"),)),),
    "pool_stored": (Source("pool.stored", (("pool", "{pool}"),)),),
    "gateway_in_bytes_per_s": (Source("xrd.link.in.rate"),),
    "net_rx_bytes_per_s": (Source("net.rx_bytes.rate"),),
}
UNITS = {"gateway_cores": "cores", "host_busy": "fraction", "pool_write_ops": "op/s",
         "pool_write_bytes_per_s": "B/s", "pool_read_ops": "op/s", "pool_read_bytes_per_s": "B/s",
         "pool_raw": "B", "pool_stored": "B", "gateway_in_bytes_per_s": "B/s",
         "net_rx_bytes_per_s": "B/s"}


def labels_query(labels: dict[str, str]) -> str:
    """A pandas-query fragment matching JSON-text labels that contain these pairs."""
    return " & ".join(f"labels.str.contains({json.dumps(f'{json.dumps(k)}: {json.dumps(v)}')}, regex=False)"
                      for k, v in labels.items())


class SampleIndex:
    """Per (cell, metric) access to a SAMPLE table without rescanning it (1 M rows: ~1 s)."""

    def __init__(self, samples: pd.DataFrame):
        need = ["cell_id", "wall", "metric", "value", "labels"]
        df = samples[[c for c in need if c in samples.columns]].copy()
        for c in need:
            if c not in df:
                df[c] = pd.NA
        codes, uniques = pd.factorize(df["labels"].fillna("{}").astype(str))
        self._labels = [self._parse(u) for u in uniques]
        # plain numpy columns: taking rows out of Arrow-backed string columns is slow
        self._wall = pd.to_numeric(df["wall"], errors="coerce").to_numpy(dtype=float)
        self._value = pd.to_numeric(df["value"], errors="coerce").to_numpy(dtype=float)
        self._lab = codes
        self.df = df
        self._groups = df.groupby(["cell_id", "metric"], sort=False).indices if len(df) else {}
        self._cache: dict = {}

    @staticmethod
    def _parse(text: str) -> dict:
        try:
            v = json.loads(text)
            return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else {}
        except (json.JSONDecodeError, TypeError):
            return {}

    def metrics(self, cell_id: str | None = None) -> set[str]:
        return {m for (c, m) in self._groups if cell_id is None or c == cell_id}

    def resolve(self, cell_id: str, quantity: str, pool: str | None = None
                ) -> tuple[Source, dict[str, str]] | None:
        """The first source of ``quantity`` that has rows for this cell, and its labels."""
        for src in QUANTITIES[quantity]:
            labels = {k: v.format(pool=pool) for k, v in src.labels}
            if "{pool}" in "".join(v for _, v in src.labels) and not pool:
                continue
            if (cell_id, src.metric) in self._groups:
                return src, labels
        return None

    def series(self, cell_id: str, quantity: str, pool: str | None = None) -> pd.DataFrame:
        """wall, value (in the quantity's unit), one row per sampling time, sorted by wall."""
        key = (cell_id, quantity, pool)
        if key in self._cache:
            return self._cache[key]
        out = pd.DataFrame({"wall": pd.Series(dtype=float), "value": pd.Series(dtype=float)})
        found = self.resolve(cell_id, quantity, pool)
        if found:
            src, labels = found
            idx = self._groups[(cell_id, src.metric)]
            ok = [i for i, lab in enumerate(self._labels)
                  if all(lab.get(k) == v for k, v in labels.items())]
            idx = idx[np.isin(self._lab[idx], ok)]
            g = pd.DataFrame({"wall": self._wall[idx], "value": self._value[idx]})
            out = g.groupby("wall", sort=True)["value"].agg(src.agg).reset_index()
        self._cache[key] = out
        return out

    def by_label(self, cell_id: str, metric: str, key: str) -> dict[str, pd.DataFrame]:
        """{label value of ``key``: rows (wall, value, labels dict) sorted by wall} of one metric,
        e.g. by_label(cid, "role_cpu_cores", "role") -> {"gateway": ..., "client": ...}."""
        idx = self._groups.get((cell_id, metric)) if self._groups else None
        if idx is None or not len(idx):
            return {}
        labs = [self._labels[i] for i in self._lab[idx]]
        df = pd.DataFrame({"wall": self._wall[idx], "value": self._value[idx], "labels": labs})
        df["_k"] = [lab.get(key) for lab in labs]
        return {k: g.drop(columns="_k").sort_values("wall", kind="stable").reset_index(drop=True)
                for k, g in df.groupby("_k", sort=True)}

    def window_mean(self, cell_id: str, quantity: str, windows, pool: str | None = None) -> float:
        """Mean of the quantity over the samples inside any of ``windows`` [(wall0, wall1), ...]."""
        v = self._in_windows(cell_id, quantity, windows, pool)
        return float(v.mean()) if v.size else math.nan

    def window_rel_se(self, cell_id: str, quantity: str, windows, pool: str | None = None) -> float:
        """Relative standard error of that mean (analysis.verdicts.borderline): the samples are
        autocorrelated (host CPU and op/s sampled every 0.5-1 s), so their spread is over the
        square root of their effective number (AR(1), figures.stats.mean_rel_se, as the level
        rates and the fio probes); NaN with fewer than three samples or a zero mean."""
        return mean_rel_se(self._in_windows(cell_id, quantity, windows, pool))

    def _in_windows(self, cell_id: str, quantity: str, windows, pool: str | None) -> np.ndarray:
        s = self.series(cell_id, quantity, pool)
        if s.empty:
            return np.zeros(0)
        w = s["wall"].to_numpy()
        keep = np.zeros(w.size, dtype=bool)
        for w0, w1 in windows:
            keep[np.searchsorted(w, w0, side="left"):np.searchsorted(w, w1, side="right")] = True
        return s["value"].to_numpy(dtype=float)[keep]

    def positive_increase(self, cell_id: str, quantity: str, pool: str | None = None) -> float:
        """Sum of the positive steps of a gauge over the cell (bytes written, ignoring deletes)."""
        s = self.series(cell_id, quantity, pool)
        if len(s) < 2:
            return math.nan
        d = np.diff(s["value"].to_numpy(dtype=float))
        return float(d[d > 0].sum())

    def query(self, cell_id: str, quantity: str, pool: str | None = None, windows=()) -> str:
        """The pandas query selecting the SAMPLE rows behind a figure (for source notes)."""
        found = self.resolve(cell_id, quantity, pool)
        if not found:
            return ""
        src, labels = found
        q = [f"cell_id == {json.dumps(cell_id)}", f"metric == {json.dumps(src.metric)}"]
        if labels:
            q.append(labels_query(labels))
        if windows:
            q.append("(" + " | ".join(f"(wall >= {a!r} & wall <= {b!r})" for a, b in windows) + ")")
        return " & ".join(q)
