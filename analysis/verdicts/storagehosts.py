"""Storage hosts (the Ceph cluster's machines, seen through the site's Prometheus):
each OSD host's NICs, disks and CPU over a level's steady window against their limits, the EC
fan-out measured on their NICs, and the verdicts that follow.

Input: the prometheus device's rows (xcbench/telemetry/promqueries.py), labelled with ``host``
and ``role`` (``osd`` on hosts running OSDs), ``device`` (NIC or disk) and, on a disk, the
``osds`` on it. Figures, per OSD host over the windows (means of the points whose rate range
lies in a window: _mean):

  nics    {device: {rx, tx, speed, use, way}}   node.nic_{rx,tx}_bytes_per_s vs
          node.nic_speed_bytes_per_s (or, on an emulated host, node.nic_limit_bytes_per_s: the
          rate its link is shaped to, the lower); where the NIC reports no speed, the
          inventory's (node.nic_declared_bytes_per_s: the NIC's own entry, else the host's);
          else the best iperf3 rate xcbench measured to or from the host's address in the run's
          baseline (an achievable rate: at most the link's, stated as such); else no speed, and
          ``speed_at_least`` the highest rate seen on it over the cell (a stated lower bound: a
          use against it would be an upper bound, so no rule fires on it). Every NIC is a link of its own: a bond's members beside the
          bond (whose reported speed is their sum), so one member full is seen.
          use = max(rx, tx) / speed: each direction of a full-duplex link has the link's speed,
          so the busier one binds (for EC writes: shards out of the primaries, into the others)
  disks   {device: {busy, read, write, osds}}  node.disk_busy (fraction of the second), bytes/s;
          only the OSDs' disks when osd metadata named them, else every disk of the host
  cpu     {busy, cores, use}                   node.cpu_busy_cores / node.cpu_cores
  views   one box: this machine's CPU from Prometheus against the host device's; they must
          agree within AGREE, a disagreement is named in the evidence (``storage_views``) and
          is a FINDING row per level (views_findings, stored with the verdicts)
  fanout  sum over OSD hosts of NIC rx (writes: bytes into them) / the chain's rate R; RAL's
          arithmetic for EC k+m with a host failure domain: 1 + (k+m-1)/k (the client's bytes into
          the primary, then k+m-1 shards of 1/k out of it to the other hosts); replicated size n: n

Rules (a storage host at its limit is measured, like a shaped link: checked after the client
links, before the estimates; not over a role at its own CPU limit, which is named first):

  storage-network   an OSD host's NIC moves >= NEAR of its link speed in its busier direction
  storage-disk      an OSD disk is busy >= NEAR of the time
  storage-host-cpu  an OSD host's CPU is >= NEAR of its cores busy
"""

from __future__ import annotations

import json
import math
from typing import Any

from xcbench.analysis.verdicts import borderline as _bl
from xcbench.figures.numbers import is_finite
from xcbench.figures.stats import mean_rel_se
from xcbench.store.findings import finding
from xcbench.telemetry.promqueries import instance_ip

VERDICTS = ("storage-network", "storage-disk", "storage-host-cpu")
CLIENT_ROLES = ("gateway", "mount", "client")  # a saturated one is named before a storage host


def _span(labels: Any) -> float:
    """A point's rate range in seconds (labels are text once stored); 0 in runs before the
    range was kept: the point then stands for its instant."""
    try:
        r = float(labels.get("range_s", 0.0)) if isinstance(labels, dict) else 0.0
    except (TypeError, ValueError):
        return 0.0
    return r if is_finite(r) and r > 0 else 0.0


def _mean(df: Any, windows) -> float:
    """Mean of the points that are the windows': a rate point at t averages (t - range, t], so
    it counts only when that whole span lies in a window (one whose range reaches before the
    window would mix in the ramp-up or the level before: a window shorter than the range has
    no figure)."""
    if df is None or not len(df):
        return math.nan
    vals = [float(v) for w, v, lab in zip(df["wall"], df["value"], df["labels"], strict=True)
            if any(a - 1e-3 <= w - _span(lab) and w <= b for a, b in windows) and is_finite(float(v))]
    return sum(vals) / len(vals) if vals else math.nan


def _rel_se(df: Any, windows) -> float:
    """The relative error of :func:`_mean`'s figure: its points are autocorrelated samples
    (figures.stats.mean_rel_se), the noise band of a storage host's rule."""
    if df is None or not len(df):
        return math.nan
    vals = [float(v) for w, v, lab in zip(df["wall"], df["value"], df["labels"], strict=True)
            if any(a - 1e-3 <= w - _span(lab) and w <= b for a, b in windows) and is_finite(float(v))]
    return mean_rel_se(vals)


