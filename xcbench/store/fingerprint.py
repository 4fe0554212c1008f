"""Config fingerprint of a run and of its cells: what exactly was measured, on what.

Run level (``manifest["fingerprint"]``): versions of ceph / xrootd / fio / gfal2 / iperf3 /
xcbench / python (tool ``--version`` and the Debian package versions) and host info.
Cell level (``manifest["cells"][id]["fingerprint"]``): layout xattrs as applied
(xcbench.cell.layout.layout_xattrs), pool settings and EC profile as the cluster reports them
(xcbench.ceph.pools.pool_settings), the gateway's inputs (xcbench.gateway.config.gateway_inputs:
backend, origins, effective tunables, oss library and its arguments) with the sha256 of the
config templates, and the stack versions' digest. Its ``digest`` hashes what defines the measurement and nothing
ephemeral: the sha256 of each rendered config is kept (``configs``, for tracing) but left out,
because rendered configs hold this run's ports and temporary paths; so are keys that name
them (EPHEMERAL). Two runs of one matrix with the same software have equal digests;
``xcbench compare`` names the fields that differ (fingerprint_diff).

Everything here is best effort: a missing tool gives ``None``, never an exception, because a
fingerprint must not stop a run.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
from functools import cache
from pathlib import Path
from typing import Any

from xcbench import __version__
from xcbench.system import proc

# Debian packages whose versions identify the stack (dpkg-query, one call).
PACKAGES = ("ceph-common", "ceph-osd", "python3-rados", "python3-cephfs", "xrootd-server",
            "xrootd-client", "xrootd-ceph-plugins", "python3-xrootd", "fio", "libgfal2-2",
            "python3-gfal2", "gfal2-plugin-xrootd", "gfal2-plugin-http", "iperf3")
# tool -> (argv, regex picking the version out of its output)
TOOLS = {
    "ceph": (["ceph", "--version"], r"ceph version (\S+)"),
    "xrootd": (["xrootd", "-v"], r"v?(\d+\.\d+\S*)"),
    "fio": (["fio", "--version"], r"fio-(\S+)"),
    "iperf3": (["iperf3", "--version"], r"iperf (\S+)"),
}


def digest(obj: Any) -> str:
    """sha256 of the canonical JSON of ``obj`` (sorted keys, no spaces)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def file_sha256(path: str | os.PathLike) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _tool_version(argv: list[str], pattern: str) -> str | None:
    try:
        out = proc.run(argv, timeout=20, check=False)
    except Exception:  # noqa: BLE001 - not installed / timed out: recorded as None
        return None
    m = re.search(pattern, (out.stdout or "") + (out.stderr or ""))
    return m.group(1) if m else None


def package_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    try:
        out = proc.run(["dpkg-query", "-W", "-f=${Package} ${Version}\\n", *packages],
                       timeout=20, check=False)
    except Exception:  # noqa: BLE001 - not a Debian system
        return {}
    return dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)


@cache
def versions() -> dict[str, Any]:
    """Versions of the stack; cached per process (they do not change during a run)."""
    v: dict[str, Any] = {name: _tool_version(argv, rx) for name, (argv, rx) in TOOLS.items()}
    try:
        import gfal2  # Debian python3-gfal2, system site packages
        v["gfal2"] = gfal2.get_version()
    except Exception:  # noqa: BLE001
        v["gfal2"] = None
    v["xcbench"] = __version__
    v["python"] = platform.python_version()
    for mod in ("pandas", "pyarrow", "numpy"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = None
    v["packages"] = package_versions()
    return v


def _os_release() -> str | None:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return None
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)', text, re.M)
    return m.group(1) if m else None


def _cpu_model() -> str | None:
    # psutil does not name the CPU model: /proc/cpuinfo it is
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _mem_total() -> int | None:
    import psutil
    try:
        return int(psutil.virtual_memory().total)
    except (psutil.Error, OSError):
        return None


