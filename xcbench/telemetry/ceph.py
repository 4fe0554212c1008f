"""CephSampler: what the cluster did, from librados mon commands (and OSD admin sockets if local).

Metrics (labels in brackets):
  pool.client_read_bytes_per_s pool.client_write_bytes_per_s pool.client_read_ops_per_s
  pool.client_write_ops_per_s pool.recovering_bytes_per_s  [pool]   mgr's rates (`osd pool stats`)
  pool.stored pool.bytes_used pool.objects pool.rd pool.rd_bytes pool.wr pool.wr_bytes  [pool]
      `df detail`: stored = logical bytes, bytes_used = raw bytes on the OSDs; rd/wr (ops) and
      rd_bytes/wr_bytes are cumulative client counters - a difference of wr_bytes is the bytes
      clients wrote, exactly, once the PG stats have reached the mgr (a few seconds).
  pool.raw_per_stored  [pool]  bytes_used / stored: ~1.5 for EC 2+1, ~size for replicated
  cluster.total_bytes cluster.total_used_raw_bytes
  osd.commit_latency_ms osd.apply_latency_ms  [osd]   (`osd perf`)
  cluster.health  [status, checks]   0 OK, 1 WARN, 2 ERR
  pg.total, pg.count [state]
  osd.perf.<logger>.<counter>  [osd]   admin socket `perf dump` of OSDs running on this host;
      counters as reported, latencies as the mean over the interval (seconds);
      bluestore_buffer_hit_bytes + bluestore_buffer_miss_bytes = bytes the object store read
      (with EC, the k shards of a read): analysis.verdicts.amplification's read amplification

The sampler keeps its own librados handle with short timeouts, so a cluster that stops
answering costs one timeout and then a back-off, never a hung telemetry loop.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from pathlib import Path
from typing import Any

from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError
from xcbench.telemetry.base import SampleGap, Sampler

HEALTH = {"HEALTH_OK": 0, "HEALTH_WARN": 1, "HEALTH_ERR": 2}
POOL_RATES = {"read_bytes_sec": "client_read_bytes_per_s", "write_bytes_sec": "client_write_bytes_per_s",
              "read_op_per_sec": "client_read_ops_per_s", "write_op_per_sec": "client_write_ops_per_s"}
DF_FIELDS = ("stored", "bytes_used", "objects", "rd", "rd_bytes", "wr", "wr_bytes")
# OSD perf counters worth a row each second: client ops/bytes, op latencies, bluestore commit.
OSD_COUNTERS = {
    "osd": ("op", "op_r", "op_w", "op_rw", "op_in_bytes", "op_out_bytes", "op_w_in_bytes",
            "op_r_out_bytes", "op_wip", "op_latency", "op_r_latency", "op_w_latency",
            "op_w_process_latency", "op_before_queue_op_lat", "subop_w", "subop_w_in_bytes",
            "subop_w_latency"),
    "bluestore": ("commit_lat", "kv_flush_lat", "kv_commit_lat", "state_aio_wait_lat",
                  "bluestore_allocated", "bluestore_stored",
                  # every object-store read (EC shard reads too): cache hits + device reads
                  "bluestore_buffer_hit_bytes", "bluestore_buffer_miss_bytes"),
}


def asok_command(path: str | Path, prefix: str, timeout: float = 2.0, **args: Any) -> Any:
    """One command on a Ceph daemon's admin socket (what `ceph daemon X ...` does, no CLI)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(path))
        s.sendall(json.dumps({"prefix": prefix, "format": "json", **args}).encode() + b"\0")
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                raise XcbError(f"{path}: admin socket closed without an answer to {prefix!r}")
            head += chunk
        (n,) = struct.unpack(">I", head)
        buf = bytearray()
        while len(buf) < n:
            chunk = s.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                break
            buf += chunk
    finally:
        s.close()
    return json.loads(bytes(buf) or b"null")