def _max(df: Any) -> float:
    vals = [float(v) for v in df["value"] if is_finite(float(v))] if df is not None and len(df) else []
    return max(vals) if vals else math.nan


def _by_host_device(samples: Any, cell_id: str, metric: str) -> dict[tuple[str, str], Any]:
    """{(host, device): rows} of a prometheus metric on OSD hosts (rows keep their labels)."""
    out: dict[tuple[str, str], Any] = {}
    for host, rows in samples.by_label(cell_id, metric, "host").items():
        osd = rows["labels"].map(lambda lab: "osd" in str(lab.get("role", "")).split(","))
        rows = rows[osd]
        if not len(rows):
            continue
        dev = rows["labels"].map(lambda lab: lab.get("device", ""))
        for d, g in rows.groupby(dev, sort=True):
            out[(host, str(d))] = g
    return out


def measured_speeds(baseline: Any) -> dict[str, tuple[float, str]]:
    """{address: (bytes/s, source)}: the best iperf3 rate of the run's baseline between that
    address and another (loopback pairs, a host with itself, say nothing of a NIC)."""
    out: dict[str, tuple[float, str]] = {}
    if baseline is None or not len(baseline) or "bits_per_second" not in baseline:
        return out
    for r in baseline.to_dict("records"):
        bits_per_s, a, b = r.get("bits_per_second"), r.get("client"), r.get("gateway")
        if not is_finite(bits_per_s) or bits_per_s <= 0 or r.get("error") or not a or not b or a == b:
            continue
        for end in (a, b):
            if end not in out or bits_per_s / 8.0 > out[end][0]:
                out[end] = (bits_per_s / 8.0, f"iperf3 {a} -> {b} at {r.get('streams')} streams: the best "
                                       "rate measured to this host (at most its link's speed)")
    return out


def host_figures(samples: Any, cell_id: str, windows,
                 measured: dict[str, tuple[float, str]] | None = None) -> dict[str, dict[str, Any]]:
    """{OSD host: {nics, disks, cpu}} over the windows ({} without prometheus rows);
    ``measured``: measured_speeds of the run's baseline."""
    out: dict[str, dict[str, Any]] = {}

    def host(h: str) -> dict[str, Any]:
        return out.setdefault(h, {"nics": {}, "disks": {}, "cpu": {}})

    rx = _by_host_device(samples, cell_id, "node.nic_rx_bytes_per_s")
    tx = _by_host_device(samples, cell_id, "node.nic_tx_bytes_per_s")
    speed = _by_host_device(samples, cell_id, "node.nic_speed_bytes_per_s")
    shaped = _by_host_device(samples, cell_id, "node.nic_limit_bytes_per_s")
    declared = _by_host_device(samples, cell_id, "node.nic_declared_bytes_per_s")
    everywhere = [(-math.inf, math.inf)]
    for key in sorted(set(rx) | set(tx)):
        h, dev = key
        r, t = _mean(rx.get(key), windows), _mean(tx.get(key), windows)
        sp = _mean(speed.get(key), everywhere)
        limit = _mean(shaped.get(key), everywhere)
        source = "node_network_speed_bytes"
        if is_finite(limit) and limit > 0 and not (is_finite(sp) and 0 < sp < limit):
            sp, source = limit, str(shaped[key]["labels"].iloc[-1].get("source", "shaped link"))
        if not (is_finite(sp) and sp > 0):
            stated = declared.get(key) if declared.get(key) is not None else declared.get((h, "*"))
            sp = _mean(stated, everywhere)
            if stated is not None and is_finite(sp) and sp > 0:
                source = str(stated["labels"].iloc[-1].get("source", "inventory"))
            else:
                g = rx.get(key) if rx.get(key) is not None else tx.get(key)
                ip = instance_ip(str(g["labels"].iloc[-1].get("instance", ""))) if g is not None else None
                if ip and ip in (measured or {}):
                    sp, source = (measured or {})[ip]
        busiest = max((x for x in (r, t) if is_finite(x)), default=math.nan)
        if not is_finite(busiest):
            continue
        known = is_finite(sp) and sp > 0
        host(h)["nics"][dev] = {"rx": r, "tx": t, "speed": sp if known else None,
                                "speed_source": source if known else None,
                                "use": busiest / sp if known else math.nan,
                                "way": "received" if is_finite(r) and (not is_finite(t) or r >= t) else "sent"}
        if not known:
            seen = max((x for x in (_max(rx.get(key)), _max(tx.get(key))) if is_finite(x)), default=math.nan)
            host(h)["nics"][dev].update(
                speed_at_least=seen if is_finite(seen) else None,
                speed_source=("unknown (no node_network_speed_bytes, no link.speed in the "
                              "inventory): at least the highest rate seen on it"))
    busy = _by_host_device(samples, cell_id, "node.disk_busy")
    rd = _by_host_device(samples, cell_id, "node.disk_read_bytes_per_s")
    wr = _by_host_device(samples, cell_id, "node.disk_write_bytes_per_s")
    osd_disks = {h for (h, _), g in busy.items() if g["labels"].map(lambda lab: bool(lab.get("osds"))).any()}
    for key, g in sorted(busy.items()):
        h, dev = key
        osds = next((lab.get("osds") for lab in g["labels"] if lab.get("osds")), None)
        rot = next((lab.get("rotational") for lab in g["labels"] if lab.get("rotational") in ("0", "1")), None)
        if h in osd_disks and not osds:
            continue  # the host's other disks (its OS disk) when the OSDs' disks are known
        b = _mean(g, windows)
        if is_finite(b):
            host(h)["disks"][dev] = {"busy": b, "busy_rel_se": _rel_se(g, windows),
                                     "read": _mean(rd.get(key), windows),
                                     "write": _mean(wr.get(key), windows), "osds": osds,
                                     "rotational": None if rot is None else rot == "1"}
    for (h, _), g in rx.items():
        if h in out:
            out[h]["loopback"] = bool(g["labels"].map(lambda lab: str(lab.get("instance", "")).startswith("127.")).any())
    cpu = _by_host_device(samples, cell_id, "node.cpu_busy_cores")
    cores = _by_host_device(samples, cell_id, "node.cpu_cores")
    for (h, _), g in cpu.items():
        c = _mean(g, windows)
        n = _mean(cores.get((h, "")), [(-math.inf, math.inf)])
        local = g["labels"].map(lambda lab: "local" in str(lab.get("role", "")).split(",")).any()
        if is_finite(c):
            host(h)["cpu"] = {"busy": c, "cores": n if is_finite(n) else None, "local": bool(local),
                              "use": c / n if is_finite(n) and n > 0 else math.nan}
    return out


