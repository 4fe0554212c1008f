"""Host TCP audit against ESnet fasterdata's Linux host tuning, and an opt-in tuning for a run.

Source of the recommendations (the RAL and ANL gateway studies applied them):
ESnet fasterdata, "Linux Tuning" (https://fasterdata.es.net/host-tuning/linux/): socket buffer
maxima sized to the NIC speed, ``net.core.default_qdisc = fq`` (pacing), a modern congestion
control (BBR or H-TCP rather than Reno/CUBIC), ``net.ipv4.tcp_mtu_probing = 1`` with jumbo
frames (MTU 9000). The per-speed buffer values below are fasterdata's DTN tiers as the OSG
networking team transcribed them into their fasterdata-tuning.sh (github.com/osg-htc/networking,
docs/perfsonar/tools_scripts/fasterdata-tuning.sh, TUNING_{10G,40G,100G}_DTN).

Every value below its recommendation is a FINDING row with the sysctl line that fixes it. The
audit only reads (``/proc/sys``, ``/sys/class/net``, ``ip route get``, a qdisc probe inside a
throw-away network namespace). :class:`TcpTuning` writes the recommended values only when the
user asked (``--tune-tcp``) and puts every old value back on exit, exceptions and SIGTERM/SIGHUP.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.store.findings import finding
from xcbench.system import proc, sysctlrec

SOURCE = ("ESnet fasterdata Linux host tuning (https://fasterdata.es.net/host-tuning/linux/); "
          "per-speed DTN buffer tiers as in OSG's fasterdata-tuning.sh")
# NIC speed (Gb/s) -> (net.core.[rw]mem_max, tcp_rmem triple, tcp_wmem triple)
TIERS = {
    10: (67108864, "4096 87380 33554432", "4096 65536 33554432"),
    40: (134217728, "4096 87380 67108864", "4096 65536 67108864"),
    100: (2147483647, "4096 131072 1073741824", "4096 16384 1073741824"),
}
DEFAULT_TIER = 100  # the rate xcbench's users target when the NIC speed cannot be read
GOOD_CC = ("bbr", "htcp")
QDISC = "fq"
JUMBO_MTU = 9000
SYSCTL_ROOT = Path("/proc/sys")
NET_ROOT = Path("/sys/class/net")
ACTIVE: TcpTuning | None = None  # the tuning this process applied (sysctls are host-global)


@dataclass
class AuditItem:
    key: str                 # sysctl name, or "mtu <dev>" / "speed <dev>"
    value: str | None        # what the host has ("" when it cannot be read)
    recommended: str | None
    ok: bool | None          # None: not applicable / cannot tell
    note: str = ""
    fix: str | None = None   # the line that fixes it (sysctl line for sysctls)
    sysctl: bool = True      # whether TcpTuning may set it


def sysctl_path(name: str, root: Path = SYSCTL_ROOT) -> Path:
    return root / name.replace(".", "/")


def read_sysctl(name: str, root: Path = SYSCTL_ROOT) -> str | None:
    """A sysctl's value with whitespace normalised ("4096 131072 6291456"); None if absent."""
    try:
        return " ".join(sysctl_path(name, root).read_text().split())
    except OSError:
        return None


def write_sysctl(name: str, value: str, root: Path = SYSCTL_ROOT) -> None:
    try:
        sysctl_path(name, root).write_text(value + "\n")
    except OSError as e:
        raise XcbError(f"--tune-tcp: cannot set {name} = {value} ({e.strerror or e})") from e


def route_dev(address: str) -> str | None:
    """The interface traffic to ``address`` leaves by (``ip route get``)."""
    try:
        out = proc.run(["ip", "-o", "route", "get", address], timeout=5, check=False)
    except XcbError:
        return None
    words = out.stdout.split()
    return words[words.index("dev") + 1] if "dev" in words[:-1] else None


def _net_int(dev: str, what: str, root: Path | None = None) -> int | None:
    try:
        v = int(((root or NET_ROOT) / dev / what).read_text().strip())
    except (OSError, ValueError):  # loopback/virtual NICs refuse "speed" (EINVAL)
        return None
    return v if v > 0 else None


def qdisc_available(kind: str = QDISC) -> tuple[bool | None, str]:
    """(available?, how we know). First a real probe: attach ``kind`` to lo inside a network
    namespace that only exists for the probe (the host's qdiscs are not touched); else the
    kernel config."""
    try:
        out = proc.run(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", kind],
                       timeout=10, check=False)
        if out.returncode == 0:
            return True, f"tc accepted qdisc {kind} in a private network namespace"
        if "unknown" in (out.stderr + out.stdout).lower():
            return False, f"tc: {' '.join((out.stderr or out.stdout).split())[:120]}"
    except XcbError:
        pass  # no unshare/tc: try the kernel config
    try:
        cfg = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode(errors="replace")
    except OSError:
        return None, "no tc probe possible and no /proc/config.gz"
    opt = f"CONFIG_NET_SCH_{kind.upper()}"
    if f"{opt}=y" in cfg:
        return True, f"{opt}=y in /proc/config.gz"
    if f"{opt}=m" in cfg:
        return None, f"{opt}=m in /proc/config.gz (a module: loaded on demand if installed)"
    return False, f"{opt} is not set in /proc/config.gz"