class CephSampler(Sampler):
    name = "ceph"
    min_interval = 1.0  # the mgr's rates and PG stats change every few seconds: no use polling faster

    def __init__(self, cluster: Cluster, pools: list[str] | None = None, *, osd_perf: bool | None = None,
                 timeout: float = 3.0, max_backoff: float = 60.0):
        self.cluster = cluster
        self.pools = list(pools) if pools else None
        self.osd_perf = osd_perf  # None: when OSD admin sockets are found on this host
        self.timeout = timeout
        self.max_backoff = max_backoff
        self._rados: Any = None
        self._retry_at = 0.0
        self._backoff = 0.0
        self._last_error = ""
        self._asoks: dict[int, Path] | None = None
        self._lat: dict[tuple, tuple[float, float]] = {}

    # -- connection ----------------------------------------------------------------------------
    def _connect(self):
        import rados  # python3-rados (Debian); imported late so the rest works without Ceph

        secs = str(max(1, round(self.timeout)))  # whole seconds: Ceph rejects "3.0"
        conf = {"client_mount_timeout": secs, "rados_mon_op_timeout": secs, "rados_osd_op_timeout": secs}
        keyring = getattr(self.cluster, "keyring", None)
        if keyring:
            conf["keyring"] = str(keyring)
        r = rados.Rados(conffile=str(self.cluster.conf), rados_id=getattr(self.cluster, "ceph_id", "admin"),
                        conf=conf)
        try:
            r.connect(timeout=int(max(1, self.timeout)))
        except Exception:
            r.shutdown()
            raise
        return r

    def _command(self, prefix: str, **args: Any) -> Any:
        if not hasattr(self.cluster, "conf"):  # a cluster handle without a conf: use its own call
            return self.cluster.mon_command(prefix, **args)
        if self._rados is None:
            self._rados = self._connect()
        cmd = json.dumps({"prefix": prefix, "format": "json", **args})
        ret, out, err = self._rados.mon_command(cmd, b"")
        if ret != 0:
            raise XcbError(f"ceph {prefix}: error {ret}: {err.strip() or 'no message'}")
        return json.loads(out) if out else None

    def stop(self) -> None:
        if self._rados is not None:
            try:
                self._rados.shutdown()
            finally:
                self._rados = None

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, wall: float, mono: float) -> list[dict]:
        now = time.monotonic()
        if now < self._retry_at:
            raise XcbError(f"ceph: not sampled, retrying in {self._retry_at - now:.0f} s "
                           f"after: {self._last_error}")
        rows: list[dict] = []
        try:
            self._pool_stats(wall, mono, rows)
            self._df(wall, mono, rows)
            self._osd_perf(wall, mono, rows)
            self._health(wall, mono, rows)
        except Exception as e:  # noqa: BLE001 - back off; the runner records the gap
            self._last_error = " ".join(f"{type(e).__name__}: {e}".split())
            self._backoff = min(self.max_backoff, max(2 * self._backoff, 5.0))
            self._retry_at = time.monotonic() + self._backoff
            if self._rados is not None and isinstance(e, OSError):
                self.stop()  # a timed-out handle is reconnected after the back-off
            raise SampleGap(self._last_error, rows) from e
        self._backoff = 0.0
        problems = self._admin_sockets(wall, mono, rows)
        if problems:
            raise SampleGap("; ".join(problems), rows)
        return rows

    def _want(self, pool: str) -> bool:
        return self.pools is None or pool in self.pools

    def _pool_stats(self, wall: float, mono: float, rows: list[dict]) -> None:
        for p in self._command("osd pool stats") or []:
            name = p.get("pool_name", "")
            if not self._want(name):
                continue
            labels = {"pool": name}
            io = p.get("client_io_rate") or {}  # keys are absent when zero
            for key, metric in POOL_RATES.items():
                rows.append(self.row(wall, mono, f"pool.{metric}", io.get(key, 0), labels))
            rec = (p.get("recovery_rate") or {}).get("recovering_bytes_per_sec", 0)
            rows.append(self.row(wall, mono, "pool.recovering_bytes_per_s", rec, labels))

    def _df(self, wall: float, mono: float, rows: list[dict]) -> None:
        df = self._command("df", detail="detail") or {}
        st = df.get("stats", {})
        for key in ("total_bytes", "total_used_raw_bytes"):
            if key in st:
                rows.append(self.row(wall, mono, f"cluster.{key}", st[key]))
        for p in df.get("pools", []):
            if not self._want(p.get("name", "")):
                continue
            labels = {"pool": p["name"]}
            ps = p.get("stats", {})
            for key in DF_FIELDS:
                if key in ps:
                    rows.append(self.row(wall, mono, f"pool.{key}", ps[key], labels))
            if ps.get("stored"):
                rows.append(self.row(wall, mono, "pool.raw_per_stored",
                                     ps.get("bytes_used", 0) / ps["stored"], labels))

    def _osd_perf(self, wall: float, mono: float, rows: list[dict]) -> None:
        perf = self._command("osd perf") or {}
        infos = perf.get("osdstats", perf).get("osd_perf_infos", [])
        for o in infos:
            labels = {"osd": o.get("id")}
            ps = o.get("perf_stats", {})
            for key in ("commit_latency_ms", "apply_latency_ms"):
                if key in ps:
                    rows.append(self.row(wall, mono, f"osd.{key}", ps[key], labels))

    def _health(self, wall: float, mono: float, rows: list[dict]) -> None:
        h = self._command("health") or {}
        status = h.get("status", "")
        checks = ",".join(sorted(h.get("checks", {})))
        rows.append(self.row(wall, mono, "cluster.health", HEALTH.get(status, 3),
                             {"status": status, "checks": checks}))
        pg = (self._command("pg stat") or {})
        summary = pg.get("pg_summary", pg)
        total = summary.get("num_pgs")
        if total is not None:
            rows.append(self.row(wall, mono, "pg.total", total))
        for s in summary.get("num_pg_by_state", []):
            rows.append(self.row(wall, mono, "pg.count", s.get("num", 0), {"state": s.get("name", "")}))

    # -- admin sockets of local OSDs -----------------------------------------------------------
    def local_osd_sockets(self) -> dict[int, Path]:
        """{osd id: admin socket path} for OSDs whose socket exists on this host."""
        import rados

        out: dict[int, Path] = {}
        conf = getattr(self.cluster, "conf", None)
        if conf is None:
            return out
        n = 0
        try:
            n = int(self.cluster.num_osds())
        except Exception:  # noqa: BLE001 - without a count, probe the first few ids
            n = 16
        for osd in range(n):
            r = rados.Rados(conffile=str(conf), name=f"osd.{osd}")  # expands $run_dir, $name...
            try:
                path = Path(r.conf_get("admin_socket"))
            finally:
                r.shutdown()
            if path.is_socket():
                out[osd] = path
        return out

    def _admin_sockets(self, wall: float, mono: float, rows: list[dict]) -> list[str]:
        """Perf counters of local OSDs into ``rows``; an OSD whose socket fails is dropped (one gap)."""
        if self.osd_perf is False:
            return []
        if self._asoks is None:
            self._asoks = self.local_osd_sockets()
        problems = []
        for osd, path in list(self._asoks.items()):
            try:
                dumps = {logger: asok_command(path, "perf dump", timeout=self.timeout, logger=logger) or {}
                         for logger in OSD_COUNTERS}
            except Exception as e:  # noqa: BLE001 - an OSD restarting, a socket we may not read
                del self._asoks[osd]
                problems.append(f"osd.{osd} admin socket {path}: {type(e).__name__}: {e}; "
                                "its perf counters are no longer sampled")
                continue
            labels = {"osd": osd}
            for logger, names in OSD_COUNTERS.items():
                counters = dumps[logger].get(logger, {})
                for name in names:
                    v = counters.get(name)
                    metric = f"osd.perf.{logger}.{name}"
                    if isinstance(v, dict):  # a latency: {avgcount, sum} -> mean over the interval
                        mean = self._mean((osd, metric), v.get("avgcount", 0), v.get("sum", 0.0))
                        if mean is not None:
                            rows.append(self.row(wall, mono, metric, mean, labels))
                    elif isinstance(v, (int, float)):
                        rows.append(self.row(wall, mono, metric, v, labels))
        return problems

    def _mean(self, key: tuple, count: float, total: float) -> float | None:
        prev = self._lat.get(key)
        self._lat[key] = (count, total)
        if prev is None or count <= prev[0]:
            return None
        return (total - prev[1]) / (count - prev[0])
