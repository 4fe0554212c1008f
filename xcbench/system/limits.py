"""The CPU limit that applies to a process: CFS quota (cgroup v1 or v2), cpuset, host cores.

    cpu_limit(pid) -> CpuLimit(cores=0.25, source="cgroup v1 cpu.cfs_quota_us=25000/100000 at
                               /sys/fs/cgroup/cpu/xcb-run-gateway", ...)

The quota is read for the process's group and every ancestor up to the root: the tightest one
wins (the kernel throttles a group when any ancestor runs out). The cpuset and the affinity mask
(a task pinned within it) bound it too. Without either, the limit is the host's cores, said
so in ``source``. A quota that cannot be read (no permission, a group mounted elsewhere) gives
``cores=None`` and ``source="unknown (why)"``: never silently "the whole host".

``root`` is injectable so tests can lay out a fake /sys/fs/cgroup and /proc.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC = Path("/proc")


@dataclass(frozen=True)
class CpuLimit:
    cores: float | None  # None: a limit may exist but could not be read
    source: str  # where the figure comes from, one line (for reasons and evidence)
    quota_cores: float | None = None  # the tightest CFS quota, if any
    cpuset_cores: int | None = None
    host_cores: int | None = None
    group: str | None = None  # the cgroup directory the quota came from
    notes: tuple[str, ...] = field(default=())

    @property
    def known(self) -> bool:
        return self.cores is not None

    def as_dict(self) -> dict:
        return {"cores": self.cores, "source": self.source, "quota_cores": self.quota_cores,
                "cpuset_cores": self.cpuset_cores, "host_cores": self.host_cores,
                "group": self.group}


def parse_cpu_list(text: str) -> set[int]:
    """'0-2,5' -> {0, 1, 2, 5} (cpuset.cpus / Cpus_allowed_list syntax)."""
    out: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def proc_cgroups(pid: int, proc: Path = PROC) -> dict[str, str]:
    """{controller: path} from /proc/<pid>/cgroup; the v2 entry is keyed ''."""
    out: dict[str, str] = {}
    for line in (proc / str(pid) / "cgroup").read_text().splitlines():
        hid, _, rest = line.partition(":")
        ctrls, _, path = rest.partition(":")
        if hid == "0" and ctrls == "":
            out[""] = path
        for c in ctrls.split(","):
            if c:
                out[c] = path
    return out


def _mounts(proc: Path = PROC) -> list[tuple[str, str, set[str]]]:
    """(fstype, mountpoint, super options) of cgroup mounts, from /proc/self/mounts."""
    out: list[tuple[str, str, set[str]]] = []
    try:
        text = (proc / "self" / "mounts").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[2] in ("cgroup", "cgroup2"):
            out.append((f[2], f[1], set(f[3].split(","))))
    return out


def v1_mount(controller: str, root: Path = CGROUP_ROOT, proc: Path = PROC) -> Path | None:
    """Where the v1 hierarchy of ``controller`` is mounted (None if it is not)."""
    for fstype, mnt, opts in _mounts(proc):
        if fstype == "cgroup" and controller in opts:
            return Path(mnt)
    p = root / controller  # no /proc/self/mounts (tests): the conventional place
    return p if (p / "cgroup.procs").exists() else None


def v2_mount(root: Path = CGROUP_ROOT, proc: Path = PROC) -> Path | None:
    for fstype, mnt, _ in _mounts(proc):
        if fstype == "cgroup2":
            return Path(mnt)
    for p in (root, root / "unified"):
        if (p / "cgroup.controllers").exists():
            return p
    return None


def _ancestors(mount: Path, rel: str) -> list[Path]:
    """The group and its ancestors up to the mount root, innermost first."""
    parts = [p for p in rel.strip("/").split("/") if p]
    return [mount.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]


def _read(p: Path) -> str:
    return p.read_text().strip()


def _v1_quota(mount: Path, rel: str) -> tuple[float | None, str | None, str | None]:
    """(cores, source, None) of the tightest v1 quota, (None, None, None) if unlimited,
    (None, None, why) if unreadable."""
    best: tuple[float, str] | None = None
    for d in _ancestors(mount, rel):
        if not d.exists():
            return None, None, f"cgroup {d} not visible (another mount namespace?)"
        try:
            quota, period = int(_read(d / "cpu.cfs_quota_us")), int(_read(d / "cpu.cfs_period_us"))
        except (OSError, ValueError) as e:
            return None, None, f"cannot read {d}/cpu.cfs_quota_us: {type(e).__name__}"
        if quota > 0 and period > 0 and (best is None or quota / period < best[0]):
            best = (quota / period, f"cgroup v1 cpu.cfs_quota_us={quota}/{period} at {d}")
    return (best[0], best[1], None) if best else (None, None, None)


def _v2_quota(mount: Path, rel: str) -> tuple[float | None, str | None, str | None]:
    best: tuple[float, str] | None = None
    for d in _ancestors(mount, rel):
        if not d.exists():
            return None, None, f"cgroup {d} not visible (another mount namespace?)"
        f = d / "cpu.max"
        if not f.exists():
            continue  # the root has no cpu.max; a group without the cpu controller has no limit
        try:
            quota, period = _read(f).split()
        except (OSError, ValueError) as e:
            return None, None, f"cannot read {f}: {type(e).__name__}"
        if quota != "max" and int(period) > 0 and (best is None or int(quota) / int(period) < best[0]):
            best = (int(quota) / int(period), f"cgroup v2 cpu.max={quota}/{period} at {d}")
    return (best[0], best[1], None) if best else (None, None, None)


def _cpuset(pid: int, cg: dict[str, str], root: Path, proc: Path) -> tuple[int | None, str | None]:
    """(cpus, source) the process may run on: the narrower of its cpuset group and its affinity
    mask (always within the cpuset: a task pinned by Slurm's task/affinity, ``taskset``)."""
    found: list[tuple[int, str]] = []
    if "cpuset" in cg and (m := v1_mount("cpuset", root, proc)):
        for d in _ancestors(m, cg["cpuset"]):
            try:
                text = _read(d / "cpuset.effective_cpus") if (d / "cpuset.effective_cpus").exists() \
                    else _read(d / "cpuset.cpus")
            except OSError:
                continue
            if text:
                found.append((len(parse_cpu_list(text)), f"cpuset {text} at {d}"))
                break
    if not found and "" in cg and (m := v2_mount(root, proc)):
        d = m / cg[""].strip("/")
        try:
            text = _read(d / "cpuset.cpus.effective")
            if text:
                found.append((len(parse_cpu_list(text)), f"cpuset {text} at {d}"))
        except OSError:
            pass
    try:  # the affinity mask (what psutil's cpu_affinity reports), read under ``proc``
        for line in (proc / str(pid) / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                text = line.split(":", 1)[1].strip()
                found.append((len(parse_cpu_list(text)), f"affinity {text}"))
    except OSError:
        pass
    return min(found, key=lambda f: f[0]) if found else (None, None)  # the cpuset on a tie


def throttling(group: str | Path) -> tuple[int, int] | None:
    """(nr_periods, nr_throttled) of a quota group's cpu.stat (v1 and v2 name them alike):
    a group throttled in most periods is at its quota even when the host is busy too and the
    group's average falls short of it. None if unreadable."""
    try:
        stat = dict(line.split()[:2] for line in (Path(group) / "cpu.stat").read_text().splitlines()
                    if len(line.split()) >= 2)
        return int(stat["nr_periods"]), int(stat["nr_throttled"])
    except (OSError, KeyError, ValueError):
        return None


def host_cores() -> int:
    return os.cpu_count() or 1


def cpu_limit(pid: int, *, root: Path = CGROUP_ROOT, proc: Path = PROC,
              host: int | None = None) -> CpuLimit:
    """The CPU limit (in cores) that applies to process ``pid`` (ProcessLookupError if gone)."""
    host = host or host_cores()
    try:
        cg = proc_cgroups(pid, proc)
    except FileNotFoundError as e:
        raise ProcessLookupError(pid) from e
    except OSError as e:
        return CpuLimit(None, f"unknown (cannot read /proc/{pid}/cgroup: {type(e).__name__})",
                        host_cores=host)
    quota = src = why = None
    group = None
    if "cpu" in cg:
        m = v1_mount("cpu", root, proc)
        if m is None:
            why = "cgroup v1 cpu controller listed but not mounted here"
        else:
            quota, src, why = _v1_quota(m, cg["cpu"])
    if quota is None and why is None and "" in cg:
        m = v2_mount(root, proc)
        if m is not None:
            q2, s2, w2 = _v2_quota(m, cg[""])
            if w2 and "cpu" not in cg:
                why = w2
            elif q2 is not None:
                quota, src = q2, s2
    if src:
        group = src.rsplit(" at ", 1)[1]
    cpus, cpus_src = _cpuset(pid, cg, root, proc)
    if why:
        return CpuLimit(None, f"unknown ({why})", cpuset_cores=cpus, host_cores=host)
    cands: list[tuple[float, str]] = [(quota, src or "CFS quota")] if quota is not None else []
    if cpus is not None and cpus < host:
        cands.append((float(cpus), cpus_src or "cpuset"))
    if not cands:
        return CpuLimit(float(host), f"host cores ({host}; no CFS quota or cpuset below them)",
                        cpuset_cores=cpus, host_cores=host)
    cores, source = min(cands, key=lambda c: c[0])
    return CpuLimit(cores, source, quota_cores=quota, cpuset_cores=cpus, host_cores=host, group=group)