def _tier(speeds: list[int], target_gbps: float | None) -> tuple[int, str]:
    want = target_gbps or (max(speeds) / 1000 if speeds else None)
    how = (f"--target-gbps {target_gbps:g}" if target_gbps else
           f"NIC speed {max(speeds) / 1000:g} Gb/s" if speeds else
           f"no NIC speed readable: assumed a {DEFAULT_TIER} Gb/s host")
    if want is None:
        return DEFAULT_TIER, how
    for tier in sorted(TIERS):
        if want <= tier:
            return tier, how
    return max(TIERS), how


def _triple_max(v: str | None) -> int | None:
    try:
        return int(v.split()[-1]) if v else None
    except ValueError:
        return None


def audit(addresses: list[str] | tuple[str, ...] = ("127.0.0.1",), *,
          target_gbps: float | None = None, root: Path = SYSCTL_ROOT,
          probe_qdisc: bool = True) -> dict[str, Any]:
    """Audit this host for traffic to ``addresses`` (the gateway and client addresses).

    Returns {"source", "tier_gbps", "tier_how", "interfaces": {dev: {mtu, speed_mbps}},
    "checks": [AuditItem as dict]}."""
    ifaces: dict[str, dict[str, Any]] = {}
    for a in addresses:
        dev = route_dev(a)
        if dev and dev not in ifaces:
            ifaces[dev] = {"address": a, "mtu": _net_int(dev, "mtu"),
                           "speed_mbps": _net_int(dev, "speed")}
    speeds = [i["speed_mbps"] for d, i in ifaces.items() if i["speed_mbps"] and d != "lo"]
    tier, how = _tier(speeds, target_gbps)
    core_max, rmem, wmem = TIERS[tier]
    checks: list[AuditItem] = []
    for name in ("net.core.rmem_max", "net.core.wmem_max"):
        v = read_sysctl(name, root)
        ok = None if v is None else int(v) >= core_max
        checks.append(AuditItem(name, v, str(core_max), ok, f"{tier} Gb/s tier",
                            None if ok in (True, None) else f"sysctl -w {name}={core_max}"))
    for name, rec in (("net.ipv4.tcp_rmem", rmem), ("net.ipv4.tcp_wmem", wmem)):
        v = read_sysctl(name, root)
        have, want = _triple_max(v), int(rec.split()[-1])
        ok = None if have is None else have >= want
        checks.append(AuditItem(name, v, rec, ok, f"max {have} vs {want} ({tier} Gb/s tier)",
                            None if ok in (True, None) else f"sysctl -w {name}='{rec}'"))
    cur = read_sysctl("net.core.default_qdisc", root)
    if cur == QDISC:
        checks.append(AuditItem("net.core.default_qdisc", cur, QDISC, True))
    else:
        avail, why = qdisc_available(QDISC) if probe_qdisc else (None, "not probed")
        checks.append(AuditItem(
            "net.core.default_qdisc", cur, QDISC, False if avail is not False else None,
            f"fq available: {'unknown' if avail is None else 'yes' if avail else 'NO'} ({why})",
            f"sysctl -w net.core.default_qdisc={QDISC}" if avail is not False else None,
            sysctl=avail is not False))
    cc = read_sysctl("net.ipv4.tcp_congestion_control", root)
    avail_cc = (read_sysctl("net.ipv4.tcp_available_congestion_control", root) or "").split()
    usable = [c for c in GOOD_CC if c in avail_cc]
    if cc in GOOD_CC:
        checks.append(AuditItem("net.ipv4.tcp_congestion_control", cc, "/".join(GOOD_CC), True))
    else:
        checks.append(AuditItem(
            "net.ipv4.tcp_congestion_control", cc, "/".join(GOOD_CC), False if usable else None,
            f"available: {' '.join(avail_cc) or '?'}",
            f"sysctl -w net.ipv4.tcp_congestion_control={usable[0]}" if usable else None,
            sysctl=bool(usable)))
    v = read_sysctl("net.ipv4.tcp_mtu_probing", root)
    ok = None if v is None else int(v) >= 1
    checks.append(AuditItem("net.ipv4.tcp_mtu_probing", v, "1", ok, "avoids MTU black holes with jumbo frames",
                        None if ok in (True, None) else "sysctl -w net.ipv4.tcp_mtu_probing=1"))
    for dev, i in ifaces.items():
        mtu = i["mtu"]
        checks.append(AuditItem(f"mtu {dev}", str(mtu) if mtu else None, str(JUMBO_MTU),
                            None if mtu is None else mtu >= JUMBO_MTU, f"route to {i['address']}",
                            None if not mtu or mtu >= JUMBO_MTU else
                            f"ip link set dev {dev} mtu {JUMBO_MTU} (every hop of the path must carry it)",
                            sysctl=False))
        sp = i["speed_mbps"]
        checks.append(AuditItem(f"speed {dev}", f"{sp / 1000:g} Gb/s" if sp else None, None, None,
                            "from /sys/class/net (the ethtool link speed)" if sp else
                            "not readable (loopback or virtual NIC)", None, sysctl=False))
    return {"source": SOURCE, "tier_gbps": tier, "tier_how": how, "interfaces": ifaces,
            "checks": [asdict(c) for c in checks]}