def expected_fanout(cell: Any) -> float:  # Any: a row of RunData.cells (a pandas Series)
    """Bytes into the OSD hosts' NICs per client byte written, by RAL's arithmetic (a host
    failure domain: every shard or copy on another host than the primary)."""
    label = str(cell.get("pool_label") or "")
    if str(cell.get("pool_kind")) == "erasure" and label.startswith("ec") and "+" in label:
        try:
            k, m = (float(x) for x in label[2:].split("+", 1))
            return 1 + (k + m - 1) / k
        except ValueError:
            return math.nan
    size = cell.get("raw_ratio_expected")
    return float(size) if is_finite(size) else math.nan


def add_evidence(rd: Any, cell: Any, windows, ev: dict[str, Any]) -> None:  # cell: as above
    """The storage hosts' figures of one point into its evidence (``storage_hosts``, the
    busiest of each kind, the EC fan-out and their source)."""
    hosts = host_figures(rd.samples, cell["cell_id"], windows, measured_speeds(getattr(rd, "baseline", None)))
    if not hosts:
        return
    ev["storage_hosts"] = hosts
    ev["storage_nic"] = _worst(hosts, "nics", "use")
    # busy time is a limit for a disk that serves one IO at a time (rotational); an SSD or NVMe
    # device serves many at once and is 100 % busy long before its limit (iostat(1)'s %util
    # note): such a disk is kept as evidence only. Unknown: taken as rotational, as before.
    ev["storage_disk"] = _worst(hosts, "disks", "busy", lambda f: f.get("rotational") is not False)
    solid = _worst(hosts, "disks", "busy", lambda f: f.get("rotational") is False)
    if solid:
        ev["storage_disk_not_rotational"] = solid
    # this machine's CPU (one box: OSDs beside the gateway) is the host-cpu rule's, from the
    # roles device; only a storage host of its own gets storage-host-cpu
    cpus = [(h, x["cpu"]) for h, x in hosts.items() if is_finite(x["cpu"].get("use")) and not x["cpu"]["local"]]
    ev["storage_cpu"] = (dict(max(cpus, key=lambda hx: hx[1]["use"])[1], host=max(
        cpus, key=lambda hx: hx[1]["use"])[0]) if cpus else None)
    r = ev.get("rate")
    way = "rx" if ev.get("direction") != "read" else "tx"
    # OSDs behind a loopback target talk over loopback, which no NIC counts: no fan-out there
    moved = [n[way] for x in hosts.values() if not x.get("loopback")
             for n in x["nics"].values() if is_finite(n[way])]
    ev["storage_fanout"] = sum(moved) / r if moved and is_finite(r) and r > 0 else math.nan
    ev["storage_fanout_expected"] = expected_fanout(cell) if ev.get("direction") != "read" else math.nan
    rel = ev.get("host_busy_rel_se")
    agree = views_agree(hosts, ev.get("host_busy"),
                        rel * ev["host_busy"] if is_finite(rel) and is_finite(ev.get("host_busy")) else None)
    if agree:
        ev["storage_views"] = agree
    ev.setdefault("sources", {})["storage_hosts"] = {
        "run": rd.run_id, "table": "samples", "agg": "mean over the steady window, per host and device",
        "query": f"cell_id == {cell['cell_id']!r} & sampler == 'prometheus' & labels.role has 'osd'",
        "promql": f"raw/prometheus/{cell['cell_id']}/queries.promql"}


