"""The ``prometheus`` telemetry device: the cluster's hosts as a site's Prometheus sees them.

Per campaign level, once the level has ended, range queries over its window (step = the
Prometheus's scrape interval) read every host's CPU, NICs and disks (node_exporter) and every
OSD's and pool's rates (the ceph-mgr module); xcbench.telemetry.promqueries names them and maps
them to hosts and roles. The queries and the host mapping are written into the run
(``raw/prometheus/<cell>/``) so a reader can re-run them in Grafana.

A Prometheus that is down, slow, answers errors or lacks a metric costs a FINDING (one per
problem and cell) and at most one request timeout per level: the run goes on with what it has.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError
from xcbench.hosts.emulate import PEER, Record, records
from xcbench.store.findings import finding
from xcbench.system.userfiles import parse_yaml
from xcbench.telemetry import promqueries as pq
from xcbench.telemetry.base import Sampler, Sink
from xcbench.telemetry.promapi import PromClient, PromError

DEFAULT_STEP = 15.0  # Prometheus's own default scrape interval, when its config is not readable
MAX_POINTS = 10_000  # Prometheus refuses more than 11,000 points per series
# a server-announced scrape interval above this is not believed: Prometheus marks a series stale
# 5 minutes after its last scrape, so no working setup scrapes less often
MAX_ANNOUNCED_STEP = 300.0
# the wait for a level's last scrape: two scrapes of the common 1-minute interval; a later one
# costs its points, never the level (mounts, cgroups and sysctls are held meanwhile)
MAX_INGEST_WAIT = 121.0
# what a hostile or broken server's answer can raise while it is read as a Prometheus answer
BAD_ANSWER = (TypeError, KeyError, ValueError, IndexError, AttributeError, RecursionError)
LIVE_TIMEOUT = 1.0  # the progress view's line must not hold up the telemetry loop
# the live query's rows (taken on the telemetry tick, any time, for the progress view): the
# busiest storage host's NIC (use of its link, or bytes/s when its speed is unknown), busiest
# disk and CPU, labelled with its host and device
LIVE_PREFIX = "live."
LIVE_METRICS = ("live.storage_nic_use", "live.storage_nic_bytes_per_s", "live.storage_disk_busy",
                "live.storage_cpu_use")


class PrometheusSampler(Sampler):
    name = "prometheus"
    min_interval = 5.0  # only the light live query runs on the telemetry loop

    def __init__(self, api: PromClient, *, cell_id: str = "", sink: Sink | None = None,
                 cluster: Cluster | None = None, inventory: Any = None, step: float | None = None,
                 raw_dir: Path | None = None, clock=time.time, mono=time.monotonic):
        self.api, self.cell_id, self.sink = api, cell_id, sink
        self.cluster, self.inventory, self.step = cluster, inventory, step
        self.raw_dir, self.clock, self.mono = raw_dir, clock, mono
        self.hosts = pq.HostMap([])
        self.reported: set[str] = set()  # the problems already reported for this cell
        self.live_ok = True
        self.query_seconds: list[float] = []  # per level, for the cost benchmark
        self.live_seconds: list[float] = []  # per live query (telemetry tick)

    # ---- findings ----------------------------------------------------------------------
    def _finding(self, key: str, what: str, why: str, fix: str, severity: str = "warning") -> None:
        if key in self.reported or self.sink is None:
            return
        self.reported.add(key)
        try:
            self.sink("findings", [finding(self.cell_id, what, why, fix, severity)])
        except Exception:  # noqa: BLE001 - a finding lost must not stop the run
            pass

    def _unreachable(self, e: PromError) -> None:
        self._finding("unreachable", f"Prometheus {self.api.url} did not answer",
                      f"{e}; the storage hosts' CPU, NICs and disks are not measured for this "
                      "cell (the verdict falls back to the local telemetry and the probes)",
                      "check the URL, the auth file and that the server is up "
                      "(`curl URL/-/ready`)")

    # ---- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        try:
            if self.step is None:
                self.step = self._scrape_interval()
            self.hosts = self._host_map()
        except PromError as e:
            self._unreachable(e)
        except BAD_ANSWER as e:
            self._unreachable(PromError(f"not a Prometheus answer ({type(e).__name__})"))
        self.step = self.step or DEFAULT_STEP
        self._write_raw()

    def _scrape_interval(self) -> float:
        """The server's global scrape interval (its /api/v1/status/config)."""
        data = self.api.get("/api/v1/status/config", {})
        try:
            conf = parse_yaml(str((data or {}).get("yaml") or ""), "prometheus config") or {}
            step = parse_duration(conf.get("global", {}).get("scrape_interval", "1m"))
        except (XcbError, AttributeError, ValueError):
            return DEFAULT_STEP
        return min(step, MAX_ANNOUNCED_STEP)

    def _host_map(self) -> pq.HostMap:
        uname = self.api.query(pq.UNAME)
        if not uname:
            self._missing(pq.UNAME, "the hosts cannot be named (no node_exporter scraped?)")
        meta: list[dict] = []
        if self.cluster is not None:
            try:
                meta = list(self.cluster.mon_command("osd metadata"))
            except Exception:  # noqa: BLE001 - the mgr's series are the fallback
                meta = []
        series = [] if meta else self.api.query("ceph_osd_metadata")
        return pq.HostMap(uname, meta, self.inventory, series, emulated_hosts())

    def _missing(self, metric: str, consequence: str) -> None:
        self._finding(f"missing:{metric}", f"Prometheus {self.api.url} has no {metric}",
                      f"the query for it answered no series: {consequence}",
                      "scrape node_exporter (>= 0.16) on every storage host and enable the "
                      "ceph-mgr prometheus module (`ceph mgr module enable prometheus`)", "info")

    def _write_raw(self) -> None:
        if self.raw_dir is None:
            return
        try:
            self.raw_dir.mkdir(parents=True, exist_ok=True)
            lines = [f"# Prometheus {self.api.url}; step {self.step:g} s; each query runs as a "
                     "range query over each level's window (see levels.jsonl)"]
            lines += [f"{name}\t{pq.promql(name, self.step or DEFAULT_STEP)}" for name in pq.QUERIES]
            lines += [f"hosts\t{pq.UNAME}"]
            (self.raw_dir / "queries.promql").write_text("\n".join(lines) + "\n")
            (self.raw_dir / "hosts.json").write_text(json.dumps(self.hosts.describe(), indent=1) + "\n")
        except OSError:
            pass  # a full store loses the copy, not the measurement

    def sample(self, wall: float, mono: float) -> list[dict]:
        """One light instant query (every host's NICs, disks, CPU) for the progress view: the
        busiest storage host's figures (LIVE_METRICS). A failed query ends the live query for
        this cell: the level's range queries report the problem, and the loop is never held up
        by more than one LIVE_TIMEOUT."""
        if not self.live_ok:
            return []
        t0 = self.mono()
        try:
            ans = self.api.query(pq.live_promql(self.step or DEFAULT_STEP),
                                    timeout=min(self.api.timeout, LIVE_TIMEOUT))
            fig = pq.live_figures(ans, self.hosts)
        except (PromError, *BAD_ANSWER):
            self.live_ok = False
            return []
        finally:
            self.live_seconds.append(self.mono() - t0)
        return live_rows(self, wall, mono, fig) if fig else []

    def stop(self) -> None:
        self.api.close()

    # ---- the level's window --------------------------------------------------------------
    def level_end(self, start: float, end: float, info: dict[str, Any]) -> list[dict]:
        """Every query over [start, end] (wall seconds), once Prometheus has scraped past end."""
        step = self.step or DEFAULT_STEP
        t0 = self.mono()
        step = max(step, (end - start) / MAX_POINTS)
        try:
            self._wait_ingested(end, step)
            out: list[dict] = []
            offset = self.clock() - self.mono()
            for name in pq.QUERIES:
                answer = self.api.query_range(pq.promql(name, step), start, end, step)
                if not answer:
                    self._missing(pq.NEEDS[name], f"{name} is not measured")
                out += pq.rows(name, answer, self.hosts, offset, pq.range_seconds(step))
            out += pq.link_rows(self.hosts, [start, end], offset)
        except PromError as e:
            self._unreachable(e)
            return []
        except BAD_ANSWER as e:
            self._unreachable(PromError(f"not a Prometheus answer ({type(e).__name__})"))
            return []
        finally:
            self.query_seconds.append(self.mono() - t0)
        self._log_level(start, end, step, info)
        return out

    def _wait_ingested(self, end: float, step: float) -> None:
        """Until a scrape newer than ``end`` is in (the level's last seconds are then queryable);
        bounded by two scrape intervals: a late scrape costs its points, never the level."""
        deadline = self.mono() + min(2 * step + 1, MAX_INGEST_WAIT)
        while self.mono() < deadline:
            ans = self.api.query("max(timestamp(up))",
                                    timeout=max(0.1, min(self.api.timeout, deadline - self.mono())))
            if not ans or float(ans[0]["value"][1]) >= end:
                return  # in, or nothing scraped at all (the queries say what is missing)
            time.sleep(min(0.2, step / 4))

    def _log_level(self, start: float, end: float, step: float, info: dict[str, Any]) -> None:
        if self.raw_dir is None:
            return
        try:
            with open(self.raw_dir / "levels.jsonl", "a") as fh:
                fh.write(json.dumps({"start": start, "end": end, "step": step, **info}) + "\n")
        except OSError:
            pass