def findings(result: dict[str, Any], host: str = "local") -> list[dict]:
    """FINDING rows: a value below the recommendation (warning, with the line that fixes it),
    or a recommendation this host cannot follow (info: say so, never suggest the impossible)."""
    rows = []
    for c in result["checks"]:
        where = f"host:{host}"
        if c["ok"] is False:
            rows.append(finding(where, f"{c['key']} = {c['value']} (fasterdata: {c['recommended']})",
                                f"below ESnet fasterdata's host tuning; {c['note']}".rstrip("; "),
                                c["fix"] or "", "warning"))
        elif c["ok"] is None and c["recommended"] and c["value"] is not None and c["value"] != c["recommended"]:
            rows.append(finding(where, f"{c['key']}: fasterdata recommends {c['recommended']}, "
                                       f"this kernel cannot follow",
                                c["note"], "none possible on this kernel (not recommended here)", "info"))
    for key, (old, new) in (ACTIVE.changed.items() if ACTIVE is not None else ()):
        rows.append(finding(f"host:{host}", f"{key} tuned for this run: {old} -> {new}",
                            "--tune-tcp applied ESnet fasterdata's value for the run only",
                            f"restored to {old} when the run ended; to keep it: sysctl -w {key}='{new}'",
                            "info"))
    return rows


def manifest_entry(result: dict[str, Any]) -> dict[str, Any]:
    """What a run's manifest keeps: the audit, and the tuning applied for the run (if any)."""
    entry = dict(result)
    if ACTIVE is not None:
        entry["tuned"] = {k: {"was": old, "set": new} for k, (old, new) in ACTIVE.changed.items()}
    return entry


class TcpTuning:
    """Set the audit's sysctl fixes for the duration of a ``with`` block, then restore.

    Each old value is recorded on disk before its key is set (xcbench.system.sysctlrec): old values go
    back on normal exit and on exceptions, on SIGTERM/SIGHUP through the command's own signal
    handling (xcbench.system.signals: the stop unwinds through ``__exit__``), and after a kill -9 the
    next command restores them. Values a host cannot take are left alone.
    """

    def __init__(self, result: dict[str, Any], root: Path = SYSCTL_ROOT):
        self.root = root
        self.plan = {c["key"]: c["recommended"] for c in result["checks"]
                     if c["ok"] is False and c["sysctl"] and c["fix"] and c["key"].startswith("net.")}
        for c in result["checks"]:  # the congestion control: the available one named in the fix
            if c["key"] in self.plan and c["key"].endswith("congestion_control"):
                self.plan[c["key"]] = c["fix"].rsplit("=", 1)[1]
        self.changed: dict[str, tuple[str, str]] = {}
        self.record: sysctlrec.Record | None = None

    def __enter__(self) -> TcpTuning:
        global ACTIVE
        ACTIVE = self
        self.record = sysctlrec.Record(str(self.root))
        try:
            for key, value in self.plan.items():
                old = read_sysctl(key, self.root)
                if old is None:
                    continue
                self.record.note(key, old, value)  # on disk before the host changes
                write_sysctl(key, value, self.root)
                self.changed[key] = (old, value)
        except BaseException:
            self.restore()
            raise
        return self

    def restore(self) -> list[str]:
        """Put every changed value back (last first); returns the keys that could not be."""
        global ACTIVE
        failed = []
        for key, (old, _new) in reversed(list(self.changed.items())):
            try:
                write_sysctl(key, old, self.root)
            except XcbError:
                failed.append(key)
        self.changed = {k: v for k, v in self.changed.items() if k in failed}
        if self.record is not None:  # what could not go back stays for the next command
            for key in list(self.record.changed):
                if key not in failed:
                    self.record.forget(key)
        if ACTIVE is self:
            ACTIVE = None
        return failed

    def __exit__(self, *exc) -> None:
        failed = self.restore()
        if failed:
            raise XcbError(f"--tune-tcp: could not restore {', '.join(failed)}: set them back by hand")


def tuned(enabled: bool, addresses: list[str] | tuple[str, ...] = ("127.0.0.1",)) -> Any:
    """``with tuned(args.tune_tcp):`` — a TcpTuning when asked for, else a no-op context."""
    import contextlib
    if not enabled:
        return contextlib.nullcontext()
    if os.geteuid() != 0:
        raise XcbError("--tune-tcp: setting sysctls needs root (run without --tune-tcp to only audit)")
    return TcpTuning(audit(addresses))