# |busy(Prometheus) - busy(host device)| above this share of the cores: a finding. Both views
# read the same /proc/stat; measured on this machine (2 cores, 12 levels of two runs, 0.88-1.0
# busy): the steady windows' means differed by <= 0.017, single 4-s points by sd 0.009-0.027
# (p95 <= 0.056); 0.10 is beyond that noise even for a window of one point. A window noisier
# than that widens it: NOISE_K standard errors of the difference (the host device's standard
# error of its mean, sqrt(2) for the two views' noise together)
AGREE = 0.10
NOISE_K = 3.0
VIEWS_WHAT = "CPU views disagree"  # the findings' ``what`` starts with it (replaced on re-attribution)


def views_agree(hosts: dict[str, Any], host_busy: Any, host_se: Any = None) -> dict[str, Any] | None:
    """One box: this machine's CPU as Prometheus saw it (the loopback target) and as the local
    host device did (``host_busy``, with the standard error of that window mean ``host_se``)
    over the same window; they must agree within AGREE (or the window's own noise, if larger)."""
    local = [(h, x) for h, x in hosts.items() if x.get("loopback") and is_finite(x["cpu"].get("use"))]
    if not local or not is_finite(host_busy):
        return None
    host, x = local[0]
    prom = x["cpu"]["use"]
    tol = max(AGREE, NOISE_K * math.sqrt(2) * host_se) if is_finite(host_se) else AGREE
    ok = abs(prom - host_busy) <= tol
    return {"host": host, "prometheus_cpu": prom, "host_cpu": host_busy, "agree": ok,
            "tolerance": tol,
            "finding": None if ok else (f"this machine's CPU was {prom * 100:.0f} % busy for "
                                        f"Prometheus but {host_busy * 100:.0f} % for the host "
                                        "device over the same window: one of the views is wrong")}


