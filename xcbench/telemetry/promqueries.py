"""What the prometheus device asks, and how its answers become SAMPLE rows on named hosts.

The queries are plain PromQL over the metric names of node_exporter (>= 0.16) and of the
ceph-mgr ``prometheus`` module (Pacific), so a reader can paste them into Grafana. ``{w}`` is
the rate window (4 scrape intervals: each point averages a few scrapes). Each answer becomes
rows ``sampler="prometheus"``, ``metric=<name>`` with labels naming the host, its NIC or disk,
the OSD or the pool:

    node.cpu_busy_cores            cores busy (not idle/iowait/steal) [host]
    node.cpu_cores                 cores of the host [host]
    node.nic_rx_bytes_per_s        bytes/s received [host, device] (node.nic_tx_bytes_per_s: sent)
    node.nic_speed_bytes_per_s     link speed, bytes/s (node_network_speed_bytes; absent if
                                   unknown; a bond reports its members' sum, and its members are
                                   NICs of their own)
    node.nic_declared_bytes_per_s  the speed the inventory states (``link: {speed: ...}``) [host,
                                   device; device "*": every NIC of the host], labels also {source}
    node.disk_busy                 fraction of the second the disk was busy [host, device]
    node.disk_read_bytes_per_s     bytes/s read [host, device] (node.disk_write_bytes_per_s: written)
    ceph.osd_*            per OSD: write/read op/s, bytes/s, latency (s) [osd, host]
    ceph.pool_*           per pool: client write/read op/s and bytes/s [pool]

Hosts are named by node_exporter's ``node_uname_info`` (nodename), matched with the cluster's
``osd metadata`` (hostname, addresses, devices) and the inventory (xcbench.hosts): a host gets
``role=osd`` when OSDs run there, and a disk ``osds=osd.0,osd.3`` when those OSDs sit on it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

HOST_QUERIES = {
    "node.cpu_busy_cores":
        'sum by (instance) (rate(node_cpu_seconds_total{{mode!~"idle|iowait|steal"}}[{w}]))',
    "node.cpu_cores": 'count by (instance) (node_cpu_seconds_total{{mode="idle"}})',
    "node.nic_rx_bytes_per_s": 'rate(node_network_receive_bytes_total{{device!="lo"}}[{w}])',
    "node.nic_tx_bytes_per_s": 'rate(node_network_transmit_bytes_total{{device!="lo"}}[{w}])',
    "node.nic_speed_bytes_per_s": 'node_network_speed_bytes{{device!="lo"}} > 0',
    "node.disk_busy": "rate(node_disk_io_time_seconds_total[{w}])",
    "node.disk_read_bytes_per_s": "rate(node_disk_read_bytes_total[{w}])",
    "node.disk_write_bytes_per_s": "rate(node_disk_written_bytes_total[{w}])",
}
CEPH_QUERIES = {
    "ceph.osd_write_ops": "rate(ceph_osd_op_w[{w}])",
    "ceph.osd_read_ops": "rate(ceph_osd_op_r[{w}])",
    "ceph.osd_write_bytes_per_s": "rate(ceph_osd_op_w_in_bytes[{w}])",
    "ceph.osd_read_bytes_per_s": "rate(ceph_osd_op_r_out_bytes[{w}])",
    "ceph.osd_write_latency_s":
        "rate(ceph_osd_op_w_latency_sum[{w}]) / rate(ceph_osd_op_w_latency_count[{w}])",
    "ceph.osd_read_latency_s":
        "rate(ceph_osd_op_r_latency_sum[{w}]) / rate(ceph_osd_op_r_latency_count[{w}])",
    "ceph.osd_commit_latency_s": "ceph_osd_commit_latency_ms / 1000",
    "ceph.pool_write_bytes_per_s":
        "rate(ceph_pool_wr_bytes[{w}]) * on (pool_id) group_left (name) ceph_pool_metadata",
    "ceph.pool_read_bytes_per_s":
        "rate(ceph_pool_rd_bytes[{w}]) * on (pool_id) group_left (name) ceph_pool_metadata",
    "ceph.pool_write_ops": "rate(ceph_pool_wr[{w}]) * on (pool_id) group_left (name) ceph_pool_metadata",
    "ceph.pool_read_ops": "rate(ceph_pool_rd[{w}]) * on (pool_id) group_left (name) ceph_pool_metadata",
}
QUERIES = {**HOST_QUERIES, **CEPH_QUERIES}
# the metric each query needs: an empty answer names it in the finding
NEEDS = {name: re.findall(r"\b(node_[a-z_]+|ceph_[a-z_]+)\b", q)[0] for name, q in QUERIES.items()}
UNAME = "node_uname_info"
# the progress view's live query: one request per telemetry tick, every host's NICs, disks and
# CPU over the last four scrapes, each part tagged ``xcb_live`` (live_figures picks the busiest
# storage host)
LIVE_PARTS = {
    "rx": 'rate(node_network_receive_bytes_total{{device!="lo"}}[{w}])',
    "tx": 'rate(node_network_transmit_bytes_total{{device!="lo"}}[{w}])',
    "speed": 'node_network_speed_bytes{{device!="lo"}} > 0',
    "disk": "rate(node_disk_io_time_seconds_total[{w}])",
    "cpu": 'sum by (instance) (rate(node_cpu_seconds_total{{mode!~"idle|iowait|steal"}}[{w}])) '
           '/ count by (instance) (node_cpu_seconds_total{{mode="idle"}})',
}


def range_seconds(step: float) -> float:
    """The rate range for a scrape interval ``step``: four scrapes (a point at t stands for
    (t - range, t], so it is a window's only when that span lies in it)."""
    return 4 * step


def window(step: float) -> str:
    return f"{range_seconds(step):g}s"


def promql(name: str, step: float) -> str:
    return QUERIES[name].format(w=window(step))


def live_promql(step: float) -> str:
    """The live query: LIVE_PARTS in one request (``or`` of series told apart by ``xcb_live``)."""
    return " or ".join(f'label_replace({q.format(w=window(step))}, "xcb_live", "{k}", "", "")'
                       for k, q in LIVE_PARTS.items())


def live_figures(answer: list[dict], hosts: HostMap) -> dict[str, Any] | None:
    """The busiest storage host in a live answer: {host, nic, nic_bytes_per_s, nic_use, disk, disk_busy,
    cpu_use} (a figure None when not answered; nic_use None when the link speed is unknown).
    Storage hosts: the instances running OSDs (every host when none is known to); their NICs:
    the OSDs' (front/back iface) when named, else all; busiest: the highest of its NIC's use of
    its link, its busiest (OSD) disk and its CPU."""
    per: dict[str, dict[str, Any]] = {}
    for a in answer:
        m, kind = a.get("metric") or {}, (a.get("metric") or {}).get("xcb_live")
        inst = m.get("instance")
        try:
            v = float(a["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if not inst or kind not in LIVE_PARTS or v != v or v in (float("inf"), float("-inf")):
            continue
        h = per.setdefault(inst, {"rx": {}, "tx": {}, "speed": {}, "disk": {}, "cpu": None})
        if kind == "cpu":
            h["cpu"] = v
        elif m.get("device"):
            h[kind][m["device"]] = v
    osd = [i for i in per if "osd" in hosts.roles(i)]
    best: tuple[float, dict[str, Any]] | None = None
    for inst in osd or list(per):
        h = per[inst]
        em = hosts.emulated.get(instance_ip(inst) or "") or {}
        nic = None
        devs = sorted(set(h["rx"]) | set(h["tx"]))
        ifaces = hosts.osd_ifaces(inst)  # the OSDs' own NICs when osd metadata names them
        for dev in [d for d in devs if d in ifaces] or devs:
            bytes_per_s = max(h["rx"].get(dev, 0.0), h["tx"].get(dev, 0.0))
            speed = h["speed"].get(dev)
            stated = getattr(hosts.inventory_host(inst), "link_speed", None)
            if speed is None and stated is not None and stated.of(dev) is not None:
                speed = stated.of(dev)[0]  # the NIC reports none: the inventory's
            if em.get("rate_bits_per_s") and dev == em.get("device"):
                speed = min(speed or float("inf"), em["rate_bits_per_s"] / 8.0)  # its shaped link
            use = bytes_per_s / speed if speed else None
            key = (use if use is not None else -1.0, bytes_per_s)
            if nic is None or key > nic[0]:
                nic = (key, dev, bytes_per_s, use)
        mine = set(hosts.osd_devices(inst))
        disks = {d: b for d, b in h["disk"].items() if not mine or d in mine}
        disk = max(disks.items(), key=lambda kv: kv[1]) if disks else None
        fig = {"host": hosts.host(inst), "nic": nic[1] if nic else None,
               "nic_bytes_per_s": nic[2] if nic else None, "nic_use": nic[3] if nic else None,
               "disk": disk[0] if disk else None, "disk_busy": disk[1] if disk else None,
               "cpu_use": h["cpu"]}
        score = max((x for x in (fig["nic_use"], fig["disk_busy"], fig["cpu_use"]) if x is not None),
                    default=-1.0)
        if best is None or score > best[0]:
            best = (score, fig)
    return best[1] if best else None


def short(host: str | None) -> str:
    """A host name without its domain, lower case (osd metadata and uname may differ there)."""
    return (host or "").split(".")[0].lower()


def addr_ips(text: str | None) -> set[str]:
    """The IPs in an OSD's front_addr/back_addr ("[v2:10.0.0.1:6802/123,v1:...]")."""
    out = set()
    for m in re.finditer(r"(?:v[12]:)?\[?([0-9a-fA-F.:]+?)\]?:\d+/\d+", text or ""):
        try:
            out.add(str(ipaddress.ip_address(m.group(1))))
        except ValueError:
            continue
    return out


def instance_ip(instance: str) -> str | None:
    """The IP of a target ``host:port`` (None for a name)."""
    host = instance.rsplit(":", 1)[0].strip("[]") if ":" in instance else instance
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def _flag(v: Any) -> bool | None:
    """`ceph osd metadata`'s "1"/"0" (bluestore_bdev_rotational); None when it does not say."""
    return {"1": True, "0": False}.get(str(v)) if v is not None else None


class HostMap:
    """Prometheus instances -> hosts with roles; OSDs -> hosts and devices.

    ``uname``: the node_uname_info answer; ``osd_meta``: `ceph osd metadata` (a list of dicts;
    [] when there is no cluster handle: then the mgr's ceph_osd_metadata series, given as
    ``osd_series``); ``inventory``: xcbench.hosts.Inventory or None.
    """

    def __init__(self, uname: Iterable[dict], osd_meta: Iterable[dict] = (),
                 inventory: Any = None, osd_series: Iterable[dict] = (),
                 emulated: dict[str, dict] | None = None):
        # emulated hosts by address ({ip: {name, rate_bits_per_s}}): they share the machine's nodename,
        # so their own name (the inventory's) names them, and their shaped rate is their link's
        self.emulated = dict(emulated or {})
        self.instances: dict[str, str] = {}  # instance -> host name
        for r in uname:
            m = r.get("metric", {})
            if m.get("instance"):
                em = self.emulated.get(instance_ip(m["instance"]) or "")
                self.instances[m["instance"]] = em["name"] if em else (m.get("nodename") or m["instance"])
        self.osds: dict[str, dict[str, Any]] = {}  # "osd.N" -> {host, ips, devices, ifaces}
        for o in osd_meta:
            if "id" not in o:
                continue
            devs = {d for key in ("devices", "bluestore_bdev_devices") for d in
                    str(o.get(key) or "").split(",") if d}
            self.osds[f"osd.{o['id']}"] = {
                "host": o.get("hostname") or "", "devices": sorted(devs),
                "rotational": _flag(o.get("bluestore_bdev_rotational", o.get("rotational"))),
                "ips": sorted(addr_ips(o.get("front_addr")) | addr_ips(o.get("back_addr"))),
                "ifaces": sorted({i for i in (o.get("front_iface"), o.get("back_iface")) if i})}
        for r in osd_series:  # the mgr's view, for OSDs `osd metadata` did not give
            m = r.get("metric", {})
            name = m.get("ceph_daemon")
            if name and name not in self.osds:
                ips = {m.get("public_addr"), m.get("cluster_addr")} - {None, ""}
                self.osds[name] = {"host": m.get("hostname") or "", "devices": [], "ips": sorted(ips),
                                   "rotational": None,  # the mgr's series name no device to mark
                                   "ifaces": sorted({m.get("front_iface"), m.get("back_iface")} - {None, ""})}
        self.inventory = inventory

    def host(self, instance: str) -> str:
        return self.instances.get(instance, instance)

    def osds_on(self, instance: str) -> list[str]:
        """The OSDs on the host behind ``instance``: an OSD whose address is some target's is
        that target's (emulated hosts share the machine's host name); the others by host name."""
        ips = {i: instance_ip(i) for i in self.instances}
        ips.setdefault(instance, instance_ip(instance))
        taken = {ip for ip in ips.values() if ip}
        name, ip = short(self.host(instance)), ips[instance]
        out = []
        for o, v in self.osds.items():
            if taken & set(v["ips"]):
                if ip in v["ips"]:
                    out.append(o)
            elif short(v["host"]) == name:
                out.append(o)
        return sorted(out)

    def roles(self, instance: str) -> list[str]:
        """``osd`` where OSDs run; the inventory's roles; ``local`` for a target on loopback or an
        emulated host (this machine: its CPU is the one the local roles device also sees)."""
        roles = {"osd"} if self.osds_on(instance) else set()
        ip = instance_ip(instance)
        if ip and (ipaddress.ip_address(ip).is_loopback or ip in self.emulated):
            roles.add("local")  # an emulated host's CPU and disks are this machine's too
        inv = self.inventory
        if inv is not None:
            name, ip = short(self.host(instance)), instance_ip(instance)
            for h in getattr(inv, "hosts", ()):
                if short(h.name) == name or (ip and h.address == ip):
                    roles |= set(h.roles)
        return sorted(roles)

    def osd_devices(self, instance: str) -> dict[str, list[str]]:
        """{device: [osds]} of the OSDs on ``instance``'s host (as node_exporter names disks)."""
        out: dict[str, list[str]] = {}
        for o in self.osds_on(instance):
            for d in self.osds[o]["devices"]:
                out.setdefault(d.removeprefix("/dev/"), []).append(o)
        return out

    def describe(self) -> dict[str, Any]:
        """The mapping, as written into the run (so a reader sees which host is which)."""
        return {"instances": {i: {"host": h, "roles": self.roles(i), "osds": self.osds_on(i),
                                  "osd_devices": self.osd_devices(i)}
                              for i, h in sorted(self.instances.items())},
                "osds": self.osds}

    def labels(self, name: str, metric: dict[str, str]) -> dict[str, Any] | None:
        """The row labels of one answered series of query ``name`` (None: not a series we keep)."""
        if name.startswith("node."):
            inst = metric.get("instance")
            if not inst:
                return None
            out: dict[str, Any] = {"host": self.host(inst), "instance": inst}
            roles = self.roles(inst)
            if roles:
                out["role"] = ",".join(roles)
            dev = metric.get("device")
            if dev:
                out["device"] = dev
                if name.startswith("node.disk"):
                    osds = self.osd_devices(inst).get(dev)
                    if osds:
                        out["osds"] = ",".join(osds)
                        rot = {self.osds[o].get("rotational") for o in osds}
                        if len(rot) == 1 and None not in rot:  # the OSDs' own word on the device
                            out["rotational"] = "1" if rot.pop() else "0"
                elif self.osd_ifaces(inst) and dev in self.osd_ifaces(inst):
                    out["osd_iface"] = "1"
            return out
        if name.startswith("ceph.osd"):
            osd = metric.get("ceph_daemon")
            if not osd:
                return None
            return {"osd": osd, "host": self.osds.get(osd, {}).get("host", "")}
        if name.startswith("ceph.pool"):
            pool = metric.get("name")
            return {"pool": pool} if pool else None
        return None

    def inventory_host(self, instance: str) -> Any:
        """The inventory's host behind ``instance`` (by name or address), or None."""
        name, ip = short(self.host(instance)), instance_ip(instance)
        for h in getattr(self.inventory, "hosts", ()):
            if short(h.name) == name or (ip and h.address == ip):
                return h
        return None

    def osd_ifaces(self, instance: str) -> set[str]:
        return {i for o in self.osds_on(instance) for i in self.osds[o]["ifaces"]}


def link_rows(hosts: HostMap, walls: list[float], mono_offset: float) -> list[dict]:
    """``node.nic_limit_bytes_per_s`` rows of emulated hosts whose link is shaped: the rate tc holds
    their NIC to (a veth reports 10 Gb/s whatever it is shaped to), labelled like the NIC rows;
    and the inventory's stated link speeds (declared_rows)."""
    out = declared_rows(hosts, walls, mono_offset)
    for inst in hosts.instances:
        em = hosts.emulated.get(instance_ip(inst) or "")
        if not em or not em.get("rate_bits_per_s"):
            continue
        labels = hosts.labels("node.nic_rx_bytes_per_s", {"instance": inst, "device": em.get("device", "eth0")})
        if labels is None:
            continue
        labels["source"] = f"emulated host {em['name']}: link shaped to {em['rate_bits_per_s'] / 1e6:g} Mb/s (tc tbf)"
        out += [{"wall": w, "mono": w - mono_offset, "sampler": "prometheus", "metric": "node.nic_limit_bytes_per_s",
                 "value": em["rate_bits_per_s"] / 8.0, "labels": labels} for w in walls]
    return out


def declared_rows(hosts: HostMap, walls: list[float], mono_offset: float) -> list[dict]:
    """``node.nic_declared_bytes_per_s`` rows: the link speeds the inventory states for the hosts
    Prometheus answers for (per NIC, or device "*" for every NIC of the host)."""
    out = []
    for inst in hosts.instances:
        h = hosts.inventory_host(inst)
        sp = getattr(h, "link_speed", None)
        if sp is None:
            continue
        entries = [(dev, bits_per_s) for dev, bits_per_s in sp.nics] + ([("*", sp.host_bits_per_s)] if sp.host_bits_per_s else [])
        for dev, bits_per_s in entries:
            labels = hosts.labels("node.nic_rx_bytes_per_s", {"instance": inst, "device": dev})
            if labels is None:
                continue
            field = f"link.speed.{dev}" if dev != "*" else "link.speed"
            labels["source"] = f"inventory: host {h.name}: {field} = {bits_per_s / 1e9:g} Gb/s"
            out += [{"wall": w, "mono": w - mono_offset, "sampler": "prometheus",
                     "metric": "node.nic_declared_bytes_per_s", "value": bits_per_s / 8.0, "labels": labels}
                    for w in walls]
    return out


def rows(name: str, answer: list[dict], hosts: HostMap, mono_offset: float,
         range_s: float | None = None) -> list[dict]:
    """SAMPLE rows (without cell_id) of a range answer. ``mono_offset``: wall - monotonic of
    this process, so rows sit on the run's monotonic clock too; ``range_s``: the queries' rate
    range, kept in the labels (a reader takes a point for the span it averages)."""
    out = []
    for series in answer:
        labels = hosts.labels(name, series.get("metric") or {})
        if labels is None:
            continue
        if range_s is not None:
            labels["range_s"] = range_s
        for ts, value in series.get("values") or ([series["value"]] if series.get("value") else []):
            try:
                v = float(value)
            except (TypeError, ValueError):
                continue
            if v != v or v in (float("inf"), float("-inf")):  # NaN: 0/0 latency with no ops
                continue
            wall = float(ts)
            out.append({"wall": wall, "mono": wall - mono_offset, "sampler": "prometheus",
                        "metric": name, "value": v, "labels": labels})
    return out
