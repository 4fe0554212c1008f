"""Config fingerprint of a run and of its cells: what exactly was measured, on what.

Run level (``manifest["fingerprint"]``): versions of ceph / xrootd / fio / gfal2 / iperf3 /
xcbench / python (tool ``--version`` and the Debian package versions) and host info.
Cell level (``manifest["cells"][id]["fingerprint"]``): layout xattrs as applied, pool settings
and EC profile as the cluster reports them, the sha256 of every rendered xrootd/cmsd config.
Each gets a ``digest`` (sha256 of its canonical JSON): two runs with equal digests measured the
same configuration; ``xcbench compare`` says so when they differ.

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
    from xcbench import proc
    try:
        out = proc.run(argv, timeout=20, check=False)
    except Exception:  # noqa: BLE001 - not installed / timed out: recorded as None
        return None
    m = re.search(pattern, (out.stdout or "") + (out.stderr or ""))
    return m.group(1) if m else None


def package_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    from xcbench import proc
    try:
        out = proc.run(["dpkg-query", "-W", "-f=${Package} ${Version}\\n", *packages],
                       timeout=20, check=False)
    except Exception:  # noqa: BLE001 - not a Debian system
        return {}
    return dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)


@cache
def versions() -> dict[str, Any]:
    """Versions of the stack; cached per process (they do not change during a run)."""
    from xcbench import __version__
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

LAYOUT_XATTRS = ("stripe_unit", "stripe_count", "object_size", "pool", "pool_namespace")


def layout_xattrs(path: str | os.PathLike) -> dict[str, Any] | None:
    """The CephFS layout of a dir (or file) as Ceph applied it, read back from its xattrs."""
    out: dict[str, Any] = {}
    for kind in ("dir", "file"):
        for field in LAYOUT_XATTRS:
            try:
                raw = os.getxattr(path, f"ceph.{kind}.layout.{field}").decode().strip("\x00 ")
            except OSError:
                continue
            out[field] = int(raw) if raw.isdigit() else raw
        if out:
            out["xattr"] = f"ceph.{kind}.layout"
            return out
    return None


def pool_settings(cluster: Any, pool: str) -> dict[str, Any]:
    """`ceph osd pool get <pool> all` and, for EC pools, the EC profile, as the cluster says."""
    out: dict[str, Any] = {"name": pool}
    try:
        out["settings"] = cluster.mon_command("osd pool get", pool=pool, var="all")
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        out["error"] = str(e)
        return out
    profile = (out["settings"] or {}).get("erasure_code_profile")
    if profile:
        try:
            out["ec_profile"] = cluster.mon_command("osd erasure-code-profile get", name=profile)
        except Exception as e:  # noqa: BLE001
            out["ec_profile_error"] = str(e)
    return out


def config_hashes(paths: list[str | os.PathLike]) -> dict[str, str | None]:
    """{file name: sha256} of rendered configs (xrootd, cmsd, gateway ceph.conf)."""
    return {Path(p).name: file_sha256(p) for p in paths}


def cell_fingerprint(*, layout: dict | None = None, pool: dict | None = None,
                     configs: dict[str, str | None] | None = None, **extra: Any) -> dict[str, Any]:
    """A cell's fingerprint with its digest. Pass what applies: ``layout`` (layout_xattrs or the
    XrdCeph striper settings), ``pool`` (pool_settings), ``configs`` (config_hashes)."""
    fp = {"layout": layout, "pool": pool, "configs": configs or {}, **extra}
    fp["digest"] = digest({k: v for k, v in fp.items() if k != "digest"})
    return fp