def views_findings(verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """FINDING rows (xcbench.store.findings) of the levels whose two CPU views disagree (one
    box: Prometheus's node_exporter and the local host device see the same machine)."""
    out = []
    for v in verdicts:
        try:
            sv = json.loads(v.get("evidence") or "{}").get("storage_views")
        except (TypeError, ValueError):
            continue
        if not sv or sv.get("agree") is not False:
            continue
        prom, local = sv["prometheus_cpu"], sv["host_cpu"]
        level = f"{v.get('concurrency')} transfers" + (f" ({v['direction']})" if v.get("direction") else "")
        out.append(finding(
            v["cell_id"],
            f"{VIEWS_WHAT} on {sv.get('host', 'this machine')} at {level}: Prometheus "
            f"{prom * 100:.0f} %, host device {local * 100:.0f} % of the cores busy",
            f"both read this machine's CPU over the same steady window and differ by "
            f"{abs(prom - local) * 100:.0f} points, more than their sampling noise "
            f"({sv.get('tolerance', AGREE) * 100:.0f} points): one view is not this machine's, or "
            "misses part of its CPU (a node_exporter in a container or another host's, a wrong "
            "core count), so the storage-host figures of this cell are suspect",
            "check which node_exporter Prometheus scrapes as this host (its target's address "
            "and node_uname_info) and that it sees the host's /proc", "warning"))
    return out


def store_views_findings(run: Any, verdicts: list[dict[str, Any]]) -> None:
    """The views' findings of the attributed cells into the run's findings table, replacing the
    ones an earlier attribution of the same cells wrote (a resumed run, a run concluded again)."""
    new = views_findings(verdicts)
    cells = {v["cell_id"] for v in verdicts}
    old = run.table("findings")
    stale = (old["cell_id"].isin(cells) & old["what"].astype(str).str.startswith(VIEWS_WHAT)) \
        if len(old) else None
    if (stale is None or not stale.any()) and run.status == "running":
        if new:
            run.append("findings", new)
        return
    if stale is None or not stale.any():
        if not new:
            return
        keep = old
    else:
        keep = old[~stale]
    # a finalized run: its JSONL and its Parquet file (RunDir.replace_table)
    run.replace_table("findings", keep.astype(object).where(keep.notna(), None).to_dict("records") + new)


def _worst(hosts: dict[str, Any], kind: str, key: str, keep=lambda f: True) -> dict[str, Any] | None:
    best = None
    for h, x in hosts.items():
        for dev, f in x[kind].items():
            if keep(f) and is_finite(f.get(key)) and (best is None or f[key] > best[key]):
                best = {**f, "host": h, "device": dev}
    return best


def _mbit(v: float) -> str:
    return f"{v * 8 / 1e6:,.0f} Mb/s"


def storage_verdict(ev: dict[str, Any], near: float) -> tuple[str, str] | None:
    """(verdict, reason) when an OSD host's NIC, disk or CPU is at >= ``near`` of its limit;
    never for a tmpfs cell, whose chain holds no OSD (the demo's tmpfs level was given
    storage-disk as a borderline candidate from a disk busy with something else)."""
    if ev.get("backend") == "tmpfs":
        return None
    r = ev.get("rate")
    at = f"at {ev.get('concurrency')} transfers"
    chain = f"The chain moves {_mbit(r)} {at}" if is_finite(r) else f"The chain {at}"
    nic, disk, cpu = ev.get("storage_nic"), ev.get("storage_disk"), ev.get("storage_cpu")
    if nic and is_finite(nic.get("use")) and nic["use"] >= near:
        moved = nic["rx"] if nic["way"] == "received" else nic["tx"]
        fan = ""
        if is_finite(ev.get("storage_fanout")):
            exp = ev.get("storage_fanout_expected")
            fan = (f"; the OSD hosts' NICs carry {ev['storage_fanout']:.2f} bytes per client byte"
                   + (f" (RAL's arithmetic for this pool: {exp:.2f})" if is_finite(exp) else ""))
        return "storage-network", (f"{chain}: storage host {nic['host']}'s NIC {nic['device']} "
                                   f"{nic['way']} {_mbit(moved)}, {nic['use'] * 100:.0f} % of its "
                                   f"{_mbit(nic['speed'])} link{fan}.")
    # within its noise of the line (the busy samples' error), a borderline candidate either way
    if disk and is_finite(disk.get("busy")) and _bl.passes(ev, "storage-disk", "OSD disk busy",
                                                         disk["busy"], near, disk.get("busy_rel_se")):
        on = f" (under {disk['osds']})" if disk.get("osds") else ""
        return "storage-disk", (f"{chain}: storage host {disk['host']}'s disk {disk['device']}{on} "
                                f"is busy {disk['busy'] * 100:.0f} % of the time, writing "
                                f"{_mbit(disk['write']) if is_finite(disk.get('write')) else '?'}.")
    if cpu and is_finite(cpu.get("use")) and cpu["use"] >= near:
        return "storage-host-cpu", (f"{chain}: storage host {cpu['host']}'s CPU is "
                                    f"{cpu['use'] * 100:.0f} % busy ({cpu['busy']:.1f} of "
                                    f"{cpu['cores']:g} cores).")
    return None


def decide_storage(ev: dict[str, Any], verdict: str, reason: str, near: float) -> tuple[str, str]:
    """The hook of analysis.verdicts.attribution: a storage host at its limit overrides the estimates,
    not a saturated client link (network), a client node at its CPU limit
    (analysis.verdicts.node_use) nor a gateway/client role at its own CPU limit."""
    found = storage_verdict(ev, near)
    if found is None:
        return verdict, reason
    roles = ev.get("roles") or {}
    if verdict == "network" or (verdict == "client" and ev.get("client_node")) \
            or any((roles.get(r) or {}).get("saturated") for r in CLIENT_ROLES):
        return verdict, f"{reason[:-1] if reason.endswith('.') else reason}; also {found[1][0].lower()}{found[1][1:]}"
    return found