def live_rows(s: Sampler, wall: float, mono: float, fig: dict[str, Any]) -> list[dict]:
    """SAMPLE rows of the busiest storage host's live figures (pq.live_figures)."""
    host = {"host": fig["host"]}
    out = []
    if fig.get("nic_use") is not None:
        out.append(s.row(wall, mono, "live.storage_nic_use", fig["nic_use"], {**host, "device": fig["nic"]}))
    elif fig.get("nic_bytes_per_s") is not None:
        out.append(s.row(wall, mono, "live.storage_nic_bytes_per_s", fig["nic_bytes_per_s"], {**host, "device": fig["nic"]}))
    if fig.get("disk_busy") is not None:
        out.append(s.row(wall, mono, "live.storage_disk_busy", fig["disk_busy"], {**host, "device": fig["disk"]}))
    if fig.get("cpu_use") is not None:
        out.append(s.row(wall, mono, "live.storage_cpu_use", fig["cpu_use"], host))
    return out


def live_line(rows: list[dict]) -> str | None:
    """The progress view's line of one tick's live rows ("storage host vm: NIC eth0 12 % of
    link, disk vda 36 % busy, CPU 99 %"); None without them."""
    by = {r["metric"]: r for r in rows if str(r.get("metric", "")).startswith(LIVE_PREFIX)}
    if not by:
        return None
    parts = []
    host = next(iter(by.values()))["labels"].get("host", "?")
    if "live.storage_nic_use" in by:
        r = by["live.storage_nic_use"]
        parts.append(f"NIC {r['labels'].get('device')} {r['value'] * 100:.0f} % of link")
    elif "live.storage_nic_bytes_per_s" in by:
        r = by["live.storage_nic_bytes_per_s"]
        parts.append(f"NIC {r['labels'].get('device')} {r['value'] * 8 / 1e6:,.0f} Mb/s (link speed unknown)")
    if "live.storage_disk_busy" in by:
        r = by["live.storage_disk_busy"]
        parts.append(f"disk {r['labels'].get('device')} {r['value'] * 100:.0f} % busy")
    if "live.storage_cpu_use" in by:
        parts.append(f"CPU {by['live.storage_cpu_use']['value'] * 100:.0f} %")
    return f"storage host {host}: " + ", ".join(parts)


def emulated_hosts() -> dict[str, dict]:
    """{address: {name, rate_bits_per_s, device}} of the emulated hosts recorded as up (xcbench.hosts)."""
    out = {}
    for path in records():
        try:
            hosts = Record.load(path).data.get("hosts") or {}
        except XcbError:
            continue
        for name, h in hosts.items():
            rate = h.get("rate_bits_per_s")
            if h.get("address"):
                out[str(h["address"])] = {"name": name, "device": PEER,
                                          "rate_bits_per_s": float(rate) if rate and rate != float("inf") else None}
    return out


def parse_duration(text: Any) -> float:
    """A Prometheus duration ("1s", "15s", "1m", "500ms") in seconds; ValueError otherwise."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    total, pos, s = 0.0, 0, str(text).strip()
    for m in re.finditer(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", s):
        if m.start() != pos:
            raise ValueError(text)
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    if pos != len(s) or total <= 0:
        raise ValueError(text)
    return total