def host_info() -> dict[str, Any]:
    """The host the run ran on: enough to tell two machines apart and to scale CPU figures."""
    import psutil
    try:
        usable: int | None = len(psutil.Process().cpu_affinity() or [])
    except (AttributeError, psutil.Error, OSError):  # no affinity on this platform
        usable = psutil.cpu_count()
    return {"hostname": socket.gethostname(), "os": _os_release(), "kernel": platform.release(),
            "arch": platform.machine(), "cpu_model": _cpu_model(), "cpus": psutil.cpu_count(),
            "cpus_usable": usable, "mem_bytes": _mem_total()}


def run_fingerprint() -> dict[str, Any]:
    """``manifest["fingerprint"]`` of a new run: versions + host, with a digest of the versions."""
    v = versions()
    return {"versions": v, "host": host_info(), "versions_digest": digest(v)}


# --- cell level ------------------------------------------------------------------------------

def config_hashes(paths: list[str | os.PathLike]) -> dict[str, str | None]:
    """{file name: sha256} of rendered configs (xrootd, cmsd, gateway ceph.conf)."""
    return {Path(p).name: file_sha256(p) for p in paths}


# keys whose values change from run to run without changing the measurement
EPHEMERAL = frozenset({"path", "dir", "mount", "mountpoint", "port", "http_port", "pid", "addr",
                       "pool_id", "conf", "keyring", "log", "adminpath", "localroot"})
NOT_HASHED = ("digest", "configs")  # configs: rendered text holds ports and temp paths
TEMPLATE_DIR = "xcbench.xrootd_configs"
TEMPLATES = ("xrootd.cfg.j2", "cmsd.cfg.j2")


def scrub(obj: Any) -> Any:
    """``obj`` without EPHEMERAL keys (at any depth)."""
    if isinstance(obj, dict):
        return {k: scrub(v) for k, v in obj.items() if k not in EPHEMERAL}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    return obj


@cache
def template_hashes() -> dict[str, str | None]:
    """sha256 of the gateway config templates (a template change is a config change)."""
    from importlib.resources import files
    out: dict[str, str | None] = {}
    for name in TEMPLATES:
        try:
            out[name] = hashlib.sha256((files(TEMPLATE_DIR) / name).read_bytes()).hexdigest()
        except (OSError, ModuleNotFoundError):
            out[name] = None
    return out


def versions_digest() -> str:
    return digest(versions())


def cell_fingerprint(*, layout: dict | None = None, pool: dict | None = None,
                     configs: dict[str, str | None] | None = None, **extra: Any) -> dict[str, Any]:
    """A cell's fingerprint with its digest. Pass what applies: ``layout`` (layout_xattrs or the
    XrdCeph striper settings), ``pool`` (pool_settings), ``gateway`` (gateway.config.gateway_inputs + template_hashes),
    ``versions`` (versions_digest), ``configs`` (config_hashes: recorded, not hashed)."""
    fp = {"layout": layout, "pool": pool, "configs": configs or {}, **extra}
    fp["digest"] = digest(scrub({k: v for k, v in fp.items() if k not in NOT_HASHED}))
    return fp


def fingerprint_diff(a: dict | None, b: dict | None, prefix: str = "") -> list[str]:
    """Dotted names of the fields that differ between two cell fingerprints (hashed parts only;
    a part recorded in one run only is named too, e.g. by an older xcbench)."""
    a = scrub({k: v for k, v in (a or {}).items() if k not in NOT_HASHED})
    b = scrub({k: v for k, v in (b or {}).items() if k not in NOT_HASHED})
    out: list[str] = []
    for key in sorted(set(a) | set(b), key=str):
        va, vb = a.get(key), b.get(key)
        name = f"{prefix}{key}"
        if isinstance(va, dict) and isinstance(vb, dict):
            out += fingerprint_diff(va, vb, name + ".")
        elif va != vb:
            out.append(name)
    return out
